// quota_verdict.cpp: see quota_verdict.hpp.
#include "decide/quota_verdict.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <vector>

namespace clihost {
namespace {

std::vector<std::string_view> fields(std::string_view line) {
    std::vector<std::string_view> out;
    std::size_t pos = 0;
    while (pos < line.size()) {
        auto end = line.find(' ', pos);
        if (end == std::string_view::npos) end = line.size();
        if (end > pos) out.push_back(line.substr(pos, end - pos));
        pos = end + 1;
    }
    return out;
}

// mountinfo writes ' ', '\t', '\n' and '\\' in paths as \ooo.
std::string unescape(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size()) {
            const auto oct = s.substr(i + 1, 3);
            unsigned v = 0;
            bool ok = oct.size() == 3;
            for (char c : oct) {
                if (c < '0' || c > '7') ok = false;
                v = v * 8 + static_cast<unsigned>(c - '0');
            }
            if (ok && v < 256) {
                out += static_cast<char>(v);
                i += 3;
                continue;
            }
        }
        out += s[i];
    }
    return out;
}

bool contains_path(std::string_view mount_point, std::string_view path) {
    if (mount_point == "/" || mount_point == path) return true;
    return path.size() > mount_point.size() && path.substr(0, mount_point.size()) == mount_point &&
           path[mount_point.size()] == '/';
}

bool parse_dev(std::string_view s, unsigned& major, unsigned& minor) {
    const auto colon = s.find(':');
    if (colon == std::string_view::npos) return false;
    const auto a = s.substr(0, colon), b = s.substr(colon + 1);
    const auto ra = std::from_chars(a.data(), a.data() + a.size(), major);
    const auto rb = std::from_chars(b.data(), b.data() + b.size(), minor);
    return !a.empty() && !b.empty() && ra.ec == std::errc{} && ra.ptr == a.data() + a.size() &&
           rb.ec == std::errc{} && rb.ptr == b.data() + b.size();
}

std::string size_text(std::uint64_t bytes) {
    const char* units[] = {"B", "K", "M", "G", "T"};
    std::size_t u = 0;
    std::uint64_t whole = bytes;
    while (whole >= 1024 && u < 4) {
        whole /= 1024;
        ++u;
    }
    return std::to_string(whole) + units[u];
}

std::string where(const QuotaFacts& f) {
    if (!f.mount) return f.home;
    return f.mount->mount_point + " (" + f.mount->fstype + ", " + f.mount->source + ")";
}

std::string how_to_turn_on(const QuotaFacts& f) {
    const std::string mp = f.mount ? f.mount->mount_point : "MOUNTPOINT";
    const std::string dev = f.mount ? f.mount->source : "DEVICE";
    const std::string limit = "setquota -u " + f.tenant + " SOFT HARD 0 0 " + mp;
    const std::string type = f.mount ? f.mount->fstype : "";
    if (type == "ext4")
        return "fix: tune2fs -O quota " + dev + " while it is unmounted (or quotacheck -cum " + mp +
               "), add usrquota to its options in /etc/fstab and remount, then " + limit;
    if (type == "xfs")
        return "fix: mount it with uquota (for /: rootflags=uquota on the kernel command line), then xfs_quota -x "
               "-c 'limit -u bhard=SIZE " + f.tenant + "' " + mp;
    return "fix: put the homes on an ext4 or xfs file system with user quotas (" +
           (type.empty() ? std::string("this one") : type) + " has none that check can read)";
}

}  // namespace

std::optional<MountEntry> mount_of_device(std::string_view mountinfo, unsigned major, unsigned minor,
                                          std::string_view path) {
    std::optional<MountEntry> first, best;
    std::size_t pos = 0;
    while (pos < mountinfo.size()) {
        auto nl = mountinfo.find('\n', pos);
        if (nl == std::string_view::npos) nl = mountinfo.size();
        const auto f = fields(mountinfo.substr(pos, nl - pos));
        pos = nl + 1;
        // id parent major:minor root mountpoint options [optional...] - fstype source superopts
        unsigned ma = 0, mi = 0;
        if (f.size() < 6 || !parse_dev(f[2], ma, mi) || ma != major || mi != minor) continue;
        std::size_t dash = 6;
        while (dash < f.size() && f[dash] != "-") ++dash;
        if (dash + 3 >= f.size()) continue;
        MountEntry m{unescape(f[4]), std::string(f[dash + 1]), unescape(f[dash + 2]),
                     std::string(f[5]) + "," + std::string(f[dash + 3])};
        if (!first) first = m;
        if (contains_path(m.mount_point, path)) best = std::move(m);
    }
    return best ? best : first;
}

QuotaVerdict quota_verdict(const QuotaFacts& f) {
    if (f.open_error != 0)
        return {false, "unknown (cannot open " + f.home + ": " + std::strerror(f.open_error) + ")"};
    const std::string at = where(f);
    const auto limit_text = [](const QuotaKind& k) {
        return "limit " + size_text(k.limit) + ", used " + size_text(k.used);
    };
    if (f.user.enforced && f.user.has_limit)
        return {true, "ok (user quotas are enforced on " + at + ": " + f.tenant + "'s " + limit_text(f.user) + ")"};
    if (f.project_id != 0 && f.project.enforced && f.project.has_limit)
        return {true, "ok (project quotas are enforced on " + at + ": project " + std::to_string(f.project_id) +
                          " of " + f.home + ", " + limit_text(f.project) + ")"};
    const std::string risk = ": " + f.tenant + " can fill " + (f.mount ? f.mount->mount_point : f.home) +
                             ", which every home on it shares" +
                             (f.mount && f.mount->mount_point == "/" ? " with the host's own files and logs" : "");
    // Quotas enforced but no limit for this tenant.
    if (f.user.enforced)
        return {false, "WARNING: user quotas are enforced on " + at + " but " + f.tenant + " has no block limit" +
                           risk + " (fix: setquota -u " + f.tenant + " SOFT HARD 0 0 " +
                           (f.mount ? f.mount->mount_point : f.home) + ")"};
    if (f.user.accounting)
        return {false, "WARNING: user quotas are counted but not enforced on " + at + risk + " (" +
                           how_to_turn_on(f) + ")"};
    if (f.user.error != 0 && f.user.error != ENOSYS && f.user.error != ESRCH && f.user.error != ENOENT)
        return {false, "WARNING: cannot read the quotas of " + at + " (" + std::strerror(f.user.error) + ")" + risk};
    return {false, "WARNING: no quotas on " + at + risk + " (" + how_to_turn_on(f) + ")"};
}

}  // namespace clihost
