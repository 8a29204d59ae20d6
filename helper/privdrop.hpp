// privdrop.hpp: become the tenant for good, then prove it.
#pragma once

#include <sys/types.h>

#include <vector>

#include "result.hpp"

namespace clihost {

// Irreversibly drop to uid/gid with exactly `groups` as supplementary groups,
// clear every capability set (effective, permitted, inheritable, bounding,
// ambient) and set no_new_privs; then verify by reading the state back.
// Any failure is fatal for the caller (it must not exec anything).
Status drop_privileges(uid_t uid, gid_t gid, const std::vector<gid_t>& groups);

// Read-back of the current state; exposed so tests can assert on it.
Status verify_dropped(uid_t uid, gid_t gid, const std::vector<gid_t>& groups);

}  // namespace clihost
