// pam_session.hpp: a PAM session for the tenant, opened and closed by the
// root parent (as su/runuser do), in the order of util-linux su-common.c:
//   open:  pam_start -> set_item -> pam_acct_mgmt -> pam_setcred(ESTABLISH)
//          -> pam_open_session                      (su: supam_authenticate,
//                                                    init_groups, supam_open_session)
//   close: pam_close_session -> pam_setcred(DELETE) -> pam_end  (su: supam_cleanup)
// Where this differs from su, on purpose:
// - No pam_authenticate (su calls it, runuser does not): the caller was
//   authorised by the policy, and no password is ever asked.
// - Supplementary groups. su calls initgroups() in the root parent *before*
//   pam_setcred, so that pam_group can add groups to the process, which the
//   shell then inherits. Here the root parent keeps its own groups through
//   pam_setcred, and the jail's side installs exactly the tenant's validated
//   groups with setgroups() (privdrop.cpp), which discards whatever a module
//   added: pam_group is NOT supported. Its groups would reach the jail without
//   passing validate_tenant's rules (no group 0, say), and verify_dropped
//   checks the groups against exactly the validated list. Putting pam_group
//   in the service is harmless but grants nothing. (Not following su here
//   changes nothing else: the session modules of pam/clihost-jail do not
//   read the process's groups.)
#pragma once

#include <security/pam_appl.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace clihost {

// Does a PAM service file's text name other files (`@include`, or the
// `include` and `substack` controls)? libpam resolves those relative to the
// directory it read the service from. Conservative: any such token outside
// a comment counts. Pure.
bool pam_service_names_other_files(std::string_view text);

// Where libpam reads SERVICE from: RUNTIME/pam.d (RuntimeDir::pam_confdir:
// the service's own modules, none of /etc/pam.d/other's), or "" for
// libpam's own lookup in /etc/pam.d, which also loads "other". The latter
// when the service names other files (they would not be found beside the
// link), when libpam has no pam_start_confdir, or when the runtime
// directory cannot hold the link: slower, never less strict than any PAM
// application's. An error (exit 3) when /etc/pam.d/SERVICE is not a
// trusted file (check_pam_service).
Result<std::string> pam_confdir_for(const std::string& service);

class PamSession {
public:
    // pam_start(service, tenant) -> PAM_RUSER, PAM_TTY (if stdin is a
    // terminal) -> pam_acct_mgmt -> pam_setcred(ESTABLISH) -> pam_open_session.
    // A failure past pam_setcred unwinds what was done (see close()).
    static Result<std::unique_ptr<PamSession>> open(const std::string& service, const std::string& tenant,
                                                    const std::string& ruser, const std::string& tty);
    // For `check`: pam_start -> PAM_RUSER -> pam_acct_mgmt -> pam_end. Would
    // the tenant pass the account checks that `run` makes? No session, no
    // credentials, no side effects beyond what the account modules do.
    static Status check_account(const std::string& service, const std::string& tenant, const std::string& ruser);
    ~PamSession();  // closes if still open
    PamSession(const PamSession&) = delete;
    PamSession& operator=(const PamSession&) = delete;

    // pam_env's variables for the tenant ("NAME=value").
    std::vector<std::string> environment() const;
    // su's order: pam_close_session (if open) -> pam_setcred(DELETE) (if
    // established) -> pam_end. The first failure is reported; every step runs.
    Status close();

private:
    explicit PamSession(pam_handle_t* h) : handle_(h) {}
    pam_handle_t* handle_;
    bool cred_established_{false};
    bool session_open_{false};
};

}  // namespace clihost
