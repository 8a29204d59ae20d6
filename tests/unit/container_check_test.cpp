// Container facts: the /proc parsers and the exact wording of every reason
// (pure; the container matrix in tests/integration/test_containers.py runs
// the same reasons under runc).
#include <gtest/gtest.h>

#include "host/container_check.hpp"
#include "reason.hpp"

using namespace clihost;
using clihost::testing::refused_with;

namespace {

// /proc/self/mountinfo of a runc container with Docker 28's defaults
// (masked and read-only paths), shortened to the lines that matter.
const char* kDockerMountinfo =
    "600 500 0:90 / / rw,relatime - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w\n"
    "601 600 0:91 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n"
    "602 600 0:92 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755\n"
    "610 601 0:91 /bus /proc/bus ro,nosuid,nodev,noexec,relatime - proc proc rw\n"
    "611 601 0:91 /fs /proc/fs ro,nosuid,nodev,noexec,relatime - proc proc rw\n"
    "612 601 0:91 /irq /proc/irq ro,nosuid,nodev,noexec,relatime - proc proc rw\n"
    "613 601 0:91 /sys /proc/sys ro,nosuid,nodev,noexec,relatime - proc proc rw\n"
    "614 601 0:91 /sysrq-trigger /proc/sysrq-trigger ro,nosuid,nodev,noexec,relatime - proc proc rw\n"
    "615 601 0:93 / /proc/acpi ro,relatime - tmpfs tmpfs ro\n"
    "616 601 0:92 /null /proc/kcore rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755\n"
    "617 601 0:92 /null /proc/keys rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755\n";

const char* kPlainMountinfo =
    "22 1 0:21 / / rw,relatime - ext4 /dev/vda rw\n"
    "23 22 0:22 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n"
    "24 23 0:40 / /proc/sys/fs/binfmt_misc rw,relatime - binfmt_misc binfmt_misc rw\n";

ContainerFacts facts(std::string mountinfo = kPlainMountinfo) {
    ContainerFacts f;
    f.seccomp = "0";
    f.max_user_namespaces = "96369";
    f.mountinfo = std::move(mountinfo);
    return f;
}

}  // namespace

TEST(ContainerCheck, StatusField) {
    const char* status = "Name:\tcat\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t1\n";
    EXPECT_EQ(status_field(status, "Seccomp"), "2");
    EXPECT_EQ(status_field(status, "NoNewPrivs"), "1");
    EXPECT_EQ(status_field(status, "Seccomp_filters"), "1");
    EXPECT_EQ(status_field(status, "Missing"), "");
    EXPECT_EQ(status_field("", "Seccomp"), "");
}

TEST(ContainerCheck, MountsOverProcAreDockersMaskedAndReadOnlyPaths) {
    EXPECT_EQ(mounts_over_proc(kDockerMountinfo),
              (std::vector<std::string>{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
                                        "/proc/acpi", "/proc/kcore", "/proc/keys"}));
}

TEST(ContainerCheck, BinfmtMiscOnAnEmptyProcDirectoryIsNoMountOverProc) {
    EXPECT_TRUE(mounts_over_proc(kPlainMountinfo).empty());
    EXPECT_TRUE(mounts_over_proc("").empty());
    // /proc itself and a path that only starts with "/proc" are not below /proc.
    EXPECT_TRUE(mounts_over_proc("30 1 0:1 / /procfoo rw - tmpfs t rw\n31 1 0:2 / /proc rw - proc p rw\n").empty());
}

TEST(ContainerCheck, ReadOnlyAt) {
    EXPECT_TRUE(read_only_at(kDockerMountinfo, "/proc/sys/user/max_user_namespaces"));
    EXPECT_TRUE(read_only_at(kDockerMountinfo, "/proc/sys"));
    EXPECT_FALSE(read_only_at(kDockerMountinfo, "/proc/self/status"));
    EXPECT_FALSE(read_only_at(kDockerMountinfo, "/proc/system"));  // not below /proc/sys
    EXPECT_FALSE(read_only_at(kPlainMountinfo, "/proc/sys/user/max_user_namespaces"));
    // Read-only by its superblock options only.
    EXPECT_TRUE(read_only_at("1 0 0:1 / / rw - ext4 /dev/x rw\n2 1 0:2 / /proc rw - proc proc ro\n", "/proc/sys"));
    // A later mount on an ancestor hides the earlier deeper one.
    EXPECT_FALSE(read_only_at(std::string(kDockerMountinfo) + "700 600 0:99 / /proc rw - proc proc rw\n",
                              "/proc/sys/user/max_user_namespaces"));
    EXPECT_FALSE(read_only_at("", "/proc/sys"));
}

TEST(ContainerCheck, WhyNoUsernsNamesTheSeccompFilter) {
    auto f = facts();
    EXPECT_EQ(why_no_userns(f), "");  // no filter, sysctls allow: nothing known
    f.seccomp = "2";
    EXPECT_EQ(why_no_userns(f),
              "a seccomp filter on this process blocks namespace creation (Seccomp: 2 in /proc/self/status, while "
              "the kernel allows user namespaces; in Docker: --security-opt seccomp=clihost-seccomp.json, made by "
              "install/clihost/seccomp_allow_userns.py from Docker's default profile)");
    // A sysctl that turns user namespaces off is the reason, filter or not.
    f.max_user_namespaces = "0";
    EXPECT_EQ(why_no_userns(f), "the sysctl user.max_user_namespaces is 0");
    f.unprivileged_userns_clone = "0";
    EXPECT_EQ(why_no_userns(f), "the sysctl kernel.unprivileged_userns_clone is 0");
}

TEST(ContainerCheck, WhyNoFreshProcListsTheMounts) {
    EXPECT_EQ(why_no_fresh_proc(facts()), "");
    EXPECT_EQ(why_no_fresh_proc(facts("1 0 0:1 / / rw - ext4 x rw\n2 1 0:2 / /proc rw - proc p rw\n"
                                      "3 2 0:3 /null /proc/keys rw - tmpfs t rw\n")),
              "something is mounted over part of /proc (/proc/keys), so the kernel refuses a fresh procfs in a new "
              "user namespace; in Docker: --security-opt systempaths=unconfined");
}

TEST(ContainerCheck, NotRootNamesNoNewPrivs) {
    auto f = facts();
    EXPECT_EQ(not_root_message(f), "not running with root privileges (install setuid root or use sudo)");
    f.no_new_privs = true;
    EXPECT_EQ(not_root_message(f),
              "not running with root privileges (no_new_privs is set on this process (NoNewPrivs: 1 in "
              "/proc/self/status), so the kernel ignored the setuid bit (Docker: --security-opt no-new-privileges); "
              "start the container without it, or run the proxy as root in the container)");
}

TEST(ContainerCheck, ReadOnlyProcSysRefusesJailsWithDisableUserns) {
    EXPECT_TRUE(check_proc_sys_writable(true, facts()));
    EXPECT_TRUE(check_proc_sys_writable(false, facts(kDockerMountinfo)));  // nested_sandbox work jail: no write
    EXPECT_TRUE(refused_with(check_proc_sys_writable(true, facts(kDockerMountinfo)), Exit::host,
                             "cannot start the jail: /proc/sys is read-only here, and bwrap --disable-userns must "
                             "write /proc/sys/user/max_user_namespaces; in Docker: --security-opt "
                             "systempaths=unconfined"));
}

TEST(ContainerCheck, ProblemsForCheck) {
    EXPECT_TRUE(container_problems(false, facts()).empty());
    auto f = facts(kDockerMountinfo);
    f.no_new_privs = true;
    auto p = container_problems(true, f);
    ASSERT_EQ(p.size(), 2u);
    EXPECT_EQ(p[0].first, "no-new-privileges");
    EXPECT_EQ(p[1].first, "/proc/sys");
    // no_new_privs on a helper that is root anyway (a root proxy) takes nothing away.
    EXPECT_EQ(container_problems(false, f).size(), 1u);
}
