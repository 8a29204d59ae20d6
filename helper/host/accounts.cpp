// accounts.cpp: see accounts.hpp.
#include "host/accounts.hpp"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace clihost {
namespace {

Account from_passwd(const passwd& pw) {
    return Account{pw.pw_name ? pw.pw_name : "", pw.pw_uid, pw.pw_gid, pw.pw_dir ? pw.pw_dir : "",
                   pw.pw_shell ? pw.pw_shell : ""};
}

// Calls a getXXX_r lookup with a buffer that starts small (most entries fit
// in 4 KiB; a zero-filled 64 KiB one cost every launch) and doubles on
// ERANGE, up to 16 MiB: a tenant group with thousands of members must not
// turn into "group does not exist" for every tenant.
template <class Lookup>
bool lookup_grown(Lookup&& lookup) {
    std::vector<char> buf;
    for (std::size_t size = 4096; size <= (std::size_t{16} << 20); size *= 2) {
        buf.resize(size);
        const int rc = lookup(buf.data(), buf.size());
        if (rc != ERANGE) return rc == 0;
    }
    return false;
}

}  // namespace

std::optional<Account> SystemAccountDb::user_by_name(const std::string& name) const {
    std::optional<Account> out;
    passwd pw{};
    lookup_grown([&](char* b, std::size_t n) {
        passwd* res = nullptr;
        const int rc = getpwnam_r(name.c_str(), &pw, b, n, &res);
        if (rc == 0 && res != nullptr) out = from_passwd(pw);
        return rc;
    });
    return out;
}

std::optional<Account> SystemAccountDb::user_by_uid(uid_t uid) const {
    std::optional<Account> out;
    passwd pw{};
    lookup_grown([&](char* b, std::size_t n) {
        passwd* res = nullptr;
        const int rc = getpwuid_r(uid, &pw, b, n, &res);
        if (rc == 0 && res != nullptr) out = from_passwd(pw);
        return rc;
    });
    return out;
}

std::optional<gid_t> SystemAccountDb::group_by_name(const std::string& name) const {
    std::optional<gid_t> out;
    group gr{};
    lookup_grown([&](char* b, std::size_t n) {
        group* res = nullptr;
        const int rc = getgrnam_r(name.c_str(), &gr, b, n, &res);
        if (rc == 0 && res != nullptr) out = gr.gr_gid;
        return rc;
    });
    return out;
}

std::vector<gid_t> SystemAccountDb::groups_of(const Account& account) const {
    int n = 64;
    std::vector<gid_t> groups;
    for (int attempt = 0; attempt < 8; ++attempt) {
        groups.resize(static_cast<std::size_t>(n));
        int got = n;
        if (getgrouplist(account.name.c_str(), account.gid, groups.data(), &got) >= 0) {
            groups.resize(static_cast<std::size_t>(got));
            return groups;
        }
        n = std::max(got, n * 2);
    }
    return {account.gid};  // pathological NSS; the primary group alone is safe
}

HomeInfo inspect_home(const std::string& path) {
    HomeInfo h;
    struct stat st {};
    if (path.empty() || ::lstat(path.c_str(), &st) != 0) return h;
    h.exists = true;
    h.is_symlink = S_ISLNK(st.st_mode);
    h.is_dir = S_ISDIR(st.st_mode);
    h.owner = st.st_uid;
    h.mode = st.st_mode;
    return h;
}

}  // namespace clihost
