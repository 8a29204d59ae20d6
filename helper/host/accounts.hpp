// accounts.hpp: the real account database and home inspector behind
// identity's pure decisions (decide/identity.hpp).
#pragma once

#include <string>

#include "decide/identity.hpp"

namespace clihost {

// The real one: getpwnam_r/getpwuid_r/getgrnam_r/getgrouplist.
class SystemAccountDb final : public AccountDb {
public:
    std::optional<Account> user_by_name(const std::string& name) const override;
    std::optional<Account> user_by_uid(uid_t uid) const override;
    std::optional<gid_t> group_by_name(const std::string& name) const override;
    std::vector<gid_t> groups_of(const Account& account) const override;
};

// The real inspector: lstat(), never following a final symlink.
HomeInfo inspect_home(const std::string& path);

}  // namespace clihost
