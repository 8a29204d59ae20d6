// cli.cpp: getopt_long over a private copy of the arguments, with hard bounds.
#include "decide/cli.hpp"

#include <getopt.h>

#include <cstring>

#include "base/validate.hpp"

namespace clihost {
namespace {

// Bounds stop memory blow-ups from caller-controlled input (sudo's
// CVE-2021-3156 lived in argument handling): 64 KiB and 256 words is far
// beyond any terminal command a proxy sends.
constexpr std::size_t kMaxArgs = 256;
constexpr std::size_t kMaxArgBytes = std::size_t{64} * 1024;

Error usage(const std::string& msg) { return fail(Exit::usage, msg + " (try --help)"); }

}  // namespace

std::string_view usage_text() {
    return "usage: clihost-jail run   --user TENANT --session NAME [-- COMMAND [ARG...]]\n"
           "       clihost-jail kill  --user TENANT --session NAME\n"
           "       clihost-jail stop  --user TENANT\n"
           "       clihost-jail list  [--user TENANT] [--json]\n"
           "       clihost-jail check [--user TENANT]\n"
           "       clihost-jail print --user TENANT --session NAME [-- COMMAND...]\n"
           "       clihost-jail --version | --help\n";
}

Result<CommandLine> parse_command_line(const std::vector<std::string>& args) {
    if (args.size() > kMaxArgs) return usage("too many arguments");
    std::size_t total = 0;
    for (const auto& a : args) total += a.size() + 1;
    if (total > kMaxArgBytes) return usage("arguments too long");
    // args[0] is the program name slot; with argc 0 it is simply absent.
    if (args.size() < 2) return usage("missing command");

    CommandLine cl;
    const std::string& verb = args[1];
    if (verb == "--version") cl.verb = Verb::version;
    else if (verb == "--help" || verb == "-h") cl.verb = Verb::help;
    else if (verb == "run") cl.verb = Verb::run;
    else if (verb == "kill") cl.verb = Verb::kill;
    else if (verb == "stop") cl.verb = Verb::stop;
    else if (verb == "list") cl.verb = Verb::list;
    else if (verb == "check") cl.verb = Verb::check;
    else if (verb == "print") cl.verb = Verb::print;
    else return usage("unknown command '" + verb.substr(0, 64) + "'");
    if (cl.verb == Verb::version || cl.verb == Verb::help) {
        if (args.size() != 2) return usage("--version and --help take no arguments");
        return cl;
    }

    // getopt_long wants mutable C strings; give it a private copy, starting at
    // the verb so that it plays argv[0]. "+" stops at the first non-option, so
    // a COMMAND's own options are never taken for ours.
    std::vector<std::string> storage(args.begin() + 1, args.end());
    std::vector<char*> argv;
    argv.reserve(storage.size() + 1);
    for (auto& s : storage) argv.push_back(s.data());
    argv.push_back(nullptr);
    static const option kLong[] = {
        {"user", required_argument, nullptr, 'u'},
        {"session", required_argument, nullptr, 's'},
        {"json", no_argument, nullptr, 'j'},
        {nullptr, 0, nullptr, 0},
    };
    optind = 0;  // full reset of glibc's getopt state
    opterr = 0;
    while (true) {
        const int c = getopt_long(static_cast<int>(argv.size() - 1), argv.data(), "+", kLong, nullptr);
        if (c == -1) break;
        if (c == 'u' || c == 's') {
            // getopt_long accepts unambiguous abbreviations ("--use"); the
            // contract names exactly --user and --session, so insist on them.
            const std::string_view full = c == 'u' ? "--user" : "--session";
            const std::string_view last(argv[optind - 1]);
            const bool joined = last.size() > full.size() && last.compare(0, full.size() + 1, std::string(full) + "=") == 0;
            const std::string_view token = joined || optind < 2 ? last : std::string_view(argv[optind - 2]);
            if (token != full && !(token.size() > full.size() && token.substr(0, full.size() + 1) == std::string(full) + "="))
                return usage("unknown or abbreviated option");
            auto& slot = c == 'u' ? cl.user : cl.session;
            if (slot) return usage(std::string("--") + (c == 'u' ? "user" : "session") + " given twice");
            slot = std::string(optarg);
            continue;
        }
        if (c == 'j') {
            if (std::string_view(argv[optind - 1]) != "--json") return usage("unknown or abbreviated option");
            if (cl.json) return usage("--json given twice");
            cl.json = true;
            continue;
        }
        return usage("unknown or incomplete option");
    }
    const auto argc = static_cast<int>(argv.size() - 1);
    int rest = optind;
    const bool has_dashdash = rest > 0 && rest <= argc && std::strcmp(argv[rest - 1], "--") == 0;
    if (rest < argc && !has_dashdash) return usage("unexpected argument '" + std::string(argv[rest]).substr(0, 64) + "'");
    for (int i = rest; i < argc; ++i) cl.command.emplace_back(argv[i]);
    if (has_dashdash && cl.command.empty()) return usage("'--' must be followed by a command");

    // check and list name a tenant or none; stop names one; the rest name a session too.
    const bool tenant_only = cl.verb == Verb::check || cl.verb == Verb::list || cl.verb == Verb::stop;
    if (tenant_only && (cl.session || !cl.command.empty()))
        return usage(std::string(cl.verb == Verb::check ? "check" : cl.verb == Verb::list ? "list" : "stop") +
                     " takes only --user");
    if (cl.verb == Verb::stop && !cl.user) return usage("--user is required");
    if (cl.json && cl.verb != Verb::list) return usage("--json is for list only");
    if (cl.verb == Verb::kill && !cl.command.empty()) return usage("kill takes no command");
    if (!tenant_only && (!cl.user || !cl.session)) return usage("--user and --session are required");
    if (cl.user && !is_valid_account_name(*cl.user)) return fail(Exit::refused, "invalid user name");
    if (cl.session && !is_valid_session_name(*cl.session)) return fail(Exit::refused, "invalid session name");
    return cl;
}

}  // namespace clihost
