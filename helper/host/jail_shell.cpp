// jail_shell.cpp: routes::check_jail_shell (routes.hpp), apart from the
// rest of routes.cpp (check's diagnostics): the setuid front runs it for
// every `run`, and links nothing else of that file.
#include <sys/stat.h>

#include "host/routes.hpp"
#include "host/trusted_path.hpp"

namespace clihost::routes {

Status check_jail_shell(const Policy& policy) {
    if (policy.shell.empty()) return ok_status();
    auto f = open_trusted(policy.shell, Trust::must_exist);
    if (!f) return fail(Exit::host, "[jail] shell " + f.error().message);
    if ((f.value().st.st_mode & S_IXOTH) == 0)
        return fail(Exit::host, "[jail] shell " + policy.shell + " is not executable by others");
    return ok_status();
}

}  // namespace clihost::routes
