// fuzz_cli.cpp: parse_command_line over a NUL-split argv. argv is the one
// input a setuid caller controls completely (sudo's CVE-2021-3156 and
// pkexec's CVE-2021-4034 both lived in argument handling).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "decide/cli.hpp"
#include "decide/config.hpp"

using namespace clihost;

namespace {

void check(bool ok) {
    if (!ok) __builtin_trap();
}

bool same(const Result<CommandLine>& a, const Result<CommandLine>& b) {
    if (a.ok() != b.ok()) return false;
    if (!a.ok()) return a.error().code == b.error().code && a.error().message == b.error().message;
    const auto& x = a.value();
    const auto& y = b.value();
    return x.verb == y.verb && x.user == y.user && x.session == y.session && x.command == y.command;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // Each NUL ends one argument, as in the argv block the kernel builds; an
    // empty input is argc == 0 (an empty argv).
    std::vector<std::string> args;
    std::string cur;
    for (std::size_t i = 0; i < size; ++i) {
        if (data[i] == 0) {
            args.push_back(cur);
            cur.clear();
        } else {
            cur.push_back(static_cast<char>(data[i]));
        }
    }
    if (!cur.empty()) args.push_back(cur);

    const auto parsed = parse_command_line(args);
    // getopt_long keeps global state: a second parse must not depend on the first.
    check(same(parsed, parse_command_line(args)));
    if (!parsed) {
        const Exit code = parsed.error().code;
        check(code == Exit::usage || code == Exit::refused);
        return 0;
    }
    const CommandLine& cl = parsed.value();
    check(args.size() >= 2);
    // Whatever reaches the lookups and the plan has passed the validators.
    if (cl.user) check(is_valid_account_name(*cl.user));
    if (cl.session) check(is_valid_session_name(*cl.session));
    switch (cl.verb) {
        case Verb::version:
        case Verb::help:
            check(args.size() == 2 && !cl.user && !cl.session && cl.command.empty());
            break;
        case Verb::check:
        case Verb::list:
            check(!cl.session && cl.command.empty());
            break;
        case Verb::stop:
            check(cl.user && !cl.session && cl.command.empty());
            break;
        case Verb::kill:
            check(cl.user && cl.session && cl.command.empty());
            break;
        case Verb::run:
        case Verb::print:
            check(cl.user.has_value() && cl.session.has_value());
            // A COMMAND only ever comes from after "--", verbatim, as the tail of argv.
            if (!cl.command.empty()) {
                check(cl.command.size() + 1 < args.size());
                const auto tail = args.end() - static_cast<std::ptrdiff_t>(cl.command.size());
                check(std::vector<std::string>(tail, args.end()) == cl.command);
                check(*(tail - 1) == "--");
            }
            break;
    }
    return 0;
}
