// pam_dl.hpp: libpam, loaded on first use. A launch without a PAM session
// (`session = false`, print, list, stop) never maps it: the dynamic linker
// would otherwise load and relocate libpam and libaudit at every start of
// this setuid binary (bench: about 0.3 ms per launch on a 2-vCPU VM).
// The calls, their arguments and their order are pam_session.cpp's, exactly
// as before: only where the functions come from changed.
#pragma once

#include <security/pam_appl.h>

#include <string>

namespace clihost::pam_dl {

// The libpam functions pam_session.cpp calls.
struct Api {
    int (*start)(const char*, const char*, const pam_conv*, pam_handle_t**);
    int (*end)(pam_handle_t*, int);
    int (*set_item)(pam_handle_t*, int, const void*);
    int (*acct_mgmt)(pam_handle_t*, int);
    int (*setcred)(pam_handle_t*, int);
    int (*open_session)(pam_handle_t*, int);
    int (*close_session)(pam_handle_t*, int);
    const char* (*strerror)(pam_handle_t*, int);
    char** (*getenvlist)(pam_handle_t*);
    // Linux-PAM 1.4 and later; nullptr before (pam_session.cpp then uses
    // pam_start, libpam's own lookup).
    int (*start_confdir)(const char*, const char*, const pam_conv*, const char*, pam_handle_t**);
};

// libpam.so.0 by its soname (the lookup ld.so makes for a NEEDED entry; in a
// setuid process the environment's library paths are ignored), RTLD_NOW
// (every symbol bound before use, as -z now does for the binary) and
// RTLD_LOCAL (nothing of it joins the global namespace; the service's
// modules link libpam themselves and get this same copy). Loaded once and
// kept; nullptr with `why` set when it cannot be loaded or lacks a function.
const Api* api(std::string& why);

}  // namespace clihost::pam_dl
