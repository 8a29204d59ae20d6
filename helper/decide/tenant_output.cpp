// tenant_output.cpp: see tenant_output.hpp.
#include "decide/tenant_output.hpp"

#include <algorithm>
#include <charconv>
#include <ctime>

#include "base/log.hpp"

namespace clihost {
namespace {

constexpr char kHex[] = "0123456789abcdef";

void append_hex(std::string& out, unsigned char c) {
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 0x0f];
}

bool is_name_byte(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// An account name from a root-written record, escaped all the same: bytes
// outside [A-Za-z0-9_.-] as \xNN.
std::string escape_account_name(std::string_view s) {
    std::string out;
    for (char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (is_name_byte(c) || c == '.') out += ch;
        else append_hex(out, c);
    }
    return out;
}

std::string_view state_name(SessionsState s) {
    switch (s) {
        case SessionsState::listed: return "listed";
        case SessionsState::not_queried: return "not-a-tenant";
        case SessionsState::no_answer: return "no-answer";
        case SessionsState::none: return "none";
    }
    return "no-answer";
}

}  // namespace

std::string tmux_session_name(std::string_view caller_name) {
    std::string name(caller_name);
    for (char& c : name)
        if (c == '.') c = '+';
    return name;
}

std::string caller_session_name(std::string_view tmux_name) {
    std::string out;
    out.reserve(tmux_name.size());
    for (std::size_t i = 0; i < tmux_name.size(); ++i) {
        const auto c = static_cast<unsigned char>(tmux_name[i]);
        // A caller's name starts with neither '-' nor '.' ('+').
        if (c == '+' && i > 0) out += '.';
        else if (is_name_byte(c) && !(c == '-' && i == 0)) out += static_cast<char>(c);
        else append_hex(out, c);
    }
    return out;
}

std::vector<std::string> listed_sessions(std::string_view out, std::size_t max_names) {
    std::vector<std::string> names;
    while (!out.empty() && names.size() < max_names) {
        const auto nl = out.find('\n');
        const auto line = out.substr(0, nl);
        if (!line.empty()) names.push_back(caller_session_name(line));
        if (nl == std::string_view::npos) break;
        out.remove_prefix(nl + 1);
    }
    return names;
}

std::string iso_time(long long t) {
    char buf[32];
    const std::time_t tt = static_cast<std::time_t>(t);
    std::tm tm{};
    if (::gmtime_r(&tt, &tm) == nullptr || std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) return "-";
    return buf;
}

std::string render_list_text(const ListEntry& e) {
    std::string out = "tenant=" + escape_account_name(e.tenant) + " uid=" + std::to_string(e.uid) +
                      " supervisor=" + std::to_string(e.supervisor) + " started=" + iso_time(e.started) + " changed=";
    if (!e.settings_recorded) out += "unknown";
    else if (e.changed.empty()) out += '-';
    for (std::size_t i = 0; e.settings_recorded && i < e.changed.size(); ++i)
        out.append(i > 0 ? "," : "").append(escape_account_name(e.changed[i]));
    out += " sessions=";
    if (e.state == SessionsState::no_answer) {
        out += '?';
    } else if (e.state == SessionsState::none) {
        out += "(none)";  // '(' is never in a caller-form name
    } else if (e.state == SessionsState::not_queried || e.sessions.empty()) {
        out += '-';
    } else {
        // In the caller's form (caller_session_name): no ',' nor ' ' in any.
        for (std::size_t i = 0; i < e.sessions.size(); ++i) out.append(i > 0 ? "," : "").append(e.sessions[i]);
    }
    for (const auto& [key, value] : e.figures)
        out.append(" ").append(escape_account_name(key)).append("=").append(value ? std::to_string(*value) : "-");
    return out + "\n";
}

std::string json_string(std::string_view s) {
    std::string out = "\"";
    for (char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += ch;
        } else if (c >= 0x20 && c <= 0x7e) {
            out += ch;
        } else {
            out += "\\u00";
            out += kHex[c >> 4];
            out += kHex[c & 0x0f];
        }
    }
    return out + "\"";
}

std::string render_list_json(const ListEntry& e) {
    std::string out = "{\"tenant\": " + json_string(escape_account_name(e.tenant)) + ", \"uid\": " +
                      std::to_string(e.uid) + ", \"supervisor\": " + std::to_string(e.supervisor) +
                      ", \"started\": " + json_string(iso_time(e.started)) + ", \"changed\": ";
    if (e.settings_recorded) {
        out += '[';
        for (std::size_t i = 0; i < e.changed.size(); ++i) out.append(i > 0 ? ", " : "").append(json_string(e.changed[i]));
        out += ']';
    } else {
        out += "null";
    }
    out += ", \"sessions\": ";
    if (e.state == SessionsState::listed || e.state == SessionsState::none) {
        out += '[';
        for (std::size_t i = 0; i < e.sessions.size(); ++i) {
            if (i > 0) out += ", ";
            out += json_string(e.sessions[i]);
        }
        out += ']';
    } else {
        out += "null";
    }
    out.append(", \"sessions_state\": ").append(json_string(state_name(e.state)));
    for (const auto* figures : {&e.figures, &e.json_figures})
        for (const auto& [key, value] : *figures)
            out.append(", ").append(json_string(escape_account_name(key))).append(": ").append(value ? std::to_string(*value) : "null");
    out.append(", \"earlier_version\": ").append(e.earlier_version ? "true" : "false");
    return out + "}\n";
}

std::string relay_jail_stderr(std::string_view said, std::size_t max_lines) {
    std::string out;
    std::size_t lines = 0;
    while (!said.empty() && lines < max_lines) {
        const auto nl = said.find('\n');
        const auto line = said.substr(0, nl);
        out.append("jail: ").append(log::escape(line)).append("\n");
        ++lines;
        if (nl == std::string_view::npos) break;
        said.remove_prefix(nl + 1);
    }
    return out;
}

int attach_client_status(int client_status) {
    const bool exited = client_status >= 1 && client_status <= 127;
    return exited || client_status < 0 ? kClientFailedStatus : client_status;
}

int attach_watcher_status(int watcher_status, int no_server) {
    if ((watcher_status >= 0 && watcher_status <= kClientFailedStatus) || watcher_status == no_server ||
        (watcher_status > 128 && watcher_status <= 255))
        return watcher_status;
    return kClientFailedStatus;
}

RefusalDelay refusal_delay(const RefusalRecord& before, long long now, unsigned max_seconds) {
    if (max_seconds == 0) return {0, {}};
    RefusalRecord r = before;
    // A record from the future (a clock set back) or long past starts again.
    if (r.last > now || now - r.last > kRefusalForgetSeconds) r.failures = 0;
    unsigned delay = 1;
    for (unsigned i = 0; i < r.failures && delay < max_seconds; ++i) delay *= 2;
    if (delay > max_seconds) delay = max_seconds;
    return {delay, {r.failures < 64 ? r.failures + 1 : r.failures, now}};
}

std::string format_refusal_record(const RefusalRecord& r) {
    return std::to_string(r.failures) + " " + std::to_string(r.last) + "\n";
}

std::optional<RefusalRecord> parse_refusal_record(std::string_view text) {
    RefusalRecord r;
    const auto sp = text.find(' ');
    if (sp == std::string_view::npos || text.empty() || text.back() != '\n') return std::nullopt;
    const auto a = text.substr(0, sp);
    const auto b = text.substr(sp + 1, text.size() - sp - 2);
    auto [p1, e1] = std::from_chars(a.data(), a.data() + a.size(), r.failures);
    auto [p2, e2] = std::from_chars(b.data(), b.data() + b.size(), r.last);
    if (a.empty() || b.empty() || e1 != std::errc{} || e2 != std::errc{} || p1 != a.data() + a.size() ||
        p2 != b.data() + b.size())
        return std::nullopt;
    return r;
}

std::string oom_notice(std::uint64_t kills, std::optional<std::uint64_t> memory_max) {
    std::string line = "clihost-jail: the OOM killer ended " + std::to_string(kills) + " process" +
                       (kills == 1 ? "" : "es");
    if (memory_max) line += " (memory_max " + std::to_string(*memory_max >> 20) + " MiB reached)";
    return line;
}

namespace {

// "/dev/pts/N" (a client on a terminal its jail names) or "client-N"
// (tmux's name for one whose terminal has no name there: an attach jail's
// own devpts does not hold the relay's), N 1 to 10 digits.
bool is_notice_client(std::string_view name) {
    for (std::string_view prefix : {std::string_view("/dev/pts/"), std::string_view("client-")}) {
        if (name.size() <= prefix.size() || name.size() > prefix.size() + 10 || name.substr(0, prefix.size()) != prefix)
            continue;
        const auto digits = name.substr(prefix.size());
        return std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
    }
    return false;
}

}  // namespace

std::vector<std::string> notice_clients(std::string_view out) {
    std::vector<std::string> names;
    while (!out.empty() && names.size() < kMaxNoticeClients) {
        const auto nl = out.find('\n');
        const std::string_view line = out.substr(0, nl);
        out = nl == std::string_view::npos ? std::string_view{} : out.substr(nl + 1);
        if (is_notice_client(line) && std::find(names.begin(), names.end(), line) == names.end()) names.emplace_back(line);
    }
    return names;
}

}  // namespace clihost
