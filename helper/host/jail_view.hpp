// jail_view.hpp: the files a session jail reads about itself, kept by its
// supervisor outside the runtime directory (which is 0700: a tenant's
// bwrap, running as the tenant, cannot reach a path under it to bind).
// kJailViewRoot (decide/plan.hpp) is root's, mode 0711 (no listing); each
// tenant's directory, jail_view_dir(UID), root's 0755 (the tenant's
// bwrap, which runs as the tenant, must reach it to bind it), holds
// jail.json, root's 0644 (nothing in it that the config file does not
// say), replaced whole (a rename) so that a jail binding the directory
// read-only never reads half a file. Nothing of it is the tenant's to
// write, inside the jail (read-only) or outside.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/result.hpp"

namespace clihost {

// Makes the root and the tenant's directory if absent (a root that is not
// root's directory with mode 0711 is refused, exit 3) and replaces its
// jail.json with `text`.
Status write_jail_view(uid_t uid, const std::string& text);

// Removes the tenant's jail.json and directory, under the tenant's lock
// once its supervisor and jails are gone (`stop`; a supervisor whose start
// failed): never at a supervisor's end, when the next one may have written
// it already. Quiet: nothing to remove is fine.
void remove_jail_view(uid_t uid);

}  // namespace clihost
