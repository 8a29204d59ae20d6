// pam_dl.cpp: libpam loaded with dlopen on first use (see pam_dl.hpp).
#include "priv/pam_dl.hpp"

#include <dlfcn.h>

namespace clihost::pam_dl {
namespace {

template <class Fn>
bool bind(void* lib, const char* name, Fn& out) {
    void* sym = ::dlsym(lib, name);
    // POSIX: a data pointer from dlsym converts to a function pointer.
    out = reinterpret_cast<Fn>(sym);
    return sym != nullptr;
}

}  // namespace

const Api* api(std::string& why) {
    static Api table{};
    static bool loaded = false;
    if (loaded) return &table;
    void* lib = ::dlopen("libpam.so.0", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
        const char* err = ::dlerror();
        why = std::string("cannot load libpam: ") + (err != nullptr ? err : "unknown error");
        return nullptr;
    }
    Api t{};
    if (!bind(lib, "pam_start", t.start) || !bind(lib, "pam_end", t.end) || !bind(lib, "pam_set_item", t.set_item) ||
        !bind(lib, "pam_acct_mgmt", t.acct_mgmt) || !bind(lib, "pam_setcred", t.setcred) ||
        !bind(lib, "pam_open_session", t.open_session) || !bind(lib, "pam_close_session", t.close_session) ||
        !bind(lib, "pam_strerror", t.strerror) || !bind(lib, "pam_getenvlist", t.getenvlist)) {
        why = "libpam lacks a function the helper calls";
        return nullptr;  // the library stays loaded: harmless, and never used
    }
    (void)bind(lib, "pam_start_confdir", t.start_confdir);  // optional: nullptr when absent
    table = t;
    loaded = true;
    return &table;
}

}  // namespace clihost::pam_dl
