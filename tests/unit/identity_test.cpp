// Caller detection/authorisation and tenant validation, over a fake account db.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "fake_accounts.hpp"
#include "decide/identity.hpp"
#include "reason.hpp"
#include "host/accounts.hpp"

using namespace clihost;
using clihost::testing::refused_with;
using clihost::testing::typical_host;

namespace {

HomeInfo good_home_for(uid_t uid) { return HomeInfo{true, false, true, uid, S_IFDIR | 0750}; }

// Inspector that answers like a well-kept host: each home owned by its user.
HomeInspector well_kept(const AccountDb& db) {
    return [&db](const std::string& path) {
        for (uid_t uid : {1001u, 1002u, 1003u, 200u, 70000u, 1004u, 1005u, 1006u, 1007u, 1008u, 1009u, 1012u}) {
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
    EXPECT_TRUE(refused_with(authorize_caller(Policy{}, caller, db), Exit::refused,
                             "caller carol is not allowed to use clihost-jail"));
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
    EXPECT_TRUE(refused_with(authorize_caller(Policy{}, identify_caller(creds(1003, 0, 1003, {50}), db), db),
                             Exit::refused, "caller carol is not allowed to use clihost-jail"));
    // A uid without a passwd entry is refused too.
    EXPECT_TRUE(refused_with(authorize_caller(Policy{}, identify_caller(creds(4242, 0, 4242), db), db),
                             Exit::refused, "caller #4242 is not allowed to use clihost-jail"));
}

TEST(Caller, EmptyAccountNameNeverMatches) {
    clihost::testing::FakeAccountDb db;
    db.add_user({"", 4243, 4243, "/x", "/bin/sh"});
    Policy p;
    p.caller_users = {""};
    p.caller_groups.clear();
    EXPECT_TRUE(refused_with(authorize_caller(p, identify_caller(creds(4243, 0, 4243), db), db), Exit::refused,
                             "caller  is not allowed to use clihost-jail"));
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
    const char* reason;  // the exact message
};

class TenantRefused : public ::testing::TestWithParam<BadTenant> {};

TEST_P(TenantRefused, WithExit1AndItsReason) {
    auto db = typical_host();
    EXPECT_TRUE(clihost::testing::refused_exactly(validate_tenant(Policy{}, GetParam().user, db, well_kept(db)),
                                                  Exit::refused, GetParam().reason));
}

INSTANTIATE_TEST_SUITE_P(
    Table, TenantRefused,
    ::testing::Values(
        BadTenant{"Root", "root", "tenant root refused: uid 0 is never a tenant"},
        BadTenant{"UidZeroAlias", "toor", "tenant toor refused: uid 0 is never a tenant"},
        BadTenant{"NoSuchUser", "nobody-here", "tenant nobody-here refused: no such user"},
        BadTenant{"NotInTenantGroup", "carol", "tenant carol refused: not a member of clihost-tenants"},
        BadTenant{"UidBelowRange", "svc", "tenant svc refused: uid 200 outside 1000..60000"},
        BadTenant{"UidAboveRange", "huge", "tenant huge refused: uid 70000 outside 1000..60000"},
        BadTenant{"PrimaryGroupZero", "wheel", "tenant wheel refused: member of group 0"},
        BadTenant{"SupplementaryGroupZero", "sgid0", "tenant sgid0 refused: member of group 0"},
        BadTenant{"RelativeHome", "rel", "tenant rel refused: home is not a clean absolute path"},
        BadTenant{"DotDotHome", "dots", "tenant dots refused: home is not a clean absolute path"},
        BadTenant{"HomeUnderRoBind", "varlib", "tenant varlib refused: home /var/lib/tenants/v lies under ro_bind /var/lib"},
        BadTenant{"HomeIsRoot", "slash", "tenant slash refused: home is not a clean absolute path"},
        BadTenant{"RelativeShell", "relsh", "tenant relsh refused: login shell is not an absolute path"},
        BadTenant{"InvalidName", "../x", "tenant ../x refused: invalid name"}),
    [](const auto& tp) { return std::string(tp.param.name); });

// Root's uid is also below any sane min_uid, and root's gid is 0: in the
// table above either would refuse it too. Here only the uid-0 rule can: a
// policy whose range starts at 0 (parse_config never yields one, which is
// its own guarantee, Table/ConfigRefused.MinUidZero), and uid-0 aliases that
// are tenants in every other respect (home theirs, no group 0).
TEST(Tenant, UidZeroIsRefusedEvenWhereTheRangeAndGroupsWouldAllowIt) {
    auto db = typical_host();
    db.add_user({"zero", 0, 3000, "/home/zero", "/bin/sh"}, {2000});
    db.add_user({"root", 0, 3000, "/home/root2", "/bin/sh"}, {2000});
    Policy p;
    p.min_uid = 0;
    const HomeInspector owned_by_uid0 = [](const std::string&) { return good_home_for(0); };
    EXPECT_TRUE(refused_with(validate_tenant(p, "zero", db, owned_by_uid0), Exit::refused,
                             "tenant zero refused: uid 0 is never a tenant"));
    EXPECT_TRUE(refused_with(validate_tenant(p, "root", db, owned_by_uid0), Exit::refused,
                             "tenant root refused: uid 0 is never a tenant"));
    // Control: the same account with uid 1010 passes, so nothing else refuses it.
    db.add_user({"zero", 1010, 3000, "/home/zero", "/bin/sh"}, {2000});
    EXPECT_TRUE(validate_tenant(p, "zero", db, [](const std::string&) { return good_home_for(1010); }).ok());
}

// The name "root" is refused whatever uid its passwd entry has.
TEST(Tenant, TheNameRootIsRefusedWhateverItsUid) {
    auto db = typical_host();
    db.add_user({"root", 1011, 1011, "/home/root", "/bin/sh"}, {2000});
    EXPECT_TRUE(refused_with(validate_tenant(Policy{}, "root", db, [](const std::string&) { return good_home_for(1011); }),
                             Exit::refused, "tenant root refused: uid 0 is never a tenant"));
}

TEST(Tenant, HomeMustBeARealPrivateDirectoryOwnedByTheTenant) {
    auto db = typical_host();
    auto with = [&](HomeInfo h) { return validate_tenant(Policy{}, "alice", db, [h](const std::string&) { return h; }); };
    auto refused = [&](HomeInfo h, const std::string& why) {
        return refused_with(with(h), Exit::refused, "tenant alice refused: home /home/alice " + why);
    };
    EXPECT_TRUE(with(good_home_for(1001)).ok());
    EXPECT_TRUE(refused(HomeInfo{}, "does not exist"));
    EXPECT_TRUE(refused(HomeInfo{true, true, false, 1001, S_IFLNK | 0777}, "is a symlink"));
    EXPECT_TRUE(refused(HomeInfo{true, false, false, 1001, S_IFREG | 0644}, "is not a directory"));
    EXPECT_TRUE(refused(HomeInfo{true, false, true, 1002, S_IFDIR | 0750}, "is not owned by the tenant"));  // someone else's
    EXPECT_TRUE(refused(HomeInfo{true, false, true, 0, S_IFDIR | 0755}, "is not owned by the tenant"));     // root's
    EXPECT_TRUE(refused(HomeInfo{true, false, true, 1001, S_IFDIR | 0770}, "is group/world-writable"));
    EXPECT_TRUE(refused(HomeInfo{true, false, true, 1001, S_IFDIR | 0757}, "is group/world-writable"));
}

TEST(Tenant, UidRangeComesFromPolicy) {
    auto db = typical_host();
    Policy p;
    p.min_uid = 1002;
    EXPECT_TRUE(refused_with(validate_tenant(p, "alice", db, well_kept(db)), Exit::refused,
                             "tenant alice refused: uid 1001 outside 1002..60000"));
    EXPECT_TRUE(validate_tenant(p, "bob", db, well_kept(db)).ok());
    p.max_uid = 1001;
    p.min_uid = 1000;
    EXPECT_TRUE(refused_with(validate_tenant(p, "bob", db, well_kept(db)), Exit::refused,
                             "tenant bob refused: uid 1002 outside 1000..1001"));
}

// What a front checked, checked again where it is acted on: the same tenant
// passes; one that has left the tenant group, or whose name now has another
// uid, is refused with its reason.
TEST(Tenant, UnchangedIsCheckedAgainstTheDatabaseAsItIsNow) {
    auto db = typical_host();
    const Tenant alice = validate_tenant(Policy{}, "alice", db, well_kept(db)).value();
    EXPECT_TRUE(tenant_unchanged(Policy{}, alice, db, well_kept(db)).ok());
    auto left = typical_host();
    left.add_user({"alice", 1001, 1001, "/home/alice", "/bin/bash"}, {50});
    EXPECT_TRUE(refused_with(tenant_unchanged(Policy{}, alice, left, well_kept(left)), Exit::refused,
                             "tenant alice refused: not a member of clihost-tenants"));
    auto renumbered = typical_host();
    renumbered.add_user({"alice", 1009, 1009, "/home/alice", "/bin/bash"}, {2000});
    EXPECT_TRUE(refused_with(tenant_unchanged(Policy{}, alice, renumbered, well_kept(renumbered)), Exit::refused,
                             "tenant alice refused: its uid changed"));
}
