// fuzz_request.cpp: parse_request, parse_reply and parse_relay over
// arbitrary bytes: what a supervisor reads from a connection (root's only,
// but the request carries the caller's session name, command and
// environment values) and what a front reads back. Each accepted value
// formats back to a message that parses to the same value.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "decide/request.hpp"

using namespace clihost;

namespace {

void check(bool ok) {
    if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view in(reinterpret_cast<const char*>(data), size);
    if (auto r = parse_request(in); r) {
        const HandoverRequest& q = r.value();
        check(q.version == kProtocolVersion);
        check((q.kind == HandoverKind::command) == !q.command.empty());
        check(q.command.size() <= kMaxRequestArgs && q.extra_env.size() <= kMaxRequestEnv);
        auto again = parse_request(format_request(q));
        check(again.ok());
        check(again.value().session == q.session && again.value().command == q.command &&
              again.value().extra_env == q.extra_env && again.value().caller == q.caller &&
              again.value().caller_uid == q.caller_uid && again.value().via == q.via &&
              again.value().sudo_uid == q.sudo_uid && again.value().kind == q.kind);
    } else {
        check(!r.error().message.empty());
    }
    if (auto r = parse_reply(in); r) {
        auto again = parse_reply(format_reply(r.value()));
        check(again.ok() && again.value().kind == r.value().kind && again.value().code == r.value().code &&
              again.value().message == r.value().message);
    }
    if (auto r = parse_relay(in); r) {
        auto again = parse_relay(format_relay(r.value()));
        check(again.ok() && again.value().hangup == r.value().hangup && again.value().signal == r.value().signal);
    }
    return 0;
}
