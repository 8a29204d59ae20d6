// fuzz_plan.cpp: build_plan and shell_quote over inputs made the way the
// helper makes them: a config text derived from the bytes goes through
// parse_config, an account derived from the bytes goes through
// validate_tenant (over the fake account database of the unit tests, with a
// fuzzed home inspection), and only what those accept reaches build_plan,
// with a request, caller env, PAM env and probe result derived from the
// bytes. The argv is read back the way bwrap parses it, and the invariants
// the jail's safety rests on are asserted: a fuzzed value must never become a
// bwrap option, an environment variable of its choosing, or a host /proc.
// The seeds in corpus/fuzz_plan predate this input shape; the fuzzer treats
// them as plain bytes and grows its own corpus from them.
#include <fuzzer/FuzzedDataProvider.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/handed.hpp"
#include "decide/config.hpp"
#include "fake_accounts.hpp"
#include "decide/identity.hpp"
#include "decide/plan.hpp"
#include "priv/seccomp_filter.hpp"

using namespace clihost;

namespace {

void check(bool ok) {
    if (!ok) __builtin_trap();
}

// Strings that matter to the code under test, so the fuzzer need not guess them.
constexpr std::string_view kWords[] = {
    "PATH",      "LD_PRELOAD", "LD_LIBRARY_PATH", "TTYD_SANDBOX", "HOME", "TERM",   "LANG", "LC_ALL",
    "COLORTERM", "GLIBC_TUNABLES", "IFS",       "/proc",        "--",   "--setenv", "=",  "true",
    "/usr",      "/home/alice", "xterm-256color", "C.UTF-8",    "main", "",         "--clearenv",
    "false",     "private",     "private-or-hidepid", "inherit", "/usr/bin/bwrap", "/var/lib", "/tmp",
    "/home",     "/",           "/bin/bash",    "#",            "\n",  "/dev",     "/proc/sys"};

std::string word(FuzzedDataProvider& in) {
    if (in.ConsumeBool()) return std::string(kWords[in.ConsumeIntegralInRange<std::size_t>(0, std::size(kWords) - 1)]);
    return in.ConsumeRandomLengthString(96);
}

std::vector<std::string> words(FuzzedDataProvider& in, std::size_t max) {
    std::vector<std::string> out(in.ConsumeIntegralInRange<std::size_t>(0, max));
    for (auto& w : out) w = word(in);
    return out;
}

std::string joined(const std::vector<std::string>& list) {
    std::string out;
    for (const auto& w : list) out += (out.empty() ? "" : " ") + w;
    return out;
}

// A jail.conf whose [jail] keys come from the bytes (each present or not);
// the tenant group is fixed so that an account can be a member of it.
std::string config_text(FuzzedDataProvider& in) {
    std::string t = "[callers]\nusers = clihost\n[tenants]\ngroup = clihost-tenants\n";
    if (in.ConsumeBool()) t += "min_uid = " + std::to_string(in.ConsumeIntegral<std::uint32_t>()) + "\n";
    if (in.ConsumeBool()) t += "max_uid = " + std::to_string(in.ConsumeIntegral<std::uint32_t>()) + "\n";
    t += "[jail]\n";
    if (in.ConsumeBool()) t += "bwrap = " + word(in) + "\n";
    if (in.ConsumeBool()) t += "proc = " + word(in) + "\n";
    if (in.ConsumeBool()) t += "ro_bind = " + joined(words(in, 6)) + "\n";
    if (in.ConsumeBool()) t += "tmpfs = " + joined(words(in, 6)) + "\n";
    if (in.ConsumeBool()) t += "allow_caller_command = " + word(in) + "\n";
    if (in.ConsumeBool()) t += "extra_env = " + joined(words(in, 6)) + "\n";
    if (in.ConsumeBool()) t += "nested_sandbox = " + word(in) + "\n";
    if (in.ConsumeBool()) t += "tmpfs_size = " + word(in) + "\n";
    if (in.ConsumeBool()) t += "shell = " + word(in) + "\n";
    if (in.ConsumeBool()) t += "network = " + (in.ConsumeBool() ? std::string(in.ConsumeBool() ? "host" : "isolated") : word(in)) + "\n";
    return t;
}

// One account in the tenant group (or not), in the fake passwd/group
// database; its home as lstat would describe it.
struct Host {
    clihost::testing::FakeAccountDb db;
    std::string name;
    HomeInfo home;
};

Host make_host(FuzzedDataProvider& in) {
    Host h;
    const gid_t tenants = in.ConsumeIntegral<gid_t>();
    h.db.add_group("clihost-tenants", tenants);
    h.name = word(in);
    Account a{h.name, in.ConsumeIntegral<uid_t>(), in.ConsumeIntegral<gid_t>(),
              in.ConsumeBool() ? "/home/" + word(in) : word(in), in.ConsumeBool() ? std::string() : word(in)};
    std::vector<gid_t> supplementary;
    if (in.ConsumeBool()) supplementary.push_back(tenants);
    for (std::size_t n = in.ConsumeIntegralInRange<std::size_t>(0, 3); n > 0; --n)
        supplementary.push_back(in.ConsumeIntegral<gid_t>());
    h.home.exists = in.ConsumeIntegralInRange<int>(0, 7) != 0;
    h.home.is_symlink = in.ConsumeIntegralInRange<int>(0, 7) == 0;
    h.home.is_dir = in.ConsumeIntegralInRange<int>(0, 7) != 0;
    h.home.owner = in.ConsumeBool() ? a.uid : in.ConsumeIntegral<uid_t>();
    h.home.mode = static_cast<mode_t>(S_IFDIR | in.ConsumeIntegralInRange<unsigned>(0, 07777));
    h.db.add_user(std::move(a), std::move(supplementary));
    return h;
}

HostProbe make_probe(FuzzedDataProvider& in, const Policy& policy) {
    HostProbe probe;
    probe.user_namespaces = in.ConsumeIntegralInRange<int>(0, 7) != 0;
    probe.fresh_proc = in.ConsumeBool();
    probe.host_proc_hidepid = in.ConsumeBool();
    probe.trial_detail = word(in);
    // inspect_host_paths keeps the ro_bind paths; kind and symlink target are the host's.
    for (const auto& path : policy.ro_bind) {
        HostPath hp{path, in.PickValueInArray({HostPath::Kind::absent, HostPath::Kind::directory,
                                               HostPath::Kind::symlink, HostPath::Kind::other}), {}};
        if (hp.kind == HostPath::Kind::symlink) hp.target = word(in);
        probe.paths.push_back(hp);
    }
    return probe;
}

// bwrap's options as render_bwrap_argv uses them, with their argument counts.
// Deliberately closed: a new option in the argv fails here until it is added
// (and its invariant, if any, written down below).
int arity(std::string_view opt) {
    static const std::map<std::string_view, int> kArity{
        {"--unshare-user", 0}, {"--unshare-pid", 0}, {"--unshare-ipc", 0}, {"--disable-userns", 0}, {"--die-with-parent", 0},
        {"--seccomp", 1},      {"--clearenv", 0},    {"--setenv", 2},      {"--ro-bind", 2},
        {"--symlink", 2},      {"--bind", 2},        {"--dev", 1},         {"--proc", 1},
        {"--tmpfs", 1},        {"--chdir", 1},       {"--unshare-net", 0}, {"--new-session", 0},
        {"--json-status-fd", 1}, {"--remount-ro", 1}, {"--size", 1},
        {"--info-fd", 1},      {"--block-fd", 1},    {"--ro-bind-data", 2}};
    const auto it = kArity.find(opt);
    return it == kArity.end() ? -1 : it->second;
}

struct Op {
    std::string name;
    std::vector<std::string> args;
};

// Reads argv as bwrap does: options with their arguments up to "--", then the command.
void parse_like_bwrap(const std::vector<std::string>& argv, std::vector<Op>& ops, std::vector<std::string>& command) {
    std::size_t i = 1;
    while (true) {
        check(i < argv.size());  // "--" must be there
        if (argv[i] == "--") break;
        const int n = arity(argv[i]);
        check(n >= 0);  // anything else would be an option bwrap does not get from us
        check(i + 1 + static_cast<std::size_t>(n) <= argv.size());
        ops.push_back({argv[i], {argv.begin() + static_cast<std::ptrdiff_t>(i + 1),
                                 argv.begin() + static_cast<std::ptrdiff_t>(i + 1 + n)}});
        i += 1 + static_cast<std::size_t>(n);
    }
    command.assign(argv.begin() + static_cast<std::ptrdiff_t>(i + 1), argv.end());
}

// The jails whose command is the stub (plan.cpp).
bool is_stub_action(JailAction a) { return a == JailAction::attach || a == JailAction::command; }

void check_environment(const std::vector<std::string>& env, const Tenant& tenant) {
    check(!env.empty() && env.back() == "TTYD_SANDBOX=true");
    check(env.front() == "HOME=" + tenant.account.home);
    std::vector<std::string_view> names;
    for (const auto& kv : env) {
        const auto eq = kv.find('=');
        check(eq != std::string::npos);
        const std::string_view name = std::string_view(kv).substr(0, eq);
        check(is_valid_env_name(name));
        check(!name.starts_with("LD_") && !name.starts_with("GLIBC_"));
        if (name == "PATH") check(kv == "PATH=" + std::string(kSafePath));
        if (name == "TTYD_SANDBOX") check(&kv == &env.back());
        names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    check(std::adjacent_find(names.begin(), names.end()) == names.end());  // no name twice
    check(std::binary_search(names.begin(), names.end(), "PATH"));
}

void check_argv(const Plan& plan, const Policy& policy, const Tenant& tenant, const Request& request) {
    const auto& argv = plan.argv;
    check(!argv.empty() && argv[0] == policy.bwrap && plan.bwrap == policy.bwrap);
    std::vector<Op> ops;
    std::vector<std::string> command;
    parse_like_bwrap(argv, ops, command);

    // The command follows "--", exactly as requested (or the default tmux);
    // an attach jail's and a one-off jail's is the stub, which is handed
    // the tmux client or the caller's command, whole, as the stub reads it
    // back (or nothing, when a word could not make the trip).
    const bool stubbed = is_stub_action(request.action);
    const auto expected =
        request.action == JailAction::command ? request.command
                                              : tmux_command(tenant.account, request.action, request.session);
    check(command == (stubbed ? std::vector<std::string>{std::string(kAttachStub)} : expected));
    check(plan.handed_command == (stubbed ? expected : std::vector<std::string>{}));
    const std::string handed = handed_words(plan);
    if (!stubbed) {
        check(handed.empty());
    } else if (!handed.empty()) {
        const HandedWords back = decode_handed(handed);
        check(back.wrong == nullptr && back.argv == plan.handed_command && back.env == plan.handed_env);
        check(handed.size() <= kMaxHandedBytes);
    } else {
        // Only a NUL in a word, an empty first word, or too much for the trip.
        // (The layout: '+' and NUL about each argv word, one NUL, a NUL after each entry.)
        std::size_t bytes = 1;
        bool nul = expected.front().empty();
        for (const auto* list : {&plan.handed_command, &plan.handed_env})
            for (const auto& w : *list) {
                nul = nul || w.find('\0') != std::string::npos;
                bytes += w.size() + (list == &plan.handed_command ? 2 : 1);
            }
        check(nul || bytes > kMaxHandedBytes);
    }

    // The terminal-injection filter is always loaded, from the fd launch puts it on.
    check(std::count_if(ops.begin(), ops.end(), [](const Op& o) {
              return o.name == "--seccomp" && o.args[0] == std::to_string(kSeccompFd);
          }) == 1);

    // Nested user namespaces are closed unless the operator opened them, and
    // always in a client jail (attach, list, kill): the tenant's own
    // sandboxes run where its work runs, never in a tmux client.
    const bool opened = policy.nested_sandbox && !is_client_action(request.action);
    check(plan.nested_sandbox == opened);
    check(std::count_if(ops.begin(), ops.end(), [](const Op& o) { return o.name == "--disable-userns"; }) ==
          (opened ? 0 : 1));

    // --clearenv once, before every --setenv; the --setenv list is plan.env in
    // order, after the tmux server's fork handler for the session jail alone.
    const auto clear = std::find_if(ops.begin(), ops.end(), [](const Op& o) { return o.name == "--clearenv"; });
    check(clear != ops.end());
    std::vector<std::string> set;
    for (auto it = ops.begin(); it != ops.end(); ++it) {
        if (it->name == "--clearenv") check(it == clear);
        if (it->name != "--setenv") continue;
        check(it > clear);
        set.push_back(it->args[0] + "=" + it->args[1]);
    }
    std::vector<std::string> want_set;
    if (request.action == JailAction::serve) want_set.push_back("LD_PRELOAD=" + std::string(kOomPreload));
    want_set.insert(want_set.end(), plan.env.begin(), plan.env.end());
    check(set == want_set);
    const auto last_set = std::find_if(ops.rbegin(), ops.rend(), [](const Op& o) { return o.name == "--setenv"; });
    check(stubbed ? last_set == ops.rend()
                  : last_set != ops.rend() && last_set->args == std::vector<std::string>{"TTYD_SANDBOX", "true"});

    // A private /proc: mounted once, after every host bind, and the host's never bound.
    const auto is_proc = [](const Op& o) { return o.name == "--proc" && o.args[0] == "/proc"; };
    const auto binds_host_proc = [](const Op& o) {
        return (o.name == "--ro-bind" || o.name == "--bind") && o.args[0] == "/proc";
    };
    if (plan.proc_source == "private") {
        check(std::count_if(ops.begin(), ops.end(), is_proc) == 1);
        check(std::none_of(ops.begin(), ops.end(), binds_host_proc));
        const auto proc = std::find_if(ops.begin(), ops.end(), is_proc);
        check(std::none_of(proc, ops.end(), [](const Op& o) {
            return (o.name == "--ro-bind" || o.name == "--symlink") && o.args[1].starts_with("/proc");
        }));
    } else {
        check(plan.proc_source == "host");
        check(std::none_of(ops.begin(), ops.end(), is_proc));
        // Falling back to the host /proc is allowed only when it hides other users' processes.
        check(policy.proc == ProcMode::inherit || (policy.proc == ProcMode::private_or_hidepid));
    }
    // The tenant's home is the only read-write bind, and the working directory.
    for (const auto& o : ops)
        if (o.name == "--bind") check(o.args[0] == tenant.account.home && o.args[1] == tenant.account.home);
    // An isolated jail's descriptors are the planned ones, and the only data
    // it binds is its resolv.conf.
    for (const auto& o : ops) {
        if (o.name == "--info-fd") check(o.args[0] == std::to_string(kInfoFd));
        if (o.name == "--block-fd") check(o.args[0] == std::to_string(kBlockFd));
        if (o.name == "--ro-bind-data")
            check(o.args[0] == std::to_string(kResolvFd) && o.args[1] == "/etc/resolv.conf" &&
                  plan.net == JailNet::isolated);
    }
    check(plan.socket_dir == tenant.account.home + "/.cache/tmux");
    check(plan.socket_dir.size() + std::string_view("/clihost.sock").size() <= 107);
}

// Undoes POSIX-shell quoting of one word as produced by shell_quote:
// unquoted safe characters, '...' runs and the \' escape between them.
bool unquote(std::string_view q, std::string& out) {
    out.clear();
    std::size_t i = 0;
    while (i < q.size()) {
        if (q[i] == '\'') {
            const auto end = q.find('\'', i + 1);
            if (end == std::string_view::npos) return false;
            out.append(q.substr(i + 1, end - i - 1));
            i = end + 1;
        } else if (q[i] == '\\') {
            if (i + 1 >= q.size() || q[i + 1] != '\'') return false;
            out.push_back('\'');
            i += 2;
        } else {
            const char c = q[i];
            const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                              std::string_view("@%+=:,./_-").find(c) != std::string_view::npos;
            if (!safe) return false;  // a shell metacharacter outside quotes
            out.push_back(c);
            ++i;
        }
    }
    return true;
}

void check_shell_quote(std::string_view word_in) {
    const std::string quoted = shell_quote(word_in);
    std::string back;
    check(!quoted.empty());  // an empty word must still be a word ('')
    check(unquote(quoted, back) && back == word_in);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    // shell_quote over any bytes, whatever the config and tenant make of them.
    check_shell_quote(in.ConsumeRandomLengthString(256));
    const auto parsed = parse_config(config_text(in));
    if (!parsed) return 0;
    const Policy& policy = parsed.value();
    const Host host = make_host(in);
    // /proc and /dev are the jail's own mounts, and on a host they (and
    // everything under /dev) belong to root, which validate_tenant's owner
    // rule refuses; the fuzzed inspection answers for them as the host does.
    // (/proc/PID of a tenant's own process is the tenant's: only root, who
    // writes passwd, could point a home there.)
    const HomeInspector inspect = [home = host.home](const std::string& path) {
        HomeInfo h = home;
        for (std::string_view own : {"/proc", "/dev"})
            if (path == own || path.starts_with(std::string(own) + "/")) h.owner = 0;
        return h;
    };
    const auto validated = validate_tenant(policy, host.name, host.db, inspect);
    if (!validated) return 0;
    const Tenant& tenant = validated.value();
    Request request;
    request.action = in.PickValueInArray({JailAction::serve, JailAction::attach, JailAction::kill_session,
                                          JailAction::list_sessions, JailAction::command});
    request.session = word(in);
    if (in.ConsumeBool()) request.command = words(in, 4);
    request.joins_tenant_netns = in.ConsumeBool();
    HostProbe probe = make_probe(in, policy);
    // Only proc = private may defer the trial (what commands.cpp does).
    probe.trial_deferred = policy.proc == ProcMode::private_only && in.ConsumeBool();
    CallerEnv caller_env;
    for (std::size_t n = in.ConsumeIntegralInRange<std::size_t>(0, 6); n > 0; --n) caller_env[word(in)] = word(in);
    const std::vector<std::string> pam_env = words(in, 6);

    const auto plan = build_plan(policy, tenant, request, probe, caller_env, pam_env);
    if (plan) {
        const bool named = request.action == JailAction::attach || request.action == JailAction::kill_session;
        check(!named || is_valid_session_name(request.session));
        check((request.action == JailAction::command) == !request.command.empty());
        check(request.command.empty() || policy.allow_caller_command);
        // Client jails have no network and never host a server; the others
        // have the host's only with network = host, and an isolated one waits
        // (--block-fd) for its network; only the session jail is in a
        // session of its own.
        // Options as bwrap reads them: a value that spells an option (a
        // host symlink's target "--block-fd", say) is a value, not one.
        std::vector<Op> ops;
        std::vector<std::string> command;
        parse_like_bwrap(plan.value().argv, ops, command);
        const auto count = [&ops](std::string_view name) {
            return std::count_if(ops.begin(), ops.end(), [name](const Op& op) { return op.name == name; });
        };
        const bool client = is_client_action(request.action);
        const bool isolated = !client && policy.network == NetworkMode::isolated;
        // An attach jail that joins the tenant's empty namespace makes none
        // (its watcher joins it as root); only an attach jail joins one.
        const bool joins = request.joins_tenant_netns;
        check(!joins || request.action == JailAction::attach);
        check(joins == (plan.value().net == JailNet::tenant_empty));
        check(((client && !joins) || isolated) == (count("--unshare-net") > 0));
        // An attach jail waits (--block-fd) for its PAM account check.
        check(isolated == (count("--block-fd") > 0));
        check(count("--block-fd") <= 1);
        check(isolated == (plan.value().net == JailNet::isolated) && isolated == !plan.value().net_argv.empty());
        check((request.action == JailAction::serve) == (count("--new-session") > 0));
        check(probe.trial_deferred || probe.user_namespaces);
        check(plan.value().trial_in_child == probe.trial_deferred);
        // An attach jail's and a one-off jail's environment goes to its
        // stub with the descriptors: its bwrap sets none (the same argv for
        // every connection).
        const bool stubbed = is_stub_action(request.action);
        check(!stubbed || plan.value().env.empty());
        check_environment(stubbed ? plan.value().handed_env : plan.value().env, tenant);
        check_argv(plan.value(), policy, tenant, request);
        if (plan.value().proc_source == "host" && policy.proc == ProcMode::private_or_hidepid)
            check(probe.host_proc_hidepid && !probe.fresh_proc);
        for (const auto& w : plan.value().argv) check_shell_quote(w);
    } else {
        const Exit code = plan.error().code;
        // Internal only for what no caller asks (commands.cpp asks to join
        // the tenant's namespace for an attach only).
        const bool misuse = request.joins_tenant_netns && request.action != JailAction::attach;
        check(code == Exit::refused || code == Exit::usage || code == Exit::host ||
              (misuse && code == Exit::internal &&
               plan.error().message == "only an attach jail joins the tenant's empty network namespace"));
    }
    return 0;
}
