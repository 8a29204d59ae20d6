// fuzz_request.cpp: parse_request, parse_reply, parse_answer and parse_relay over
// arbitrary bytes: what a supervisor reads from a connection (root's only,
// but the request carries the caller's session name, command and
// environment values) and what a front reads back (a query's answer
// carries the tenant's session names and tmux's words, raw). Each accepted value
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
        check(!is_query(q.kind) || (q.extra_env.empty() && q.command.empty()));
        check((q.kind == HandoverKind::list) == q.session.empty());
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
    if (auto r = parse_answer(in); r) {
        const QueryAnswer& a = r.value();
        check(a.sessions.size() <= kMaxAnswerSessions && a.said.size() <= kMaxAnswerSaid);
        for (const auto& n : a.sessions) check(!n.empty() && n.find('\n') == std::string::npos);
        const std::string again_msg = format_answer(a);
        check(again_msg.size() <= kMaxAnswerBytes);
        auto again = parse_answer(again_msg);
        check(again.ok() && again.value().kind == a.kind && again.value().sessions == a.sessions &&
              again.value().said == a.said);
    }
    if (auto r = parse_relay(in); r) {
        auto again = parse_relay(format_relay(r.value()));
        check(again.ok() && again.value().hangup == r.value().hangup && again.value().signal == r.value().signal);
    }
    return 0;
}
