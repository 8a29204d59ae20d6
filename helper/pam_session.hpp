// pam_session.hpp: a PAM session for the tenant, opened and closed by the
// root parent (as su/runuser do), in util-linux's fixed order.
#pragma once

#include <security/pam_appl.h>

#include <memory>
#include <string>
#include <vector>

#include "result.hpp"

namespace clihost {

class PamSession {
public:
    // pam_start(service, tenant) -> PAM_RUSER/PAM_TTY -> pam_acct_mgmt ->
    // pam_setcred(ESTABLISH) -> pam_open_session. No pam_authenticate: the
    // caller was authorised by our own policy and no password is ever asked.
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
    // pam_setcred(DELETE) -> pam_close_session -> pam_end.
    Status close();

private:
    explicit PamSession(pam_handle_t* h) : handle_(h) {}
    pam_handle_t* handle_;
    bool cred_established_{false};
    bool session_open_{false};
};

}  // namespace clihost
