// Routes around the jail: each evaluation over gathered facts, as tables.
#include <gtest/gtest.h>

#include "verbs/check.hpp"

#include <map>

#include "host/routes.hpp"

using namespace clihost;
using namespace clihost::routes;

namespace {

SshdFacts sshd_with(std::vector<std::string> lines) {
    SshdFacts f;
    f.installed = true;
    f.queried = true;
    f.config = std::move(lines);
    return f;
}

const std::vector<std::string> kGroups{"alice", "clihost-tenants"};

}  // namespace

TEST(Routes, SshdPatternMatch) {
    EXPECT_TRUE(sshd_pattern_match("clihost-tenants", "clihost-tenants"));
    EXPECT_TRUE(sshd_pattern_match("clihost-*", "clihost-tenants"));
    EXPECT_TRUE(sshd_pattern_match("*", "x"));
    EXPECT_TRUE(sshd_pattern_match("al?ce", "alice"));
    EXPECT_TRUE(sshd_pattern_match("*-ten*s", "clihost-tenants"));
    EXPECT_FALSE(sshd_pattern_match("clihost", "clihost-tenants"));
    EXPECT_FALSE(sshd_pattern_match("clihost-tenants", "clihost"));
    EXPECT_FALSE(sshd_pattern_match("al?ce", "alce"));
    EXPECT_FALSE(sshd_pattern_match("", "a"));
}

struct SshdCase {
    const char* name;
    std::vector<std::string> config;
    bool open;
    const char* detail;
};
class SshdTable : public ::testing::TestWithParam<SshdCase> {};

TEST_P(SshdTable, Evaluates) {
    const auto f = evaluate_sshd(sshd_with(GetParam().config), "alice", kGroups, "clihost-tenants");
    EXPECT_EQ(f.route, "sshd");
    EXPECT_EQ(f.open, GetParam().open);
    EXPECT_EQ(f.detail.substr(0, std::string(GetParam().detail).size()), GetParam().detail) << f.detail;
    if (f.open) {
        EXPECT_EQ(f.fix, "install /etc/ssh/sshd_config.d/clihost-jail.conf with `DenyGroups clihost-tenants` and "
                         "reload sshd");
    }
}

INSTANTIATE_TEST_SUITE_P(
    Table, SshdTable,
    ::testing::Values(
        SshdCase{"DefaultConfigLetsEveryoneIn", {"port 22", "usepam yes"}, true, "sshd lets alice log in"},
        SshdCase{"ShippedDropIn", {"denygroups clihost-tenants"}, false, "refused by DenyGroups clihost-tenants"},
        SshdCase{"DenyGroupsWildcard", {"denygroups other", "denygroups clihost-*"}, false,
                 "refused by DenyGroups clihost-*"},
        SshdCase{"DenyGroupsOfAnotherGroup", {"denygroups staff"}, true, "sshd lets alice log in"},
        SshdCase{"DenyUsersByName", {"denyusers alice"}, false, "refused by DenyUsers alice"},
        SshdCase{"DenyUsersAnyHost", {"denyusers alice@*"}, false, "refused by DenyUsers alice@*"},
        SshdCase{"DenyUsersFromOneHostOnly", {"denyusers alice@10.0.0.1"}, true, "sshd lets alice log in"},
        SshdCase{"AllowUsersWithoutHer", {"allowusers admin"}, false, "not in AllowUsers"},
        SshdCase{"AllowUsersWithHerFromOneHost", {"allowusers admin", "allowusers alice@10.0.0.1"}, true,
                 "sshd lets alice log in"},
        SshdCase{"AllowGroupsWithoutHers", {"allowgroups sshusers"}, false, "in no group of AllowGroups"},
        SshdCase{"AllowGroupsWithHers", {"allowgroups sshusers clihost-tenants"}, true, "sshd lets alice log in"},
        // sshd -T prints one entry per line; a value with blanks is still one word list entry each.
        SshdCase{"AllowGroupsMatchingHers", {"allowgroups sshusers", "allowgroups clihost-tenants"}, true,
                 "sshd lets alice log in"}),
    [](const auto& tp) { return std::string(tp.param.name); });

TEST(Routes, SshdAbsentIsClosedAndUnknownIsOpen) {
    EXPECT_FALSE(evaluate_sshd(SshdFacts{}, "alice", kGroups, "t").open);
    SshdFacts failed;
    failed.installed = true;
    failed.error = "sshd: no hostkeys available -- exiting.";
    const auto f = evaluate_sshd(failed, "alice", kGroups, "t");
    EXPECT_TRUE(f.open);
    EXPECT_EQ(f.detail,
              "sshd is installed but its policy for alice is unknown: `sshd -T` failed (sshd: no hostkeys available "
              "-- exiting.)");
}

TEST(Routes, LoginShell) {
    Policy with_shell;
    with_shell.shell = "/usr/bin/bash";
    auto f = evaluate_login_shell("alice", "/usr/sbin/nologin", with_shell);
    EXPECT_FALSE(f.open);
    EXPECT_EQ(f.detail, "/usr/sbin/nologin; tmux starts /usr/bin/bash");
    EXPECT_FALSE(evaluate_login_shell("alice", "/bin/false", Policy{}).open);
    f = evaluate_login_shell("alice", "/bin/bash", with_shell);
    EXPECT_TRUE(f.open);
    EXPECT_EQ(f.fix, "usermod -s /usr/sbin/nologin alice");
    f = evaluate_login_shell("alice", "/bin/bash", Policy{});
    EXPECT_TRUE(f.open);
    EXPECT_EQ(f.fix, "set [jail] shell (e.g. /usr/bin/bash) in jail.conf, then usermod -s /usr/sbin/nologin alice");
    // An empty passwd field means /bin/sh: a real shell.
    EXPECT_TRUE(evaluate_login_shell("alice", "", with_shell).open);
}

TEST(Routes, ListFileNames) {
    EXPECT_TRUE(list_file_names("root\nalice\n", "alice"));
    EXPECT_TRUE(list_file_names("  alice \r\n", "alice"));
    EXPECT_TRUE(list_file_names("bob\nalice", "alice"));
    EXPECT_FALSE(list_file_names("# alice\nalice2\nmalice\n", "alice"));
    EXPECT_FALSE(list_file_names("", "alice"));
}

struct AllowDenyCase {
    const char* name;
    ListFile allow, deny;
    bool crontab;
    bool cron_open, at_open;
    const char* cron_fix;
};
class AllowDenyTable : public ::testing::TestWithParam<AllowDenyCase> {};

TEST_P(AllowDenyTable, CronAndAt) {
    const auto& c = GetParam();
    const auto cron = evaluate_cron("alice", c.allow, c.deny, c.crontab);
    const auto at = evaluate_at("alice", c.allow, c.deny);
    EXPECT_EQ(cron.open, c.cron_open) << cron.detail;
    EXPECT_EQ(at.open, c.at_open) << at.detail;
    EXPECT_EQ(cron.fix, c.cron_fix);
}

INSTANTIATE_TEST_SUITE_P(
    Table, AllowDenyTable,
    ::testing::Values(
        // Debian: with neither file cron lets everyone in, at only root.
        AllowDenyCase{"NeitherFile", {}, {}, false, true, false, "echo alice >> /etc/cron.deny"},
        AllowDenyCase{"DenyListsHer", {}, {true, true, ""}, false, false, false, ""},
        AllowDenyCase{"DenyWithoutHer", {}, {true, false, ""}, false, true, true, "echo alice >> /etc/cron.deny"},
        AllowDenyCase{"AllowWithoutHerBeatsDeny", {true, false, ""}, {true, false, ""}, false, false, false, ""},
        AllowDenyCase{"AllowListsHerBeatsDeny", {true, true, ""}, {true, true, ""}, false, true, true,
                      "remove alice from /etc/cron.allow"},
        AllowDenyCase{"UnreadableIsUnknown", {}, {false, false, "/etc is writable"}, false, true, true,
                      "make /etc/cron.allow and /etc/cron.deny root-owned and not group/world-writable"},
        AllowDenyCase{"ExistingCrontabRunsAnyway", {}, {true, true, ""}, true, true, false,
                      "crontab -r -u alice, and keep alice out of crontab (/etc/cron.deny)"}),
    [](const auto& tp) { return std::string(tp.param.name); });

TEST(Routes, Linger) {
    EXPECT_FALSE(evaluate_linger("alice", false).open);
    const auto f = evaluate_linger("alice", true);
    EXPECT_TRUE(f.open);
    EXPECT_EQ(f.fix, "loginctl disable-linger alice (or rm /var/lib/systemd/linger/alice where logind does not run)");
}

namespace {
PamScan scan(const std::map<std::string, std::string>& files, const std::string& service = "clihost-jail") {
    return scan_pam_stack(service, [&](const std::string& path, std::string& error) -> std::optional<std::string> {
        auto it = files.find(path);
        if (it == files.end()) {
            error = "missing";
            return std::nullopt;
        }
        return it->second;
    });
}
}  // namespace

TEST(Routes, PamStackScan) {
    const std::string svc = "/etc/pam.d/clihost-jail";
    // The shipped stack's shape: no pam_systemd, and a comment naming it.
    auto s = scan({{svc, "# pam_systemd.so would start user@\nsession required pam_unix.so\n"}});
    EXPECT_FALSE(s.loads_systemd);
    EXPECT_TRUE(s.error.empty());
    s = scan({{svc, "-session optional pam_systemd.so\n"}});
    EXPECT_TRUE(s.loads_systemd);
    EXPECT_EQ(s.where, svc);
    s = scan({{svc, "session [success=ok default=ignore] /lib/security/pam_systemd.so class=x\n"}});
    EXPECT_TRUE(s.loads_systemd);
    // Through @include and session include/substack.
    s = scan({{svc, "@include common-session\n"}, {"/etc/pam.d/common-session", "session optional pam_systemd.so\n"}});
    EXPECT_TRUE(s.loads_systemd);
    EXPECT_EQ(s.where, "/etc/pam.d/common-session");
    s = scan({{svc, "session include cs\n"}, {"/etc/pam.d/cs", "@include deeper\n"},
              {"/etc/pam.d/deeper", "Session optional pam_systemd.so\n"}});
    EXPECT_TRUE(s.loads_systemd);
    s = scan({{svc, "session   substack   cs\n"}, {"/etc/pam.d/cs", "session optional pam_systemd.so\n"}});
    EXPECT_TRUE(s.loads_systemd);
    // Only session lines: an auth include of a file with pam_systemd in
    // another type does not load it as a session module.
    s = scan({{svc, "auth include a\naccount required pam_systemd.so\n"}});
    EXPECT_FALSE(s.loads_systemd);
    // A continued line.
    s = scan({{svc, "session optional \\\n  pam_systemd.so\n"}});
    EXPECT_TRUE(s.loads_systemd);
    // pam_systemd_home is another module.
    s = scan({{svc, "session optional pam_systemd_home.so\n"}});
    EXPECT_FALSE(s.loads_systemd);
    // Unknown beats a guess: a missing include, or a cycle past the depth.
    s = scan({{svc, "@include gone\n"}});
    EXPECT_EQ(s.error, "/etc/pam.d/gone: missing");
    s = scan({{svc, "@include clihost-jail\n"}});
    EXPECT_EQ(s.error, "/etc/pam.d/clihost-jail: includes nested deeper than 4");
}

TEST(Routes, PamFinding) {
    Policy pol;
    PamScan none;
    EXPECT_FALSE(evaluate_pam(pol, none).open);
    PamScan loads{true, "/etc/pam.d/common-session", ""};
    auto f = evaluate_pam(pol, loads);
    EXPECT_TRUE(f.open);
    EXPECT_EQ(f.fix, "remove the pam_systemd.so line from /etc/pam.d/common-session or stop /etc/pam.d/clihost-jail "
                     "including it");
    PamScan unknown{false, "", "/etc/pam.d/x: missing"};
    EXPECT_TRUE(evaluate_pam(pol, unknown).open);
    pol.pam_session = false;
    EXPECT_FALSE(evaluate_pam(pol, loads).open);  // no PAM session, no logind
}

TEST(Routes, Forward) {
    EXPECT_FALSE(evaluate_forward("alice", {"", true, "/home/alice/.forward", ""}).open);
    EXPECT_FALSE(evaluate_forward("alice", {"/usr/sbin/sendmail", false, "/home/alice/.forward", ""}).open);
    // A home root cannot look into (root-squashed NFS) is unknown, not absent.
    EXPECT_TRUE(evaluate_forward("alice", {"/usr/sbin/sendmail", false, "/home/alice/.forward", "EACCES"}).open);
    const auto f = evaluate_forward("alice", {"/usr/sbin/sendmail", true, "/home/alice/.forward", ""});
    EXPECT_TRUE(f.open);
    EXPECT_EQ(f.fix.substr(0, 25), "rm /home/alice/.forward, ");
}

TEST(Routes, EvaluateCoversEveryRouteInOrder) {
    Facts f;
    f.account = Account{"alice", 1001, 1001, "/home/alice", "/usr/sbin/nologin"};
    f.group_names = kGroups;
    f.sshd = sshd_with({"denygroups clihost-tenants"});
    f.cron_deny = {true, true, ""};
    Policy pol;
    pol.shell = "/usr/bin/bash";
    const auto all = evaluate(pol, f);
    std::vector<std::string> names;
    for (const auto& r : all) {
        names.push_back(r.route);
        EXPECT_FALSE(r.open) << r.route << ": " << r.detail;
    }
    EXPECT_EQ(names, (std::vector<std::string>{"sshd", "login shell", "cron", "at", "linger", "pam_systemd",
                                               "forward"}));
}

// Issue 41, item 3: check's last line says what its exit status says.
TEST(CheckVerdict, TheLastLineMatchesTheExitStatus) {
    EXPECT_EQ(check_verdict({}, {}).exit, 0);
    EXPECT_EQ(check_verdict({}, {}).line, "result: a jail can start");
    auto v = check_verdict({}, {"sshd"});
    EXPECT_EQ(v.exit, 3);
    EXPECT_EQ(v.line, "result: refused: a route around the jail is open (sshd)");
    v = check_verdict({"bwrap", "pam"}, {"sshd", "cron"});
    EXPECT_EQ(v.exit, 3);
    EXPECT_EQ(v.line, "result: refused: a jail cannot start (bwrap, pam); routes around the jail are open (sshd, cron)");
    EXPECT_EQ(check_refusal_line({Exit::refused, "tenant root refused: uid 0"}),
              "result: refused: tenant root refused: uid 0");
}

