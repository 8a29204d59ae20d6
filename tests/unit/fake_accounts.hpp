// fake_accounts.hpp: an in-memory AccountDb for the pure identity/plan tests.
#pragma once

#include <map>

#include "decide/identity.hpp"

namespace clihost::testing {

class FakeAccountDb final : public AccountDb {
public:
    void add_user(Account a, std::vector<gid_t> supplementary = {}) {
        supp_[a.name] = std::move(supplementary);
        users_[a.name] = std::move(a);
    }
    void add_group(const std::string& name, gid_t gid) { groups_[name] = gid; }

    std::optional<Account> user_by_name(const std::string& name) const override {
        auto it = users_.find(name);
        if (it == users_.end()) return std::nullopt;
        return it->second;
    }
    std::optional<Account> user_by_uid(uid_t uid) const override {
        for (const auto& [n, a] : users_)
            if (a.uid == uid) return a;
        return std::nullopt;
    }
    std::optional<gid_t> group_by_name(const std::string& name) const override {
        auto it = groups_.find(name);
        if (it == groups_.end()) return std::nullopt;
        return it->second;
    }
    std::vector<gid_t> groups_of(const Account& a) const override {
        std::vector<gid_t> g{a.gid};
        auto it = supp_.find(a.name);
        if (it != supp_.end()) g.insert(g.end(), it->second.begin(), it->second.end());
        return g;
    }

private:
    std::map<std::string, Account> users_;
    std::map<std::string, std::vector<gid_t>> supp_;
    std::map<std::string, gid_t> groups_;
};

// A typical host: proxy user clihost (999, group clihost 998), tenants
// alice (1001) and bob (1002) in clihost-tenants (2000), plus odd accounts.
inline FakeAccountDb typical_host() {
    FakeAccountDb db;
    db.add_group("clihost", 998);
    db.add_group("clihost-tenants", 2000);
    db.add_group("staff", 50);
    db.add_user({"root", 0, 0, "/root", "/bin/bash"}, {2000});
    db.add_user({"clihost", 999, 998, "/var/lib/clihost", "/usr/sbin/nologin"});
    db.add_user({"alice", 1001, 1001, "/home/alice", "/bin/bash"}, {2000, 50});
    db.add_user({"bob", 1002, 1002, "/home/bob", "/bin/bash"}, {2000});
    db.add_user({"carol", 1003, 1003, "/home/carol", "/bin/bash"});                 // not a tenant
    db.add_user({"svc", 200, 200, "/home/svc", "/bin/sh"}, {2000});                 // uid below range
    db.add_user({"huge", 70000, 70000, "/home/huge", "/bin/sh"}, {2000});           // uid above range
    db.add_user({"toor", 0, 0, "/home/toor", "/bin/sh"}, {2000});                   // uid 0 alias
    db.add_user({"wheel", 1004, 0, "/home/wheel", "/bin/sh"}, {2000});              // primary group 0
    db.add_user({"rel", 1005, 1005, "home/rel", "/bin/sh"}, {2000});                // relative home
    db.add_user({"dots", 1006, 1006, "/home/../root", "/bin/sh"}, {2000});          // .. in home
    db.add_user({"varlib", 1007, 1007, "/var/lib/tenants/v", "/bin/sh"}, {2000});   // under ro_bind
    db.add_user({"slash", 1008, 1008, "/", "/bin/sh"}, {2000});                     // home is /
    db.add_user({"relsh", 1009, 1009, "/home/relsh", "bin/sh"}, {2000});            // relative shell
    db.add_user({"sgid0", 1012, 1012, "/home/sgid0", "/bin/sh"}, {2000, 0});        // supplementary group 0
    return db;
}

}  // namespace clihost::testing
