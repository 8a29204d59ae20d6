// Config parsing: defaults, every key, and each way a file is refused.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "decide/config.hpp"
#include "reason.hpp"

using clihost::testing::refused_with;

using namespace clihost;

TEST(Config, EmptyFileGivesDesignDefaults) {
    auto p = parse_config("");
    ASSERT_TRUE(p.ok());
    const Policy& d = p.value();
    EXPECT_EQ(d.caller_users, std::vector<std::string>{"clihost"});
    EXPECT_EQ(d.caller_groups, std::vector<std::string>{"clihost"});
    EXPECT_EQ(d.tenant_group, "clihost-tenants");
    EXPECT_EQ(d.min_uid, 1000u);
    EXPECT_EQ(d.max_uid, 60000u);
    EXPECT_EQ(d.refusal_delay_max, 30u);  // on by default (issue 23)
    EXPECT_EQ(d.bwrap, "/usr/bin/bwrap");
    EXPECT_EQ(d.proc, ProcMode::private_only);
    EXPECT_EQ(d.ro_bind, (std::vector<std::string>{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc",
                                                   "/opt", "/var/lib"}));
    EXPECT_EQ(d.tmpfs, (std::vector<std::string>{"/tmp", "/var/tmp", "/run"}));
    EXPECT_EQ(d.tmpfs_size, 256u << 20);
    EXPECT_FALSE(d.allow_caller_command);
    EXPECT_FALSE(d.nested_sandbox);  // nested user namespaces only when the operator asks
    EXPECT_EQ(d.network, NetworkMode::isolated);  // the host's network only when the operator asks
    EXPECT_EQ(d.extra_env, (std::vector<std::string>{"TERM", "LANG", "LC_ALL", "COLORTERM"}));
    EXPECT_EQ(d.pam_service, "clihost-jail");
    EXPECT_TRUE(d.pam_session);
    EXPECT_EQ(d.shell, "");  // unset: the tenant's login shell
}

TEST(Config, DesignExampleParsesWithInlineComments) {
    const char* text = R"([callers]
users = clihost              # who may invoke it (root always may); comma-separated
groups = clihost
[tenants]
group = clihost-tenants      # the target must be a member
min_uid = 1000
max_uid = 60000
[jail]
bwrap = /usr/bin/bwrap       # absolute, root-owned, not writable by others
proc = private               # private | private-or-hidepid | inherit
ro_bind = /usr /bin /sbin /lib /lib32 /lib64 /etc /opt /var/lib   # bound only if present
tmpfs = /tmp /var/tmp /run
allow_caller_command = false
extra_env = TERM LANG LC_ALL COLORTERM   # passed through from the caller if set and well-formed
tmpfs_size = 256M            # size of each tmpfs in the jail
[pam]
service = clihost-jail
session = true
)";
    auto p = parse_config(text);
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p.value().ro_bind.size(), 9u);
}

TEST(Config, EveryKeyIsApplied) {
    auto p = parse_config(
        "[callers]\nusers = proxy, web\ngroups =\n[tenants]\ngroup = t\nmin_uid = 5000\nmax_uid = 6000\nrefusal_delay_max = 7\n"
        "[jail]\nbwrap = /opt/bw/bwrap\nproc = private-or-hidepid\nro_bind = /usr\ntmpfs = /tmp\n"
        "tmpfs_size = 1G\nallow_caller_command = true\nnested_sandbox = true\nnetwork = host\nextra_env = TERM\n[pam]\n"
        "service = other\nsession = false\n");
    ASSERT_TRUE(p.ok()) << p.error().message;
    const Policy& v = p.value();
    EXPECT_EQ(v.caller_users, (std::vector<std::string>{"proxy", "web"}));
    EXPECT_TRUE(v.caller_groups.empty());
    EXPECT_EQ(v.tenant_group, "t");
    EXPECT_EQ(v.min_uid, 5000u);
    EXPECT_EQ(v.max_uid, 6000u);
    EXPECT_EQ(v.refusal_delay_max, 7u);
    EXPECT_EQ(v.bwrap, "/opt/bw/bwrap");
    EXPECT_EQ(v.proc, ProcMode::private_or_hidepid);
    EXPECT_EQ(v.ro_bind, std::vector<std::string>{"/usr"});
    EXPECT_EQ(v.tmpfs_size, 1u << 30);
    EXPECT_TRUE(v.allow_caller_command);
    EXPECT_TRUE(v.nested_sandbox);
    EXPECT_EQ(v.network, NetworkMode::host);
    EXPECT_EQ(v.pam_service, "other");
    EXPECT_FALSE(v.pam_session);
    EXPECT_EQ(parse_config("[jail]\nproc = inherit\n").value().proc, ProcMode::inherit);
    EXPECT_FALSE(parse_config("[jail]\nnested_sandbox = false\n").value().nested_sandbox);
    EXPECT_EQ(parse_config("[jail]\nnetwork = isolated\n").value().network, NetworkMode::isolated);
}

// A supervisor's starter compares the policy its front read with the file
// as it is then (session.cpp:supervisor_start, by the file's digest): the same text is the same
// policy, and one key changed, in any section, is another.
TEST(Config, APolicyEqualsOnlyTheSameSettings) {
    const std::string base = "[tenants]\ngroup = t\n[jail]\ntmpfs_size = 64M\n[limits]\ntasks_max = 100\n";
    EXPECT_TRUE(parse_config(base).value() == parse_config(base).value());
    for (const char* changed : {"[tenants]\ngroup = u\n[jail]\ntmpfs_size = 64M\n[limits]\ntasks_max = 100\n",
                                "[tenants]\ngroup = t\n[jail]\ntmpfs_size = 32M\n[limits]\ntasks_max = 100\n",
                                "[tenants]\ngroup = t\n[jail]\ntmpfs_size = 64M\n[limits]\ntasks_max = 101\n",
                                "[tenants]\ngroup = t\n[jail]\ntmpfs_size = 64M\nsetenv = A=b\n[limits]\ntasks_max = 100\n"})
        EXPECT_FALSE(parse_config(base).value() == parse_config(changed).value()) << changed;
}

struct BadConfig {
    const char* name;
    const char* text;
    const char* reason;  // the exact message: the row fails if another check refuses the text
};

class ConfigRefused : public ::testing::TestWithParam<BadConfig> {};

TEST_P(ConfigRefused, IsAnErrorWithExitCode3AndItsReason) {
    EXPECT_TRUE(clihost::testing::refused_exactly(parse_config(GetParam().text), Exit::host, GetParam().reason));
}

INSTANTIATE_TEST_SUITE_P(
    Table, ConfigRefused,
    ::testing::Values(
        BadConfig{"UnknownKey", "[jail]\nbwrapp = /usr/bin/bwrap\n", "config line 2: unknown key 'bwrapp' in [jail]"},
        BadConfig{"UnknownSection", "[jails]\n", "config line 1: unknown section [jails]"},
        BadConfig{"KeyOutsideSection", "bwrap = /usr/bin/bwrap\n", "config line 1: key outside a section"},
        BadConfig{"NoEquals", "[jail]\nbwrap\n", "config line 2: expected key = value"},
        BadConfig{"BadHeader", "[jail\n", "config line 1: malformed section header"},
        BadConfig{"DuplicateKey", "[jail]\nproc = private\nproc = inherit\n", "config line 3: duplicate key 'proc'"},
        BadConfig{"DuplicateSection", "[jail]\n[jail]\n", "config line 2: duplicate section"},
        BadConfig{"BadProc", "[jail]\nproc = maybe\n", "config line 2: proc must be private, private-or-hidepid or inherit"},
        BadConfig{"RelativeBwrap", "[jail]\nbwrap = bwrap\n", "config line 2: bwrap must be a clean absolute path"},
        BadConfig{"DotDotBwrap", "[jail]\nbwrap = /usr/../tmp/bwrap\n", "config line 2: bwrap must be a clean absolute path"},
        BadConfig{"RootBind", "[jail]\nro_bind = /\n", "config line 2: '/' may not be bound or hidden"},
        BadConfig{"RelativeBind", "[jail]\nro_bind = usr\n", "config line 2: not a clean absolute path 'usr'"},
        BadConfig{"ProcBind", "[jail]\nro_bind = /usr /proc\n", "config line 2: '/proc' belongs to the jail itself"},
        BadConfig{"UnderProcBind", "[jail]\nro_bind = /proc/sys\n", "config line 2: '/proc/sys' belongs to the jail itself"},
        BadConfig{"DevBind", "[jail]\nro_bind = /dev\n", "config line 2: '/dev' belongs to the jail itself"},
        BadConfig{"ProcTmpfs", "[jail]\ntmpfs = /proc\n", "config line 2: '/proc' belongs to the jail itself"},
        BadConfig{"BadBool", "[jail]\nallow_caller_command = yes\n", "config line 2: expected true or false"},
        BadConfig{"MinUidZero", "[tenants]\nmin_uid = 0\n", "config: min_uid must be at least 1"},
        BadConfig{"MinAboveMax", "[tenants]\nmin_uid = 7000\nmax_uid = 6000\n", "config: min_uid is above max_uid"},
        BadConfig{"NegativeUid", "[tenants]\nmin_uid = -1\n", "config line 2: expected a uid number"},
        BadConfig{"UidSentinel", "[tenants]\nmax_uid = 4294967295\n", "config line 2: expected a uid number"},
        BadConfig{"UidJunk", "[tenants]\nmax_uid = 12ab\n", "config line 2: expected a uid number"},
        BadConfig{"RefusalDelayTooLong", "[tenants]\nrefusal_delay_max = 301\n",
                  "config line 2: refusal_delay_max must be a number of seconds from 0 to 300"},
        BadConfig{"RefusalDelayJunk", "[tenants]\nrefusal_delay_max = 1s\n",
                  "config line 2: refusal_delay_max must be a number of seconds from 0 to 300"},
        BadConfig{"LdPreloadPassThrough", "[jail]\nextra_env = LD_PRELOAD\n", "config line 2: variable 'LD_PRELOAD' may not be passed through"},
        BadConfig{"TtydPasswordPassThrough", "[jail]\nextra_env = TERM TTYD_PASSWORD\n", "config line 2: variable 'TTYD_PASSWORD' may not be passed through"},
        BadConfig{"PasswordSecretPassThrough", "[jail]\nextra_env = PASSWORD_SECRET_KEY\n", "config line 2: variable 'PASSWORD_SECRET_KEY' may not be passed through"},
        BadConfig{"PathPassThrough", "[jail]\nextra_env = PATH\n", "config line 2: variable 'PATH' may not be passed through"},
        BadConfig{"SandboxPassThrough", "[jail]\nextra_env = TTYD_SANDBOX\n", "config line 2: variable 'TTYD_SANDBOX' may not be passed through"},
        BadConfig{"BadEnvName", "[jail]\nextra_env = 1TERM\n", "config line 2: invalid variable name '1TERM'"},
        BadConfig{"BadUserName", "[callers]\nusers = -rf\n", "config line 2: invalid name '-rf'"},
        BadConfig{"ServiceWithSlash", "[pam]\nservice = ../shadow\n", "config line 2: invalid PAM service name"},
        BadConfig{"NestedSandboxNotABool", "[jail]\nnested_sandbox = on\n", "config line 2: expected true or false"},
        BadConfig{"NestedSandboxEmpty", "[jail]\nnested_sandbox =\n", "config line 2: expected true or false"},
        BadConfig{"NestedSandboxDuplicate", "[jail]\nnested_sandbox = false\nnested_sandbox = true\n", "config line 3: duplicate key 'nested_sandbox'"},
        BadConfig{"NetworkUnknown", "[jail]\nnetwork = none\n", "config line 2: network must be isolated or host"},
        BadConfig{"NetworkEmpty", "[jail]\nnetwork =\n", "config line 2: network must be isolated or host"},
        BadConfig{"NetworkCase", "[jail]\nnetwork = Host\n", "config line 2: network must be isolated or host"},
        BadConfig{"NetworkOutsideJail", "[pam]\nnetwork = host\n", "config line 2: unknown key 'network' in [pam]"},
        BadConfig{"NestedSandboxOutsideJail", "[pam]\nnested_sandbox = true\n", "config line 2: unknown key 'nested_sandbox' in [pam]"},
        // tmpfs 0 means "no limit": never accepted, in any spelling.
        BadConfig{"TmpfsSizeZero", "[jail]\ntmpfs_size = 0\n", "config line 2: tmpfs_size must be a byte count like 256M, 1G or 65536, between 64K and 1024G"},
        BadConfig{"TmpfsSizeZeroMegabytes", "[jail]\ntmpfs_size = 0M\n", "config line 2: tmpfs_size must be a byte count like 256M, 1G or 65536, between 64K and 1024G"},
        BadConfig{"TmpfsSizeEmpty", "[jail]\ntmpfs_size =\n", "config line 2: tmpfs_size must be a byte count like 256M, 1G or 65536, between 64K and 1024G"},
        BadConfig{"TmpfsSizeNegative", "[jail]\ntmpfs_size = -1\n", "config line 2: tmpfs_size must be a byte count like 256M, 1G or 65536, between 64K and 1024G"},
        BadConfig{"TmpfsSizePlus", "[jail]\ntmpfs_size = +256M\n", "config line 2: tmpfs_size must be a byte count like 256M, 1G or 65536, between 64K and 1024G"},
        BadConfig{"TmpfsSizeLowercaseSuffix", "[jail]\ntmpfs_size = 256m\n", "config line 2: tmpfs_size must be a byte count like 256M, 1G or 65536, between 64K and 1024G"},
        BadConfig{"TmpfsSizeTwoSuffixes", "[jail]\ntmpfs_size = 256MM\n", "config line 2: tmpfs_size must be a byte count like 256M, 1G or 65536, between 64K and 1024G"},
        BadConfig{"TmpfsSizeUnitWord", "[jail]\ntmpfs_size = 256MB\n", "config line 2: tmpfs_size must be a byte count like 256M, 1G or 65536, between 64K and 1024G"},
        BadConfig{"TmpfsSizeSpaceInside", "[jail]\ntmpfs_size = 256 M\n", "config line 2: tmpfs_size must be a byte count like 256M, 1G or 65536, between 64K and 1024G"},
        BadConfig{"TmpfsSizeHex", "[jail]\ntmpfs_size = 0x100000\n", "config line 2: tmpfs_size must be a byte count like 256M, 1G or 65536, between 64K and 1024G"},
        BadConfig{"TmpfsSizeLeadingZero", "[jail]\ntmpfs_size = 0100000\n", "config line 2: tmpfs_size must be a byte count like 256M, 1G or 65536, between 64K and 1024G"},
        BadConfig{"TmpfsSizeFraction", "[jail]\ntmpfs_size = 1.5G\n", "config line 2: tmpfs_size must be a byte count like 256M, 1G or 65536, between 64K and 1024G"},
        BadConfig{"TmpfsSizeBelowMinimum", "[jail]\ntmpfs_size = 65535\n", "config line 2: tmpfs_size must be a byte count like 256M, 1G or 65536, between 64K and 1024G"},
        BadConfig{"TmpfsSizeAboveMaximum", "[jail]\ntmpfs_size = 1025G\n", "config line 2: tmpfs_size must be a byte count like 256M, 1G or 65536, between 64K and 1024G"},
        // 2^64 / 2^30 = 2^34 = 17179869184: wraps to 0 if multiplied unchecked.
        BadConfig{"TmpfsSizeWrapsToZero", "[jail]\ntmpfs_size = 17179869184G\n", "config line 2: tmpfs_size must be a byte count like 256M, 1G or 65536, between 64K and 1024G"},
        BadConfig{"TmpfsSizeUint64Overflow", "[jail]\ntmpfs_size = 18446744073709551616\n", "config line 2: tmpfs_size must be a byte count like 256M, 1G or 65536, between 64K and 1024G"},
        BadConfig{"TmpfsSizeTooManyDigits", "[jail]\ntmpfs_size = 000000000000000000000001G\n", "config line 2: tmpfs_size must be a byte count like 256M, 1G or 65536, between 64K and 1024G"},
        BadConfig{"TmpfsSizeDuplicate", "[jail]\ntmpfs_size = 1G\ntmpfs_size = 2G\n", "config line 3: duplicate key 'tmpfs_size'"}),
    [](const auto& tp) { return std::string(tp.param.name); });

TEST(Config, ShellIsApplied) {
    auto p = parse_config("[jail]\nshell = /usr/bin/bash\n");
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p.value().shell, "/usr/bin/bash");
    // Under a ro_bind given after it: the check runs on the whole file.
    auto q = parse_config("[jail]\nshell = /opt/sh/zsh\nro_bind = /usr /opt\n");
    ASSERT_TRUE(q.ok()) << q.error().message;
}

struct BadShell {
    const char* name;
    const char* text;
    const char* reason;
};
class ShellRefused : public ::testing::TestWithParam<BadShell> {};

TEST_P(ShellRefused, SaysWhy) {
    auto p = parse_config(GetParam().text);
    ASSERT_FALSE(p.ok()) << GetParam().name;
    EXPECT_EQ(p.error().code, Exit::host);
    EXPECT_EQ(p.error().message, GetParam().reason);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ShellRefused,
    ::testing::Values(
        BadShell{"Relative", "[jail]\nshell = bash\n", "config line 2: shell must be a clean absolute path"},
        BadShell{"DotDot", "[jail]\nshell = /usr/../tmp/sh\n", "config line 2: shell must be a clean absolute path"},
        BadShell{"Root", "[jail]\nshell = /\n", "config line 2: shell must be a clean absolute path"},
        BadShell{"Nologin", "[jail]\nshell = /usr/sbin/nologin\n",
                 "config line 2: shell may not be a nologin/false shell"},
        BadShell{"False", "[jail]\nshell = /bin/false\n", "config line 2: shell may not be a nologin/false shell"},
        BadShell{"NotBound", "[jail]\nshell = /home/alice/sh\n",
                 "config: shell /home/alice/sh is not under a ro_bind directory"},
        BadShell{"OnlyPrefixOfABind", "[jail]\nshell = /usrx/bash\n",
                 "config: shell /usrx/bash is not under a ro_bind directory"},
        BadShell{"HiddenByTmpfs", "[jail]\nshell = /usr/local/bin/sh\ntmpfs = /tmp /usr/local\n",
                 "config: shell /usr/local/bin/sh is hidden by a tmpfs"}),
    [](const auto& tp) { return std::string(tp.param.name); });

TEST(Config, RefusingShells) {
    for (const char* s : {"/usr/sbin/nologin", "/sbin/nologin", "/bin/false", "/usr/bin/false", "nologin"})
        EXPECT_TRUE(is_refusing_shell(s)) << s;
    for (const char* s : {"/bin/bash", "/usr/bin/zsh", "", "/bin/falsehood", "/usr/sbin/nologin2"})
        EXPECT_FALSE(is_refusing_shell(s)) << s;
}

TEST(Config, TmpfsSizeForms) {
    EXPECT_EQ(parse_tmpfs_size("256M").value(), 256u << 20);
    EXPECT_EQ(parse_tmpfs_size("1G").value(), 1u << 30);
    EXPECT_EQ(parse_tmpfs_size("64K").value(), 64u << 10);
    EXPECT_EQ(parse_tmpfs_size("65536").value(), 65536u);
    EXPECT_EQ(parse_tmpfs_size("1024G").value(), std::uint64_t{1} << 40);
    EXPECT_EQ(parse_tmpfs_size("1099511627776").value(), std::uint64_t{1} << 40);
    EXPECT_FALSE(parse_tmpfs_size("1099511627777").ok());
    EXPECT_FALSE(parse_tmpfs_size("G").ok());
    EXPECT_FALSE(parse_tmpfs_size("").ok());
    const auto e = parse_tmpfs_size("0");
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.error().code, Exit::host);
    EXPECT_NE(e.error().message.find("tmpfs_size must be a byte count"), std::string::npos) << e.error().message;
    // The message of the file parser names the line.
    const auto f = parse_config("[jail]\n\ntmpfs_size = 0\n");
    ASSERT_FALSE(f.ok());
    EXPECT_EQ(f.error().message.rfind("config line 3: tmpfs_size must be a byte count", 0), 0u) << f.error().message;
}

TEST(Config, PathsThatOnlyStartLikeProcAreFine) {
    auto p = parse_config("[jail]\nro_bind = /usr /processes /devices\n");
    ASSERT_TRUE(p.ok()) << p.error().message;
}

TEST(Config, NulByteInsideALineIsRefused) {
    const std::string text("[jail]\nproc = private\0inherit\n", 31);
    EXPECT_TRUE(refused_with(parse_config(text), Exit::host, "config line 2: NUL byte"));
    // Behind a comment the NUL would otherwise vanish and the line be accepted.
    const std::string hidden("[jail]\nproc = private # \0\n", 27);
    EXPECT_TRUE(refused_with(parse_config(hidden), Exit::host, "config line 2: NUL byte"));
}

TEST(Config, OversizedFileIsRefused) {
    // A comment of 70000 bytes: accepted, were it not for the size.
    EXPECT_TRUE(refused_with(parse_config(std::string(70000, '#')), Exit::host, "config file too large"));
    EXPECT_TRUE(parse_config(std::string(kMaxConfigBytes, '#')).ok());
}

TEST(Config, CleanAbsolutePath) {
    EXPECT_TRUE(is_clean_absolute_path("/usr/bin/bwrap"));
    EXPECT_TRUE(is_clean_absolute_path("/"));
    EXPECT_FALSE(is_clean_absolute_path("usr"));
    EXPECT_FALSE(is_clean_absolute_path("/usr/"));
    EXPECT_FALSE(is_clean_absolute_path("/usr//bin"));
    EXPECT_FALSE(is_clean_absolute_path("/usr/./bin"));
    EXPECT_FALSE(is_clean_absolute_path("/usr/../etc"));
    EXPECT_FALSE(is_clean_absolute_path("/usr/\nbin"));
    EXPECT_FALSE(is_clean_absolute_path(""));
}

// --- [jail] setenv ----------------------------------------------------------------

TEST(ConfigSetenv, ParsesNamesAndValuesAsWritten) {
    auto p = parse_config(
        "[jail]\nsetenv = NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt NPM_CONFIG_PREFIX=$HOME/.npm-global "
        "PATH=$HOME/.local/bin:/usr/local/bin:/usr/bin:/bin:$HOME/.npm-global/bin EMPTY= X=a=b\n");
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p.value().setenv,
              (std::vector<SetEnv>{{"NODE_EXTRA_CA_CERTS", "/etc/ssl/certs/ca-certificates.crt"},
                                   {"NPM_CONFIG_PREFIX", "$HOME/.npm-global"},
                                   {"PATH", "$HOME/.local/bin:/usr/local/bin:/usr/bin:/bin:$HOME/.npm-global/bin"},
                                   {"EMPTY", ""},
                                   {"X", "a=b"}}));
    EXPECT_TRUE(parse_config("").value().setenv.empty());  // none by default
}

TEST(ConfigSetenv, HomeIsExpandedWherePlaced) {
    EXPECT_EQ(expand_home("$HOME/.npm-global", "/home/a"), "/home/a/.npm-global");
    EXPECT_EQ(expand_home("$HOME:$HOME/x", "/home/a"), "/home/a:/home/a/x");
    EXPECT_EQ(expand_home("/etc/x", "/home/a"), "/etc/x");
}

struct BadSetenv {
    const char* name;
    const char* value;
    const char* reason;
};
class SetenvRefused : public ::testing::TestWithParam<BadSetenv> {};

TEST_P(SetenvRefused, IsAnErrorWithItsReason) {
    const std::string text = std::string("[jail]\nsetenv = ") + GetParam().value + "\n";
    EXPECT_TRUE(clihost::testing::refused_exactly(parse_config(text), Exit::host,
                                                  std::string("config line 2: ") + GetParam().reason));
}

INSTANTIATE_TEST_SUITE_P(
    Table, SetenvRefused,
    ::testing::Values(
        BadSetenv{"Sandbox", "TTYD_SANDBOX=false", "setenv may not set TTYD_SANDBOX: the helper forces it to true"},
        BadSetenv{"Home", "HOME=/tmp", "setenv may not set HOME: the helper sets it from the tenant's account"},
        BadSetenv{"User", "USER=root", "setenv may not set USER: the helper sets it from the tenant's account"},
        BadSetenv{"Logname", "LOGNAME=root", "setenv may not set LOGNAME: the helper sets it from the tenant's account"},
        BadSetenv{"Shell", "SHELL=/bin/sh", "setenv may not set SHELL: the helper sets it from the tenant's account"},
        BadSetenv{"LdPreload", "LD_PRELOAD=/x.so", "setenv may not set LD_PRELOAD: it changes how programs load code or find tmux, or is the proxy's secret"},
        BadSetenv{"Tmux", "TMUX_TMPDIR=/tmp", "setenv may not set TMUX_TMPDIR: it changes how programs load code or find tmux, or is the proxy's secret"},
        BadSetenv{"Password", "TTYD_PASSWORD=x", "setenv may not set TTYD_PASSWORD: it changes how programs load code or find tmux, or is the proxy's secret"},
        BadSetenv{"NoEquals", "NODE_EXTRA_CA_CERTS", "setenv: 'NODE_EXTRA_CA_CERTS' is not NAME=VALUE"},
        BadSetenv{"BadName", "1X=a", "setenv: invalid variable name '1X'"},
        BadSetenv{"EmptyName", "=a", "setenv: invalid variable name ''"},
        BadSetenv{"Twice", "A=1 A=2", "setenv: A is set twice"},
        BadSetenv{"Quote", "A=\"x\"", "setenv: the value of A has a character that is not allowed (printable ASCII only; no quotes, backslashes or blanks)"},
        BadSetenv{"Backslash", "A=x\\y", "setenv: the value of A has a character that is not allowed (printable ASCII only; no quotes, backslashes or blanks)"},
        BadSetenv{"Control", "A=x\x01y\x7f", "setenv: the value of A has a character that is not allowed (printable ASCII only; no quotes, backslashes or blanks)"},
        BadSetenv{"NonAscii", "A=\xc3\xa9", "setenv: the value of A has a character that is not allowed (printable ASCII only; no quotes, backslashes or blanks)"},
        BadSetenv{"OtherVariable", "A=$USER/x", "setenv: the value of A names a variable other than $HOME"},
        BadSetenv{"HomePrefix", "A=$HOMEDIR", "setenv: the value of A names a variable other than $HOME"},
        BadSetenv{"Braces", "A=${HOME}", "setenv: the value of A names a variable other than $HOME"},
        BadSetenv{"PathWithoutDefault", "PATH=$HOME/bin:/usr/bin",
                  "setenv: PATH must be clean absolute directories separated by ':' that keep /usr/local/bin:/usr/bin:/bin together (entries may come before and after)"},
        BadSetenv{"PathEmptyEntry", "PATH=:/usr/local/bin:/usr/bin:/bin",
                  "setenv: PATH must be clean absolute directories separated by ':' that keep /usr/local/bin:/usr/bin:/bin together (entries may come before and after)"},
        BadSetenv{"PathRelativeEntry", "PATH=bin:/usr/local/bin:/usr/bin:/bin",
                  "setenv: PATH must be clean absolute directories separated by ':' that keep /usr/local/bin:/usr/bin:/bin together (entries may come before and after)"},
        BadSetenv{"PathDotDot", "PATH=$HOME/../x:/usr/local/bin:/usr/bin:/bin",
                  "setenv: PATH must be clean absolute directories separated by ':' that keep /usr/local/bin:/usr/bin:/bin together (entries may come before and after)"},
        BadSetenv{"PathReordered", "PATH=/usr/bin:/usr/local/bin:/bin",
                  "setenv: PATH must be clean absolute directories separated by ':' that keep /usr/local/bin:/usr/bin:/bin together (entries may come before and after)"}),
    [](const auto& tp) { return std::string(tp.param.name); });

TEST(ConfigSetenv, ValueAndCountAreBounded) {
    const std::string big(kMaxSetenvValue + 1, 'x');
    EXPECT_TRUE(clihost::testing::refused_exactly(parse_config("[jail]\nsetenv = A=" + big + "\n"), Exit::host,
                                                  "config line 2: setenv: the value of A is longer than 1024 bytes"));
    EXPECT_TRUE(parse_config("[jail]\nsetenv = A=" + std::string(kMaxSetenvValue, 'x') + "\n").ok());
    std::string many = "[jail]\nsetenv =";
    for (std::size_t i = 0; i <= kMaxSetenvItems; ++i) many += " V" + std::to_string(i) + "=1";
    EXPECT_TRUE(clihost::testing::refused_exactly(parse_config(many + "\n"), Exit::host,
                                                  "config line 2: setenv: more than 64 variables"));
}

TEST(ConfigSetenv, AVariableBothFixedAndPassedThroughIsRefused) {
    EXPECT_TRUE(clihost::testing::refused_exactly(parse_config("[jail]\nsetenv = LANG=C.UTF-8\n"), Exit::host,
                                                  "config: LANG is in both extra_env and setenv (remove it from one)"));
    EXPECT_TRUE(parse_config("[jail]\nsetenv = LANG=C.UTF-8\nextra_env = TERM\n").ok());
}

TEST(ConfigSetenv, TheExampleConfigsCommentedAgentLineIsValid) {
    // install/jail.conf offers its agents' setenv line commented out: turned
    // on as it stands, it must parse (an operator copies it).
    std::ifstream in(std::string(CLIHOST_JAIL_SOURCE_DIR) + "/install/jail.conf");
    std::stringstream text;
    text << in.rdbuf();
    std::string conf = text.str();
    const std::string commented = "\n# setenv = ";
    const auto at = conf.find(commented);
    ASSERT_NE(at, std::string::npos);
    conf.erase(at + 1, 2);
    auto p = parse_config(conf);
    ASSERT_TRUE(p.ok()) << p.error().message;
    ASSERT_EQ(p.value().setenv.size(), 3u);
    EXPECT_EQ(p.value().setenv[1], (SetEnv{"NPM_CONFIG_PREFIX", "$HOME/.npm-global"}));
}
