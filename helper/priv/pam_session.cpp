// pam_session.cpp: Linux-PAM calls with a non-interactive conversation.
#include "priv/pam_session.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/fault.hpp"
#include "base/file_read.hpp"
#include "priv/pam_dl.hpp"
#include "host/runtime_state.hpp"
#include "host/trusted_path.hpp"

namespace clihost {

bool pam_service_names_other_files(std::string_view text) {
    auto lower_is = [](std::string_view tok, std::string_view word) {
        if (tok.size() != word.size()) return false;
        for (std::size_t i = 0; i < tok.size(); ++i)
            if ((tok[i] >= 'A' && tok[i] <= 'Z' ? tok[i] - 'A' + 'a' : tok[i]) != word[i]) return false;
        return true;
    };
    std::size_t at = 0;
    while (at < text.size()) {
        std::size_t end = text.find('\n', at);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(at, end - at);
        at = end + 1;
        if (const auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
        std::size_t i = 0;
        while (i < line.size()) {
            while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\v' ||
                                       line[i] == '\f' || line[i] == '\\'))
                ++i;
            std::size_t j = i;
            while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r' && line[j] != '\v' &&
                   line[j] != '\f' && line[j] != '\\')
                ++j;
            std::string_view tok = line.substr(i, j - i);
            i = j;
            if (tok.empty()) continue;
            if (tok.front() == '-') tok.remove_prefix(1);  // "-session": a type whose load errors are silent
            if (lower_is(tok.substr(0, 8), "@include") || lower_is(tok, "include") || lower_is(tok, "substack"))
                return true;
        }
    }
    return false;
}

Result<std::string> pam_confdir_for(const std::string& service) {
    auto file = open_trusted("/etc/pam.d/" + service, Trust::must_exist);
    if (!file) return fail(Exit::host, "PAM service " + service + ": " + file.error().message);
    auto text = read_bounded(file.value().fd.get(), std::size_t{64} * 1024, "/etc/pam.d/" + service);
    if (!text) return text.error();
    std::string why;
    const pam_dl::Api* pam = pam_dl::api(why);
    if (pam == nullptr || pam->start_confdir == nullptr || pam_service_names_other_files(text.value()))
        return std::string();
    auto dir = RuntimeDir::open();
    if (!dir) return std::string();
    auto confdir = dir.value().pam_confdir(service);
    return confdir ? confdir.value() : std::string();
}

namespace {

// Never prompts: a module that wants a password or an answer gets an error,
// so nothing can block a terminal or read the caller's keystrokes as root.
// Informational and error messages go to stderr.
int quiet_conversation(int n, const pam_message** msgs, pam_response** resp, void*) {
    if (n <= 0 || n > PAM_MAX_NUM_MSG) return PAM_CONV_ERR;
    for (int i = 0; i < n; ++i) {
        const int style = msgs[i]->msg_style;
        if (style == PAM_ERROR_MSG || style == PAM_TEXT_INFO) {
            if (msgs[i]->msg != nullptr) (void)std::fprintf(stderr, "clihost-jail: pam: %s\n", msgs[i]->msg);
            continue;
        }
        return PAM_CONV_ERR;
    }
    // Only messages, no prompts: an (empty) response array is still owed.
    *resp = static_cast<pam_response*>(std::calloc(static_cast<std::size_t>(n), sizeof(pam_response)));
    return *resp == nullptr ? PAM_BUF_ERR : PAM_SUCCESS;
}

// Only called once a handle exists, so libpam is loaded.
const pam_dl::Api& loaded_pam() {
    std::string ignored;
    return *pam_dl::api(ignored);
}

Error pam_error(pam_handle_t* h, const char* step, int rc) {
    return fail(Exit::refused, std::string("PAM ") + step + " refused the tenant: " + loaded_pam().strerror(h, rc));
}

// pam_start for the tenant with PAM_RUSER (and PAM_TTY if any) set.
Result<pam_handle_t*> start_handle(const std::string& service, const std::string& tenant, const std::string& ruser,
                                   const std::string& tty) {
    static const pam_conv conv{quiet_conversation, nullptr};
    std::string why;
    const pam_dl::Api* pam = pam_dl::api(why);
    if (pam == nullptr) return fail(Exit::host, "PAM start failed for service " + service + ": " + why);
    auto confdir = pam_confdir_for(service);
    if (!confdir) return confdir.error();
    pam_handle_t* h = nullptr;
    int rc = PAM_SYSTEM_ERR;
    if (fault::fail("pam_start")) rc = PAM_SYSTEM_ERR;
    else if (confdir.value().empty()) rc = pam->start(service.c_str(), tenant.c_str(), &conv, &h);
    else rc = pam->start_confdir(service.c_str(), tenant.c_str(), &conv, confdir.value().c_str(), &h);
    if (rc != PAM_SUCCESS) {
        if (h != nullptr) pam->end(h, rc);
        return fail(Exit::host, "PAM start failed for service " + service);
    }
    if ((rc = pam->set_item(h, PAM_RUSER, ruser.c_str())) != PAM_SUCCESS ||
        (!tty.empty() && (rc = pam->set_item(h, PAM_TTY, tty.c_str())) != PAM_SUCCESS)) {
        Error e = pam_error(h, "set_item", rc);
        pam->end(h, rc);
        return e;
    }
    return h;
}

}  // namespace

Result<std::unique_ptr<PamSession>> PamSession::open(const std::string& service, const std::string& tenant,
                                                     const std::string& ruser, const std::string& tty) {
    auto started = start_handle(service, tenant, ruser, tty);
    if (!started) return started.error();
    pam_handle_t* h = started.value();
    const pam_dl::Api& pam = loaded_pam();
    std::unique_ptr<PamSession> s(new PamSession(h));
    // Account checks: an expired tenant gets no terminal.
    int rc = fault::fail("pam_acct") ? PAM_ACCT_EXPIRED : pam.acct_mgmt(h, PAM_SILENT);
    if (rc != PAM_SUCCESS) return pam_error(h, "account check", rc);
    if ((rc = pam.setcred(h, PAM_ESTABLISH_CRED | PAM_SILENT)) != PAM_SUCCESS) return pam_error(h, "setcred", rc);
    s->cred_established_ = true;
    rc = fault::fail("pam_open") ? PAM_SESSION_ERR : pam.open_session(h, PAM_SILENT);
    if (rc != PAM_SUCCESS) return pam_error(h, "open_session", rc);
    s->session_open_ = true;
    return s;
}

Status PamSession::check_account(const std::string& service, const std::string& tenant, const std::string& ruser) {
    auto started = start_handle(service, tenant, ruser, {});
    if (!started) return started.error();
    pam_handle_t* h = started.value();
    const pam_dl::Api& pam = loaded_pam();
    const int rc = pam.acct_mgmt(h, PAM_SILENT);
    Status st = rc == PAM_SUCCESS ? ok_status() : Status(pam_error(h, "account check", rc));
    pam.end(h, rc);
    return st;
}

std::vector<std::string> PamSession::environment() const {
    std::vector<std::string> out;
    char** list = loaded_pam().getenvlist(handle_);
    if (list == nullptr) return out;
    for (char** e = list; *e != nullptr; ++e) {
        out.emplace_back(*e);
        std::free(*e);
    }
    std::free(list);
    return out;
}

Status PamSession::close() {
    if (handle_ == nullptr) return ok_status();
    const pam_dl::Api& pam = loaded_pam();
    int rc = PAM_SUCCESS;
    std::string failed;
    if (session_open_ && (rc = pam.close_session(handle_, PAM_SILENT)) != PAM_SUCCESS) failed = "close_session";
    session_open_ = false;
    if (cred_established_) {
        const int rc2 = pam.setcred(handle_, PAM_DELETE_CRED | PAM_SILENT);
        if (rc2 != PAM_SUCCESS && failed.empty()) { failed = "setcred(DELETE)"; rc = rc2; }
    }
    cred_established_ = false;
    const std::string msg = failed.empty() ? "" : std::string("PAM ") + failed + ": " + pam.strerror(handle_, rc);
    pam.end(handle_, rc);
    handle_ = nullptr;
    if (!failed.empty()) return fail(Exit::internal, msg);
    return ok_status();
}

PamSession::~PamSession() { (void)close(); }

}  // namespace clihost
