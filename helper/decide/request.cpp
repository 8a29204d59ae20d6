// request.cpp: the front/supervisor messages (request.hpp). Pure.
#include "decide/request.hpp"

#include <csignal>

#include <algorithm>
#include <charconv>

#include "base/validate.hpp"  // is_valid_session_name, is_well_formed_env_value

namespace clihost {
namespace {

constexpr std::string_view kMagic = "clihost-jail-request ";

Error bad(std::string_view what) { return fail(Exit::refused, "malformed request: " + std::string(what)); }

template <class T>
bool number(std::string_view s, T& out) {
    if (s.empty() || s.size() > 12) return false;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc{} && p == s.data() + s.size();
}

// Splits at NUL; every field, the last included, ends with one.
bool split_fields(std::string_view msg, std::vector<std::string_view>& out) {
    std::size_t pos = 0;
    while (pos < msg.size()) {
        const auto end = msg.find('\0', pos);
        if (end == std::string_view::npos) return false;
        out.push_back(msg.substr(pos, end - pos));
        if (out.size() > kMaxRequestArgs + kMaxRequestEnv + 16) return false;
        pos = end + 1;
    }
    return true;
}

bool printable(std::string_view s, std::size_t max) {
    if (s.size() > max) return false;
    for (unsigned char c : s)
        if (c < 0x20 || c == 0x7f) return false;
    return true;
}

const char* kind_name(HandoverKind k) {
    switch (k) {
        case HandoverKind::attach: return "attach";
        case HandoverKind::command: return "command";
        case HandoverKind::list: return "list";
        case HandoverKind::kill: return "kill";
    }
    return "?";
}

constexpr std::string_view kAnswer = "answer";

const char* answer_name(QueryAnswer::Kind k) {
    switch (k) {
        case QueryAnswer::Kind::sessions: return "sessions";
        case QueryAnswer::Kind::no_answer: return "no-answer";
        case QueryAnswer::Kind::not_killed: return "not-killed";
        case QueryAnswer::Kind::no_session_jail: return "no-session-jail";
    }
    return "?";
}

bool raw_line_ok(std::string_view s) { return s.find('\0') == std::string_view::npos && s.find('\n') == std::string_view::npos; }

}  // namespace

bool is_query(HandoverKind kind) { return kind == HandoverKind::list || kind == HandoverKind::kill; }

std::string format_request(const HandoverRequest& r) {
    std::string out(kMagic);
    out += std::to_string(r.version);
    out += '\0';
    auto field = [&](std::string_view f) {
        out += f;
        out += '\0';
    };
    field(kind_name(r.kind));
    field(r.session);
    field(r.caller);
    field(std::to_string(r.caller_uid));
    field(r.via);
    field(r.sudo_uid.empty() ? "-" : r.sudo_uid);
    field(std::to_string(r.extra_env.size()));
    for (const auto& [k, v] : r.extra_env) field(std::string(k).append("=").append(v));
    field(std::to_string(r.command.size()));
    for (const auto& a : r.command) field(a);
    return out;
}

Result<HandoverRequest> parse_request(std::string_view msg) {
    if (msg.size() > kMaxRequestBytes) return bad("too long");
    if (msg.substr(0, kMagic.size()) != kMagic) return bad("not a clihost-jail request");
    std::vector<std::string_view> f;
    if (!split_fields(msg.substr(kMagic.size()), f)) return bad("fields");
    if (f.size() < 9) return bad("too few fields");
    HandoverRequest r;
    if (!number(f[0], r.version)) return bad("version");
    if (r.version != kProtocolVersion)
        return fail(Exit::host, "protocol version " + std::to_string(r.version) + " is not this supervisor's (" +
                                    std::to_string(kProtocolVersion) + ")");
    if (f[1] == "attach") r.kind = HandoverKind::attach;
    else if (f[1] == "command") r.kind = HandoverKind::command;
    else if (f[1] == "list") r.kind = HandoverKind::list;
    else if (f[1] == "kill") r.kind = HandoverKind::kill;
    else return bad("kind");
    r.session = std::string(f[2]);
    // list names no session; every other request names a valid one.
    if (r.kind == HandoverKind::list ? !r.session.empty() : !is_valid_session_name(r.session))
        return bad("session name");
    r.caller = std::string(f[3]);
    if (!printable(r.caller, 64) || r.caller.empty()) return bad("caller");
    if (!number(f[4], r.caller_uid) || r.caller_uid < 0 || r.caller_uid > 0xfffffffeL) return bad("caller uid");
    r.via = std::string(f[5]);
    if (!printable(r.via, 32) || r.via.empty()) return bad("via");
    r.sudo_uid = std::string(f[6]);
    long sudo = 0;
    if (r.sudo_uid != "-" && (!number(r.sudo_uid, sudo) || sudo < 0)) return bad("SUDO_UID");
    std::size_t nenv = 0;
    if (!number(f[7], nenv) || nenv > kMaxRequestEnv) return bad("environment count");
    std::size_t at = 8;
    if (f.size() < at + nenv + 1) return bad("environment");
    for (std::size_t i = 0; i < nenv; ++i, ++at) {
        const auto eq = f[at].find('=');
        if (eq == 0 || eq == std::string_view::npos || eq > 64) return bad("environment entry");
        const std::string name(f[at].substr(0, eq));
        for (char c : name)
            if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
                return bad("environment name");
        const auto value = f[at].substr(eq + 1);
        if (!is_well_formed_env_value(value)) return bad("environment value");
        if (!r.extra_env.emplace(name, std::string(value)).second) return bad("environment name repeated");
    }
    std::size_t nargs = 0;
    if (!number(f[at], nargs) || nargs > kMaxRequestArgs) return bad("argument count");
    ++at;
    if (f.size() != at + nargs) return bad("arguments");
    for (std::size_t i = 0; i < nargs; ++i, ++at) r.command.emplace_back(f[at]);
    if ((r.kind == HandoverKind::command) == r.command.empty()) return bad("only a command request has a command");
    if (is_query(r.kind) && nenv != 0) return bad("a query carries no environment");
    return r;
}

std::string format_answer(const QueryAnswer& a) {
    std::string out(kAnswer);
    out += '\0';
    out += answer_name(a.kind);
    out += '\0';
    if (a.kind == QueryAnswer::Kind::sessions) {
        std::size_t n = 0;
        for (const auto& name : a.sessions) {
            if (n == kMaxAnswerSessions || out.size() + name.size() + 1 > kMaxAnswerBytes) break;
            if (name.empty() || !raw_line_ok(name)) continue;
            out += name;
            out += '\0';
            ++n;
        }
    } else if (a.kind == QueryAnswer::Kind::not_killed) {
        std::string said = a.said.substr(0, kMaxAnswerSaid);
        for (char& c : said)
            if (c == '\0' || c == '\n') c = ' ';
        out += said;
        out += '\0';
    }
    return out;
}

Result<QueryAnswer> parse_answer(std::string_view msg) {
    auto bad_answer = [] { return fail(Exit::internal, "malformed answer from the supervisor"); };
    if (msg.size() > kMaxAnswerBytes) return bad_answer();
    std::vector<std::string_view> f;
    std::size_t pos = 0;
    while (pos < msg.size()) {
        const auto end = msg.find('\0', pos);
        if (end == std::string_view::npos) return bad_answer();
        f.push_back(msg.substr(pos, end - pos));
        if (f.size() > kMaxAnswerSessions + 2) return bad_answer();
        pos = end + 1;
    }
    if (f.size() < 2 || f[0] != kAnswer) return bad_answer();
    QueryAnswer a;
    if (f[1] == "sessions") {
        a.kind = QueryAnswer::Kind::sessions;
        for (std::size_t i = 2; i < f.size(); ++i) {
            if (f[i].empty() || f[i].find('\n') != std::string_view::npos) return bad_answer();
            a.sessions.emplace_back(f[i]);
        }
        return a;
    }
    if (f[1] == "not-killed") {
        if (f.size() != 3 || f[2].size() > kMaxAnswerSaid || !raw_line_ok(f[2])) return bad_answer();
        a.kind = QueryAnswer::Kind::not_killed;
        a.said = std::string(f[2]);
        return a;
    }
    if (f.size() != 2) return bad_answer();
    if (f[1] == "no-answer") a.kind = QueryAnswer::Kind::no_answer;
    else if (f[1] == "no-session-jail") a.kind = QueryAnswer::Kind::no_session_jail;
    else return bad_answer();
    return a;
}

QueryAnswer answer_of(HandoverKind kind, int status, std::string_view out, std::string_view err) {
    QueryAnswer a;
    if (status != 0) {
        // A list whose tmux failed is unknown; a kill tmux refused says why.
        if (kind != HandoverKind::kill) return a;
        a.kind = QueryAnswer::Kind::not_killed;
        a.said = std::string(err.substr(0, std::min(err.find('\n'), kMaxAnswerSaid)));
        for (char& c : a.said)
            if (c == '\0') c = ' ';
        return a;
    }
    a.kind = QueryAnswer::Kind::sessions;
    std::size_t bytes = 0;
    while (!out.empty() && a.sessions.size() < kMaxAnswerSessions) {
        const auto nl = out.find('\n');
        const auto line = out.substr(0, nl);
        bytes += line.size() + 1;
        if (bytes + 64 > kMaxAnswerBytes) break;
        if (!line.empty() && line.find('\0') == std::string_view::npos) a.sessions.emplace_back(line);
        if (nl == std::string_view::npos) break;
        out.remove_prefix(nl + 1);
    }
    return a;
}

std::string format_reply(const Reply& r) {
    switch (r.kind) {
        case ReplyKind::ok: return "ok";
        case ReplyKind::retry: return "retry";
        case ReplyKind::exit: return "exit " + std::to_string(r.code);
        case ReplyKind::fail: {
            std::string msg = r.message.substr(0, 1000);
            for (char& c : msg)
                if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
            return "fail " + std::to_string(r.code) + " " + msg;
        }
    }
    return "fail 4 internal";
}

Result<Reply> parse_reply(std::string_view msg) {
    auto bad_reply = [] { return fail(Exit::internal, "malformed reply from the supervisor"); };
    Reply r;
    if (msg == "ok" || msg == "retry") {
        r.kind = msg == "ok" ? ReplyKind::ok : ReplyKind::retry;
        r.code = 0;
    }
    else if (msg.substr(0, 5) == "exit ") {
        r.kind = ReplyKind::exit;
        if (!number(msg.substr(5), r.code) || r.code < 0 || r.code > 255) return bad_reply();
    } else if (msg.substr(0, 5) == "fail " && msg.size() >= 8 && msg[6] == ' ') {
        r.kind = ReplyKind::fail;
        r.code = msg[5] - '0';
        if (r.code < 1 || r.code > 4) return bad_reply();
        r.message = std::string(msg.substr(7, 1000));
        if (!printable(r.message, 1000)) return bad_reply();
    } else {
        return bad_reply();
    }
    return r;
}

bool relayable_signal(int sig) {
    return sig == SIGWINCH || sig == SIGTSTP || sig == SIGCONT || sig == SIGINT || sig == SIGQUIT;
}

std::string format_relay(const Relay& r) {
    if (r.hangup) return r.signal == SIGTERM ? "term" : "hup";
    return "sig " + std::to_string(r.signal);
}

Result<Relay> parse_relay(std::string_view msg) {
    Relay r;
    if (msg == "hup" || msg == "term") {
        r.hangup = true;
        r.signal = msg == "hup" ? SIGHUP : SIGTERM;
        return r;
    }
    if (msg.substr(0, 4) == "sig " && number(msg.substr(4), r.signal) && relayable_signal(r.signal)) return r;
    return fail(Exit::refused, "malformed relay message");
}

}  // namespace clihost
