// supervisor_args.cpp: clihost-jail-supervisor's command line (supervisor_args.hpp).
#include "decide/supervisor_args.hpp"

#include <charconv>


namespace clihost {
namespace {

constexpr std::size_t kMaxArgs = 256;

Result<uid_t> parse_uid(const std::string& s) {
    unsigned long v = 0;
    const auto* end = s.data() + s.size();
    const auto [p, ec] = std::from_chars(s.data(), end, v);
    if (s.empty() || ec != std::errc() || p != end || v > 0xfffffffeUL)
        return fail(Exit::usage, "clihost-jail-supervisor: bad uid " + s);
    return static_cast<uid_t>(v);
}

Status set_option(SupervisorArgs& a, const std::string& name, const std::string& value) {
    if (name == "--user") a.tenant = value;
    else if (name == "--uid") {
        auto uid = parse_uid(value);
        if (!uid) return uid.error();
        a.uid = uid.value();
    } else if (name == "--caller") a.caller = value;
    else if (name == "--caller-uid") {
        if (value == "-1") a.caller_uid = -1;
        else if (auto uid = parse_uid(value)) a.caller_uid = static_cast<long>(uid.value());
        else return uid.error();
    } else if (name == "--via") a.via = value;
    else if (name == "--session") a.session = value;
    else if (name == "--config") a.config = value;
    else if (name == "--config-digest") a.config_digest = value;
    else if (name == "--faults") a.faults = value;
    else if (name == "--env") {
        const auto eq = value.find('=');
        if (eq == std::string::npos || eq == 0) return fail(Exit::usage, "clihost-jail-supervisor: bad --env");
        a.caller_env[value.substr(0, eq)] = value.substr(eq + 1);
    } else
        return fail(Exit::usage, "clihost-jail-supervisor: unknown option " + name);
    return ok_status();
}

}  // namespace

std::string stopped_text(Stopped what) {
    return what == Stopped::session_jail      ? "session jail stopped"
           : what == Stopped::supervisor_only ? "supervisor stopped (no session jail)"
                                              : "no session jail was running";
}

std::vector<std::string> supervisor_argv(const SupervisorArgs& a) {
    std::vector<std::string> v{"clihost-jail-supervisor", a.mode == SupervisorMode::start ? "start" : "stop",
                               "--uid", std::to_string(a.uid), "--caller", a.caller, "--caller-uid",
                               std::to_string(a.caller_uid), "--via", a.via, "--session", a.session};
    if (a.config) v.insert(v.end(), {"--config", *a.config});
    if (!a.faults.empty()) v.insert(v.end(), {"--faults", a.faults});
    if (a.mode == SupervisorMode::stop) return v;
    v.insert(v.end(), {"--user", a.tenant, "--config-digest", a.config_digest,
                       a.session_jail ? "--session-jail" : "--no-session-jail"});
    for (const auto& [name, value] : a.caller_env) {
        std::string pair = name;
        pair.append("=").append(value);
        v.insert(v.end(), {"--env", std::move(pair)});
    }
    if (a.in_unit) v.emplace_back("--in-unit");
    return v;
}

Result<SupervisorArgs> parse_supervisor_argv(const std::vector<std::string>& argv) {
    if (argv.size() < 2 || argv.size() > kMaxArgs)
        return fail(Exit::usage, "clihost-jail-supervisor: run by clihost-jail only (start|stop --uid UID ...)");
    SupervisorArgs a;
    if (argv[1] == "stop") a.mode = SupervisorMode::stop;
    else if (argv[1] != "start") return fail(Exit::usage, "clihost-jail-supervisor: unknown mode " + argv[1]);
    bool have_uid = false;
    bool have_jail = false;
    for (std::size_t i = 2; i < argv.size(); ++i) {
        const std::string& name = argv[i];
        if (name == "--session-jail" || name == "--no-session-jail") {
            a.session_jail = name == "--session-jail";
            have_jail = true;
            continue;
        }
        if (name == "--in-unit") {
            a.in_unit = true;
            continue;
        }
        if (i + 1 >= argv.size()) return fail(Exit::usage, "clihost-jail-supervisor: " + name + " needs a value");
        if (auto st = set_option(a, name, argv[++i]); !st) return st.error();
        have_uid = have_uid || name == "--uid";
    }
    if (!have_uid) return fail(Exit::usage, "clihost-jail-supervisor: no --uid");
    if (a.in_unit && a.mode != SupervisorMode::start)
        return fail(Exit::usage, "clihost-jail-supervisor: --in-unit is start's only");
    if (a.mode == SupervisorMode::start && (a.tenant.empty() || !have_jail))
        return fail(Exit::usage, "clihost-jail-supervisor: start needs --user and --[no-]session-jail");
    return a;
}

}  // namespace clihost
