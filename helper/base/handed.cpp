// handed.cpp: see handed.hpp.
#include "base/handed.hpp"

namespace clihost {

namespace {

bool is_entry(std::string_view kv) { return !kv.empty() && kv.front() != '=' && kv.find('=') != std::string_view::npos; }

}  // namespace

std::string encode_handed(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                          std::size_t max) {
    if (argv.empty() || argv.front().empty()) return {};
    std::string out;
    for (const auto& w : argv) {
        if (w.find('\0') != std::string::npos) return {};
        out.append("+").append(w).push_back('\0');
    }
    out.push_back('\0');
    for (const auto& kv : env) {
        if (kv.find('\0') != std::string::npos || !is_entry(kv)) return {};
        out.append(kv).push_back('\0');
    }
    if (out.size() > max) return {};
    return out;
}

HandedWords decode_handed(std::string_view msg) {
    HandedWords h;
    if (msg.empty() || msg.back() != '\0') {
        h.wrong = "malformed connection";
        return h;
    }
    bool in_env = false;
    for (std::size_t at = 0; at < msg.size() && h.wrong == nullptr;) {
        const std::size_t end = msg.find('\0', at);
        const std::string_view word = msg.substr(at, end - at);
        at = end + 1;
        if (in_env) {
            if (is_entry(word)) h.env.emplace_back(word);
            else h.wrong = "malformed environment";
        } else if (word.empty()) {
            in_env = true;
        } else if (word.front() == '+') {
            h.argv.emplace_back(word.substr(1));
        } else {
            h.wrong = "malformed command";
        }
    }
    if (h.wrong == nullptr && (!in_env || h.argv.empty() || h.argv.front().empty())) h.wrong = "malformed command";
    return h;
}

}  // namespace clihost
