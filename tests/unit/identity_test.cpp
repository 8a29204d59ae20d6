// Caller detection/authorisation and tenant validation, over a fake account db.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "fake_accounts.hpp"
#include "identity.hpp"

using namespace clihost;
using clihost::testing::typical_host;

namespace {

HomeInfo good_home_for(uid_t uid) { return HomeInfo{true, false, true, uid, S_IFDIR | 0750}; }

// Inspector that answers like a well-kept host: each home owned by its user.
HomeInspector well_kept(const AccountDb& db) {
    return [&db](const std::string& path) {
        for (uid_t uid : {1001u, 1002u, 1003u, 200u, 70000u, 1004u, 1005u, 1006u, 1007u, 1008u, 1009u}) {
            auto a = db.user_by_uid(uid);
            if (a && a->home == path) return good_home_for(uid);
        }
        return HomeInfo{};
    };
}

Credentials creds(uid_t ruid, uid_t euid, gid_t rgid, std::vector<gid_t> groups = {}) {
    return Credentials{ruid, euid, euid, rgid, std::move(groups), std::nullopt};
}

}  // namespace

TEST(Caller, InvocationModeFromIds) {
    auto db = typical_host();
    EXPECT_EQ(identify_caller(creds(0, 0, 0), db).invocation, Invocation::root);
    EXPECT_EQ(identify_caller(creds(999, 0, 998), db).invocation, Invocation::setuid);
    EXPECT_EQ(identify_caller(creds(999, 999, 998), db).invocation, Invocation::unprivileged);
    auto c = creds(0, 0, 0);
    c.sudo_uid = "999";
    auto sudo = identify_caller(c, db);
    EXPECT_EQ(sudo.invocation, Invocation::sudo);
    EXPECT_EQ(sudo.name, "clihost");
    EXPECT_EQ(sudo.uid, 999u);
}

TEST(Caller, SudoUidIsIgnoredUnlessRealUidIsRoot) {
    auto db = typical_host();
    auto c = creds(1003, 0, 1003);
    c.sudo_uid = "0";
    auto caller = identify_caller(c, db);
    EXPECT_EQ(caller.invocation, Invocation::setuid);
    EXPECT_EQ(caller.name, "carol");
    EXPECT_FALSE(authorize_caller(Policy{}, caller, db).ok());
}

TEST(Caller, MalformedSudoUidKeepsRootMode) {
    auto db = typical_host();
    auto c = creds(0, 0, 0);
    c.sudo_uid = "99x";
    EXPECT_EQ(identify_caller(c, db).invocation, Invocation::root);
}

TEST(Caller, RootAndSudoAreAlwaysAuthorised) {
    auto db = typical_host();
    Policy none;
    none.caller_users.clear();
    none.caller_groups.clear();
    EXPECT_TRUE(authorize_caller(none, identify_caller(creds(0, 0, 0), db), db).ok());
}

TEST(Caller, ListedUserOrGroupMemberIsAuthorised) {
    auto db = typical_host();
    Policy p;
    p.caller_groups.clear();
    EXPECT_TRUE(authorize_caller(p, identify_caller(creds(999, 0, 998), db), db).ok());
    Policy by_group;
    by_group.caller_users.clear();
    // carol holds group clihost (998) as a supplementary group of the process.
    EXPECT_TRUE(authorize_caller(by_group, identify_caller(creds(1003, 0, 1003, {998}), db), db).ok());
}

TEST(Caller, OthersAreRefusedWithExit1) {
    auto db = typical_host();
    auto r = authorize_caller(Policy{}, identify_caller(creds(1003, 0, 1003, {50}), db), db);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Exit::refused);
    // A uid without a passwd entry is refused too.
    EXPECT_FALSE(authorize_caller(Policy{}, identify_caller(creds(4242, 0, 4242), db), db).ok());
}

TEST(Caller, EmptyAccountNameNeverMatches) {
    clihost::testing::FakeAccountDb db;
    db.add_user({"", 4243, 4243, "/x", "/bin/sh"});
    Policy p;
    p.caller_users = {""};
    p.caller_groups.clear();
    EXPECT_FALSE(authorize_caller(p, identify_caller(creds(4243, 0, 4243), db), db).ok());
}

TEST(Tenant, ValidTenantGetsItsGroupsSorted) {
    auto db = typical_host();
    auto t = validate_tenant(Policy{}, "alice", db, well_kept(db));
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_EQ(t.value().account.uid, 1001u);
    EXPECT_EQ(t.value().groups, (std::vector<gid_t>{50, 1001, 2000}));
}

struct BadTenant {
    const char* name;
    const char* user;
};

class TenantRefused : public ::testing::TestWithParam<BadTenant> {};

TEST_P(TenantRefused, WithExit1) {
    auto db = typical_host();
    auto t = validate_tenant(Policy{}, GetParam().user, db, well_kept(db));
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().code, Exit::refused);
}

INSTANTIATE_TEST_SUITE_P(Table, TenantRefused,
                         ::testing::Values(BadTenant{"Root", "root"}, BadTenant{"UidZeroAlias", "toor"},
                                           BadTenant{"NoSuchUser", "nobody-here"},
                                           BadTenant{"NotInTenantGroup", "carol"},
                                           BadTenant{"UidBelowRange", "svc"}, BadTenant{"UidAboveRange", "huge"},
                                           BadTenant{"PrimaryGroupZero", "wheel"},
                                           BadTenant{"RelativeHome", "rel"}, BadTenant{"DotDotHome", "dots"},
                                           BadTenant{"HomeUnderRoBind", "varlib"}, BadTenant{"HomeIsRoot", "slash"},
                                           BadTenant{"RelativeShell", "relsh"}, BadTenant{"InvalidName", "../x"}),
                         [](const auto& tp) { return std::string(tp.param.name); });

TEST(Tenant, HomeMustBeARealPrivateDirectoryOwnedByTheTenant) {
    auto db = typical_host();
    auto with = [&](HomeInfo h) { return validate_tenant(Policy{}, "alice", db, [h](const std::string&) { return h; }); };
    EXPECT_TRUE(with(good_home_for(1001)).ok());
    EXPECT_FALSE(with(HomeInfo{}).ok());                                           // missing
    EXPECT_FALSE(with(HomeInfo{true, true, false, 1001, S_IFLNK | 0777}).ok());    // symlink
    EXPECT_FALSE(with(HomeInfo{true, false, false, 1001, S_IFREG | 0644}).ok());   // a file
    EXPECT_FALSE(with(HomeInfo{true, false, true, 1002, S_IFDIR | 0750}).ok());    // someone else's
    EXPECT_FALSE(with(HomeInfo{true, false, true, 0, S_IFDIR | 0755}).ok());       // root's
    EXPECT_FALSE(with(HomeInfo{true, false, true, 1001, S_IFDIR | 0770}).ok());    // group-writable
    EXPECT_FALSE(with(HomeInfo{true, false, true, 1001, S_IFDIR | 0757}).ok());    // world-writable
}

TEST(Tenant, UidRangeComesFromPolicy) {
    auto db = typical_host();
    Policy p;
    p.min_uid = 1002;
    EXPECT_FALSE(validate_tenant(p, "alice", db, well_kept(db)).ok());
    EXPECT_TRUE(validate_tenant(p, "bob", db, well_kept(db)).ok());
    p.max_uid = 1001;
    p.min_uid = 1000;
    EXPECT_FALSE(validate_tenant(p, "bob", db, well_kept(db)).ok());
}
