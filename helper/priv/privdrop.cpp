// privdrop.cpp: the one place where root becomes the tenant. The order is
// fixed and each step names the attack it stops (after minijail's order).
#include "priv/privdrop.hpp"

#include <cap-ng.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "base/fault.hpp"
#include "base/log.hpp"

namespace clihost {
namespace {

Error drop_failed(const char* step) {
    return fail(Exit::internal, std::string("privilege drop failed at ") + step + ": " + std::strerror(errno));
}

}  // namespace

Status drop_privileges(uid_t uid, gid_t gid, const std::vector<gid_t>& groups) {
    if (uid == 0 || gid == 0) return fail(Exit::internal, "refusing to \"drop\" to uid or gid 0");

    // 1. Bounding set first, while we still hold CAP_SETPCAP: a file
    //    capability on some binary in the jail could otherwise grant caps back.
    //    Every capability the kernel knows, up to its first EINVAL past the
    //    ones this header knows, dropped with prctl itself. (libcap-ng's
    //    capng_apply(CAPNG_SELECT_BOUNDS) drops the same ones but first
    //    parses /proc/TID/status, which alone cost two thirds of the whole
    //    drop: issue 15.) Dropping an absent capability is not an error.
    if (!fault::fail("skip_bounding")) {
        for (int cap = 0; cap < 64; ++cap) {
            if (fault::fail("bounding_set")) errno = EPERM;
            else if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0) continue;
            if (errno == EINVAL && cap > CAP_LAST_CAP) break;
            return drop_failed("clearing the bounding set");
        }
    }
    // 2. Ambient set: inherited across exec for non-setuid programs.
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) return drop_failed("clearing ambient caps");
    // 3. Supplementary groups: root's (or the caller's) groups must not leak
    //    into the jail; the tenant's own groups replace them exactly.
    if (fault::fail("setgroups") || ::setgroups(groups.size(), groups.data()) != 0) return drop_failed("setgroups");
    // 4. gid before uid: after setresuid we could no longer change it.
    if (fault::fail("setresgid") || ::setresgid(gid, gid, gid) != 0) return drop_failed("setresgid");
    // 5. The uids, in two steps, so that the tenant never sees this process
    //    dumpable. A change of effective uid resets the dumpable flag to
    //    fs.suid_dumpable (1, "dumpable", on some hosts), and a process
    //    whose real, effective and saved uids are all the tenant's can then
    //    be read and ptraced by the tenant while it still holds the helper's
    //    memory and descriptors (the kernel's ptrace check wants all three).
    //    So: real and effective first, saved still 0; then not dumpable;
    //    then the saved uid, a change of neither the effective nor the file
    //    system ids that only empties the permitted set, after which the
    //    kernel leaves the flag as it is.
    const bool skip_uids = fault::fail("skip_setresuid");  // test builds: a drop that did nothing
    if (fault::fail("setresuid") || (!skip_uids && ::setresuid(uid, uid, 0) != 0)) return drop_failed("setresuid");
    // Test builds only: hold still where the kernel has just reset the flag.
    if (fault::fail("pause_mid_drop")) ::sleep(2);
    if (fault::fail("dumpable") || ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
        return fail(Exit::internal, "cannot make the tenant's process not dumpable");
    if (!skip_uids && ::setresuid(uid, uid, uid) != 0) return drop_failed("setresuid");
    // 6. Effective/permitted/inheritable caps: setresuid already cleared them
    //    (no KEEPCAPS), clear them explicitly so a securebits surprise cannot keep them.
    capng_clear(CAPNG_SELECT_BOTH);
    if (fault::fail("capng_caps") || capng_apply(CAPNG_SELECT_CAPS) != 0) return drop_failed("clearing capabilities");
    // 7. no_new_privs: setuid/setgid binaries and file caps inside the jail
    //    grant nothing (a setuid-root binary on a ro-bound /usr stays harmless).
    if (!fault::fail("skip_no_new_privs") && ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return drop_failed("no_new_privs");
    return verify_dropped(uid, gid, groups);
}

Status enter_tenant(const TenantCreds& who, pid_t expected_parent, int deathsig) {
    if (auto st = drop_privileges(who.uid, who.gid, who.groups); !st) return st;
    // Test builds only: hold still here, the tenant's side of every path,
    // so a test can try to read this process's memory and environ.
    if (fault::fail("pause_as_tenant")) ::sleep(2);
    if (::prctl(PR_SET_PDEATHSIG, deathsig, 0, 0, 0) != 0 || ::getppid() != expected_parent)
        return fail(Exit::internal, "cannot tie the jail to its parent");
    return ok_status();
}

void report_tenant_failure(const Error& e) noexcept {
    try {
        log::refuse("fail", e.message);
    } catch (...) {
        // Nothing more to say: the exit code still says it.
    }
}

Status verify_dropped(uid_t uid, gid_t gid, const std::vector<gid_t>& groups) {
    auto bad = [](const std::string& what) { return fail(Exit::internal, "privilege drop not verified: " + what); };
    uid_t ru = 0, eu = 0, su = 0;
    gid_t rg = 0, eg = 0, sg = 0;
    if (::getresuid(&ru, &eu, &su) != 0 || ru != uid || eu != uid || su != uid) return bad("uids");
    if (::getresgid(&rg, &eg, &sg) != 0 || rg != gid || eg != gid || sg != gid) return bad("gids");
    // setfsuid returns the previous value; asking for an impossible one reads it.
    if (static_cast<uid_t>(::setfsuid(static_cast<uid_t>(-1))) != uid) return bad("fsuid");
    if (static_cast<gid_t>(::setfsgid(static_cast<gid_t>(-1))) != gid) return bad("fsgid");
    const int n = ::getgroups(0, nullptr);
    std::vector<gid_t> now(static_cast<std::size_t>(std::max(n, 0)));
    if (n < 0 || ::getgroups(n, now.data()) != n) return bad("getgroups");
    auto want = groups;
    std::sort(now.begin(), now.end());
    std::sort(want.begin(), want.end());
    want.erase(std::unique(want.begin(), want.end()), want.end());
    now.erase(std::unique(now.begin(), now.end()), now.end());
    if (now != want) return bad("supplementary groups");
    // The proof that root cannot be regained: these must fail.
    if (::setuid(0) == 0 || ::seteuid(0) == 0 || ::setgid(0) == 0) return bad("setuid(0) succeeded");
    // Effective, permitted and inheritable sets straight from the kernel:
    // libcap-ng's capng_have_capabilities(CAPNG_SELECT_CAPS) looks at the
    // effective set only, and a permitted set left full (a drop done with
    // PR_SET_KEEPCAPS, say) is one capset() away from root's powers.
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct sets[_LINUX_CAPABILITY_U32S_3]{};
    if (::syscall(SYS_capget, &header, sets) != 0) return bad("cannot read capabilities");
    for (const auto& word : sets)
        if (word.effective != 0 || word.permitted != 0 || word.inheritable != 0) return bad("capabilities remain");
    // Bounding and ambient sets straight from the kernel, not through the
    // library that did the drop: libcap-ng parses the bounding set out of
    // /proc/PID/status, which a /proc of another pid namespace misreports,
    // and a library that did nothing would say whatever it says. Ask up to
    // 63: the kernel says EINVAL past its last capability, whatever this
    // header knows.
    for (int cap = 0; cap < 64; ++cap) {
        const int bounded = ::prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
        if (bounded < 0 && cap <= CAP_LAST_CAP) return bad("cannot read the bounding set");
        if (bounded < 0) break;
        if (bounded == 1) return bad("bounding set not empty");
        if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0) == 1) return bad("ambient capabilities remain");
    }
    if (::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) return bad("no_new_privs not set");
    if (::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0) return bad("dumpable");
    return ok_status();
}

}  // namespace clihost
