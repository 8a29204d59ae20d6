// validate.cpp: the shared syntax rules; see validate.hpp.
#include "base/validate.hpp"

#include <algorithm>
#include <array>
#include <charconv>

namespace clihost {

bool is_valid_account_name(std::string_view name) {
    if (name.empty() || name.size() > 32 || name.front() == '-') return false;
    // cppcheck-suppress invalidLifetime ; cppcheck 2.10 false positive: the caller keeps "name"'s string alive
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-' || c == '.';
    });
}

bool is_well_formed_env_value(std::string_view value) {
    if (value.empty() || value.size() > 128) return false;
    return std::all_of(value.begin(), value.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
               c == '_' || c == '-' || c == '@' || c == '+' || c == ':' || c == ',' || c == '=';
    });
}

bool is_valid_env_name(std::string_view name) {
    if (name.empty() || name.size() > 64 || (name.front() >= '0' && name.front() <= '9')) return false;
    // cppcheck-suppress invalidLifetime ; cppcheck 2.10 false positive: the caller keeps "name"'s string alive
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    });
}

bool is_reserved_env_name(std::string_view name) {
    static constexpr std::array<std::string_view, 21> kReserved{
        "HOME", "USER", "LOGNAME", "SHELL", "PATH", "TTYD_SANDBOX", "IFS", "ENV", "BASH_ENV",
        "GCONV_PATH", "LOCPATH", "NLSPATH", "HOSTALIASES", "RESOLV_HOST_CONF", "MALLOC_CHECK_",
        "TMUX", "TMUX_TMPDIR", "PYTHONPATH", "PERL5LIB", "SHELLOPTS",
        // The clihost proxy's own secrets: its environment holds them, and a
        // tenant must never read the terminal password or the session keys.
        "TTYD_PASSWORD"};
    if (name.substr(0, 3) == "LD_" || name.substr(0, 6) == "GLIBC_" || name.substr(0, 15) == "PASSWORD_SECRET")
        return true;
    return std::find(kReserved.begin(), kReserved.end(), name) != kReserved.end();
}

bool is_clean_absolute_path(std::string_view path) {
    if (path.empty() || path.front() != '/' || path.size() > 1024) return false;
    if (path == "/") return true;
    if (path.back() == '/') return false;
    for (char c : path)
        if (c == '\0' || c == '\n' || static_cast<unsigned char>(c) < 0x20) return false;
    if (path.find("//") != std::string_view::npos) return false;
    // Components between the slashes (none is empty: no "//", no trailing '/').
    std::size_t start = 1;
    while (start <= path.size()) {
        auto end = path.find('/', start);
        if (end == std::string_view::npos) end = path.size();
        const auto part = path.substr(start, end - start);
        if (part == "." || part == "..") return false;
        start = end + 1;
    }
    return true;
}

bool is_valid_session_name(std::string_view name) {
    if (name.empty() || name.size() > 64 || name.front() == '-' || name.front() == '.') return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '.' || c == '-';
    });
}

std::optional<uid_t> parse_id(std::string_view text) {
    unsigned long n = 0;
    const auto* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, n);
    if (text.empty() || ec != std::errc{} || ptr != end || n >= 0xffffffffUL) return std::nullopt;
    return static_cast<uid_t>(n);
}

}  // namespace clihost
