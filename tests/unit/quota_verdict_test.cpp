// Disk quotas of the tenants' homes: the mount that holds a home, and
// check's verdict from the kernel's answers (decide/quota_verdict.hpp).
#include <gtest/gtest.h>

#include <cerrno>

#include "decide/quota_verdict.hpp"

using namespace clihost;

namespace {

constexpr const char* kMountinfo =
    "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard\n"
    "30 22 0:25 / /tmp rw,nosuid - tmpfs tmpfs rw\n"
    "40 22 7:3 / /srv/homes rw,relatime - ext4 /dev/loop3 rw,quota,usrquota\n"
    "41 22 254:0 /var/cache /mnt/with\\040space rw - ext4 /dev/vda rw,discard\n";

QuotaFacts facts(const std::string& fstype, const std::string& mp) {
    QuotaFacts f;
    f.home = mp + "/alice";
    f.tenant = "alice";
    f.mount = MountEntry{mp, fstype, "/dev/loop3", "rw"};
    return f;
}

}  // namespace

TEST(QuotaVerdict, TheHomesMountIsFoundByDeviceAndPath) {
    auto m = mount_of_device(kMountinfo, 7, 3, "/srv/homes/alice");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->mount_point, "/srv/homes");
    EXPECT_EQ(m->fstype, "ext4");
    EXPECT_EQ(m->source, "/dev/loop3");
    EXPECT_EQ(m->options, "rw,relatime,rw,quota,usrquota");
    // The same device mounted twice: the mount that contains the path.
    EXPECT_EQ(mount_of_device(kMountinfo, 254, 0, "/home/alice")->mount_point, "/");
    EXPECT_EQ(mount_of_device(kMountinfo, 254, 0, "/mnt/with space/alice")->mount_point, "/mnt/with space");
    EXPECT_FALSE(mount_of_device(kMountinfo, 9, 9, "/home/alice"));
    EXPECT_FALSE(mount_of_device("garbage\n1 2 3\n", 254, 0, "/"));
}

TEST(QuotaVerdict, AnEnforcedLimitForTheTenantIsOk) {
    auto f = facts("ext4", "/srv/homes");
    f.user = {0, true, true, true, std::uint64_t{5} << 30, std::uint64_t{1} << 20};
    const auto v = quota_verdict(f);
    EXPECT_TRUE(v.enforced);
    EXPECT_EQ(v.text, "ok (user quotas are enforced on /srv/homes (ext4, /dev/loop3): alice's limit 5G, used 1M)");
}

TEST(QuotaVerdict, AProjectLimitOnTheHomeIsOk) {
    auto f = facts("xfs", "/srv/homes");
    f.project_id = 42;
    f.project = {0, true, true, true, std::uint64_t{2} << 30, 0};
    EXPECT_TRUE(quota_verdict(f).enforced);
    EXPECT_EQ(quota_verdict(f).text,
              "ok (project quotas are enforced on /srv/homes (xfs, /dev/loop3): project 42 of /srv/homes/alice, "
              "limit 2G, used 0B)");
}

TEST(QuotaVerdict, EnforcedWithoutALimitForTheTenantIsAWarning) {
    auto f = facts("ext4", "/srv/homes");
    f.user = {0, true, true, false, 0, 4096};
    const auto v = quota_verdict(f);
    EXPECT_FALSE(v.enforced);
    EXPECT_EQ(v.text, "WARNING: user quotas are enforced on /srv/homes (ext4, /dev/loop3) but alice has no block "
                      "limit: alice can fill /srv/homes, which every home on it shares (fix: setquota -u alice SOFT "
                      "HARD 0 0 /srv/homes)");
}

TEST(QuotaVerdict, CountedButNotEnforcedSaysHowToEnforce) {
    auto f = facts("ext4", "/");
    f.user = {0, true, false, true, std::uint64_t{1} << 30, 0};  // a limit, but nothing enforces it
    const auto v = quota_verdict(f);
    EXPECT_FALSE(v.enforced);
    EXPECT_EQ(v.text.rfind("WARNING: user quotas are counted but not enforced on / (ext4, /dev/loop3): alice can "
                           "fill /, which every home on it shares with the host's own files and logs (fix: tune2fs "
                           "-O quota /dev/loop3 while it is unmounted",
                           0),
              0u)
        << v.text;
}

TEST(QuotaVerdict, NoQuotasSaysHowToTurnThemOnForTheFileSystemType) {
    auto f = facts("ext4", "/srv/homes");
    f.user.error = ESRCH;
    EXPECT_FALSE(quota_verdict(f).enforced);
    EXPECT_NE(quota_verdict(f).text.find("WARNING: no quotas on /srv/homes (ext4, /dev/loop3): alice can fill "
                                         "/srv/homes"),
              std::string::npos)
        << quota_verdict(f).text;
    EXPECT_NE(quota_verdict(f).text.find("add usrquota to its options in /etc/fstab and remount, then setquota -u "
                                         "alice SOFT HARD 0 0 /srv/homes"),
              std::string::npos);
    f.mount->fstype = "xfs";
    EXPECT_NE(quota_verdict(f).text.find("mount it with uquota"), std::string::npos);
    f.mount->fstype = "btrfs";
    EXPECT_NE(quota_verdict(f).text.find("fix: put the homes on an ext4 or xfs file system with user quotas (btrfs "
                                         "has none that check can read)"),
              std::string::npos);
}

TEST(QuotaVerdict, AHomeThatCannotBeOpenedIsUnknown) {
    QuotaFacts f;
    f.home = "/home/x";
    f.tenant = "x";
    f.open_error = ENOENT;
    EXPECT_EQ(quota_verdict(f).text, "unknown (cannot open /home/x: No such file or directory)");
    EXPECT_FALSE(quota_verdict(f).enforced);
}
