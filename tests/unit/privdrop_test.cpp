// verify_dropped's failure paths. It reads the state of the calling process,
// so every case runs in a forked child that drops on its own and deliberately
// leaves one thing undropped; the child reports verify_dropped's answer
// through a pipe and _exits (it never returns into gtest). Becoming another
// user needs root: CI runs the unit tests as root, so without root these
// tests fail loudly instead of skipping.
#include <gtest/gtest.h>

#include <cap-ng.h>
#include <grp.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <string>

#include "child_process.hpp"
#include "priv/privdrop.hpp"

using namespace clihost;

namespace {

// The tenant stand-in: nobody/nogroup's ids, whatever the host calls them.
constexpr uid_t kUid = 65534;
constexpr gid_t kGid = 65534;
const std::vector<gid_t> kGroups{kGid};

// One drop step each, so a case can leave exactly one of them out.
bool clear_bounding() {
    capng_clear(CAPNG_SELECT_BOTH);
    return capng_apply(CAPNG_SELECT_BOUNDS) == 0;
}
bool set_groups(const std::vector<gid_t>& g) { return ::setgroups(g.size(), g.data()) == 0; }
bool set_gids(gid_t r, gid_t e, gid_t s) { return ::setresgid(r, e, s) == 0; }
bool set_uids(uid_t r, uid_t e, uid_t s) { return ::setresuid(r, e, s) == 0; }
bool no_new_privs() { return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0; }
bool dumpable(int flag) { return ::prctl(PR_SET_DUMPABLE, flag, 0, 0, 0) == 0; }
// With KEEPCAPS the permitted set survives setresuid; raise `caps` into the
// effective set again (what a "drop" that forgot the capabilities leaves).
bool keep_caps_effective(std::initializer_list<int> caps) {
    capng_clear(CAPNG_SELECT_CAPS);
    for (int c : caps)
        if (capng_update(CAPNG_ADD, static_cast<capng_type_t>(CAPNG_EFFECTIVE | CAPNG_PERMITTED), c) != 0) return false;
    return capng_apply(CAPNG_SELECT_CAPS) == 0;
}

// Every id dropped, but with KEEPCAPS and `caps` raised again: the drop
// that "forgot" the capabilities (no_new_privs left to the caller).
bool drop_keeping(std::initializer_list<int> caps) {
    return clear_bounding() && set_groups(kGroups) && set_gids(kGid, kGid, kGid) &&
           ::prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) == 0 && set_uids(kUid, kUid, kUid) && keep_caps_effective(caps);
}

// Runs `setup` (false: the setup itself failed) and then verify_dropped in a
// forked child; returns "ok", verify's message, or "setup failed: ...".
std::string verify_in_child(const std::function<bool()>& setup) {
    const auto r = clihost::testing::run_in_child([&](int fd) {
        std::string out;
        if (!setup()) {
            out = "setup failed: " + std::string(std::strerror(errno));
        } else {
            const auto st = verify_dropped(kUid, kGid, kGroups);
            out = st ? "ok" : st.error().message;
        }
        if (::write(fd, out.data(), out.size()) != static_cast<ssize_t>(out.size())) ::_exit(1);
    });
    return r.exited_zero() ? r.output : "child failed: " + r.output;
}

class VerifyDropped : public ::testing::Test {
protected:
    void SetUp() override {
        // Not a skip: CI always runs as root, and these are the proof that a
        // half-done drop is caught (SECURITY.md guarantee 9).
        ASSERT_EQ(::geteuid(), 0u) << "privdrop tests need root (run the unit tests as root, as CI does)";
    }
};

}  // namespace

// Positive control: the real drop passes the read-back, so each case below
// fails for the one step it leaves out.
TEST_F(VerifyDropped, AcceptsTheRealDrop) {
    EXPECT_EQ(verify_in_child([] { return drop_privileges(kUid, kGid, kGroups).ok(); }), "ok");
    EXPECT_EQ(verify_in_child([] {
                  return clear_bounding() && set_groups(kGroups) && set_gids(kGid, kGid, kGid) &&
                         set_uids(kUid, kUid, kUid) && no_new_privs() && dumpable(0);
              }),
              "ok");
}

TEST_F(VerifyDropped, ADumpableProcessIsCaught) {
    // Everything dropped, but the tenant could read and ptrace it.
    EXPECT_EQ(verify_in_child([] {
                  return clear_bounding() && set_groups(kGroups) && set_gids(kGid, kGid, kGid) &&
                         set_uids(kUid, kUid, kUid) && no_new_privs() && dumpable(1);
              }),
              "privilege drop not verified: dumpable");
}

TEST_F(VerifyDropped, NothingDroppedIsCaughtAtTheUids) {
    EXPECT_EQ(verify_in_child([] { return true; }), "privilege drop not verified: uids");
}

TEST_F(VerifyDropped, SavedUidZeroIsCaught) {
    EXPECT_EQ(verify_in_child([] {
                  return clear_bounding() && set_groups(kGroups) && set_gids(kGid, kGid, kGid) &&
                         set_uids(kUid, kUid, 0) && no_new_privs();
              }),
              "privilege drop not verified: uids");
}

TEST_F(VerifyDropped, SavedGidZeroIsCaught) {
    EXPECT_EQ(verify_in_child([] {
                  return clear_bounding() && set_groups(kGroups) && set_gids(kGid, kGid, 0) &&
                         set_uids(kUid, kUid, kUid) && no_new_privs();
              }),
              "privilege drop not verified: gids");
}

TEST_F(VerifyDropped, FsuidOrFsgidLeftAtZeroIsCaught) {
    // setfsuid/setfsgid return the previous value; asking for -1 changes nothing.
    struct Case {
        int cap;
        int (*set_fs)(unsigned);
        const char* message;
    };
    for (const Case& c : {Case{CAP_SETUID, [](unsigned id) { return ::setfsuid(id); }, "privilege drop not verified: fsuid"},
                          Case{CAP_SETGID, [](unsigned id) { return ::setfsgid(id); }, "privilege drop not verified: fsgid"}}) {
        EXPECT_EQ(verify_in_child([&c] {
                      if (!drop_keeping({c.cap})) return false;
                      c.set_fs(0);
                      return c.set_fs(static_cast<unsigned>(-1)) == 0 && no_new_privs();
                  }),
                  c.message);
    }
}

TEST_F(VerifyDropped, RootsSupplementaryGroupsLeftAreCaught) {
    EXPECT_EQ(verify_in_child([] {
                  return clear_bounding() && set_groups({0, kGid}) && set_gids(kGid, kGid, kGid) &&
                         set_uids(kUid, kUid, kUid) && no_new_privs();
              }),
              "privilege drop not verified: supplementary groups");
}

TEST_F(VerifyDropped, RegainableRootIsCaught) {
    // Every id dropped, but CAP_SETUID kept in the effective set: setuid(0) works.
    EXPECT_EQ(verify_in_child([] { return drop_keeping({CAP_SETUID}) && no_new_privs(); }),
              "privilege drop not verified: setuid(0) succeeded");
}

TEST_F(VerifyDropped, CapabilitiesKeptAcrossTheUidChangeAreCaught) {
    // KEEPCAPS: the permitted set survives setresuid (effective is cleared,
    // so setuid(0) still fails and only the capability read-back can tell).
    EXPECT_EQ(verify_in_child([] {
                  return clear_bounding() && set_groups(kGroups) && set_gids(kGid, kGid, kGid) &&
                         ::prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) == 0 && set_uids(kUid, kUid, kUid) && no_new_privs();
              }),
              "privilege drop not verified: capabilities remain");
}

TEST_F(VerifyDropped, FullBoundingSetIsCaught) {
    EXPECT_EQ(verify_in_child([] {
                  return set_groups(kGroups) && set_gids(kGid, kGid, kGid) && set_uids(kUid, kUid, kUid) &&
                         no_new_privs();
              }),
              "privilege drop not verified: bounding set not empty");
}

TEST_F(VerifyDropped, OneCapabilityLeftInTheBoundingSetIsCaught) {
    EXPECT_EQ(verify_in_child([] {
                  capng_clear(CAPNG_SELECT_BOTH);
                  if (capng_update(CAPNG_ADD, CAPNG_BOUNDING_SET, CAP_NET_RAW) != 0 ||
                      capng_apply(CAPNG_SELECT_BOUNDS) != 0)
                      return false;
                  return set_groups(kGroups) && set_gids(kGid, kGid, kGid) && set_uids(kUid, kUid, kUid) &&
                         no_new_privs();
              }),
              "privilege drop not verified: bounding set not empty");
}

TEST_F(VerifyDropped, MissingNoNewPrivsIsCaught) {
    EXPECT_EQ(verify_in_child([] {
                  return clear_bounding() && set_groups(kGroups) && set_gids(kGid, kGid, kGid) &&
                         set_uids(kUid, kUid, kUid);
              }),
              "privilege drop not verified: no_new_privs not set");
}
