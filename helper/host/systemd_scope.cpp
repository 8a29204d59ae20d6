// systemd_scope.cpp: StartTransientUnit over sd-bus, loaded with dlopen
// (systemd_scope.hpp says why).
#include "host/systemd_scope.hpp"

#include <dlfcn.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

#include "base/file_read.hpp"
#include "version.hpp"
#include "host/trusted_path.hpp"

namespace clihost {
namespace {

// sd-bus's types and functions as <systemd/sd-bus.h> declares them (the
// objects are opaque; sd_bus_error is three words).
struct Bus;
struct Message;
struct BusError {
    const char* name;
    const char* message;
    int need_free;
};

struct SdBus {
    int (*bus_new)(Bus**);
    int (*set_address)(Bus*, const char*);
    int (*start)(Bus*);
    Bus* (*flush_close_unref)(Bus*);
    int (*new_method_call)(Bus*, Message**, const char*, const char*, const char*, const char*);
    int (*append)(Message*, const char*, ...);
    int (*open_container)(Message*, char, const char*);
    int (*close_container)(Message*);
    int (*call)(Bus*, Message*, std::uint64_t, BusError*, Message**);
    Message* (*message_unref)(Message*);
    void (*error_free)(BusError*);
};

constexpr const char* kPrivateBus = "unix:path=/run/systemd/private";
constexpr std::uint64_t kCallMicros = 5'000'000;
constexpr int kMoveWaitMs = 5000;

template <class Fn>
bool bind(void* lib, const char* name, Fn& out) {
    void* sym = ::dlsym(lib, name);
    out = reinterpret_cast<Fn>(sym);  // POSIX: a dlsym result converts to a function pointer
    return sym != nullptr;
}

Result<const SdBus*> load() {
    static SdBus table{};
    static bool loaded = false;
    if (loaded) return &table;
    // The configured path's target (libsystemd.so.0 is a symlink to the
    // versioned file), proven root's all the way down, then loaded by that path.
    char real[PATH_MAX];
    if (::realpath(CLIHOST_JAIL_LIBSYSTEMD, real) == nullptr)
        return fail(Exit::host, std::string("systemd runs but ") + CLIHOST_JAIL_LIBSYSTEMD + " is missing: " +
                                    std::strerror(errno) + " (install libsystemd0)");
    auto trusted = open_trusted(real, Trust::must_exist);
    if (!trusted) return trusted.error();
    void* lib = ::dlopen(real, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
        const char* err = ::dlerror();
        return fail(Exit::host, std::string("cannot load libsystemd: ") + (err != nullptr ? err : "unknown error"));
    }
    SdBus t{};
    if (!bind(lib, "sd_bus_new", t.bus_new) || !bind(lib, "sd_bus_set_address", t.set_address) ||
        !bind(lib, "sd_bus_start", t.start) || !bind(lib, "sd_bus_flush_close_unref", t.flush_close_unref) ||
        !bind(lib, "sd_bus_message_new_method_call", t.new_method_call) ||
        !bind(lib, "sd_bus_message_append", t.append) ||
        !bind(lib, "sd_bus_message_open_container", t.open_container) ||
        !bind(lib, "sd_bus_message_close_container", t.close_container) || !bind(lib, "sd_bus_call", t.call) ||
        !bind(lib, "sd_bus_message_unref", t.message_unref) || !bind(lib, "sd_bus_error_free", t.error_free))
        return fail(Exit::host, "libsystemd lacks an sd-bus function the helper calls");
    table = t;
    loaded = true;
    return &table;
}

// The connection and messages, released on every path.
struct Held {
    const SdBus* sd;
    Bus* bus{nullptr};
    Message* call{nullptr};
    Message* reply{nullptr};
    BusError error{nullptr, nullptr, 0};
    ~Held() {
        if (reply != nullptr) sd->message_unref(reply);
        if (call != nullptr) sd->message_unref(call);
        if (bus != nullptr) sd->flush_close_unref(bus);
        sd->error_free(&error);
    }
};

Error bus_fail(const std::string& what, int r) {
    return fail(Exit::host, "cannot ask systemd for a unit: " + what + ": " + std::strerror(-r));
}

// ExecStartEx's one command: (path, argv, ["no-env-expand"]).
int append_exec(const SdBus& sd, Message* m, const UnitProperty& p) {
    int r = sd.open_container(m, 'a', "(sasas)");
    if (r >= 0) r = sd.open_container(m, 'r', "sasas");
    if (r >= 0) r = sd.append(m, "s", p.text.c_str());
    if (r >= 0) r = sd.open_container(m, 'a', "s");
    for (const auto& w : p.words)
        if (r >= 0) r = sd.append(m, "s", w.c_str());
    if (r >= 0) r = sd.close_container(m);
    if (r >= 0) r = sd.append(m, "as", 1u, "no-env-expand");
    if (r >= 0) r = sd.close_container(m);
    if (r >= 0) r = sd.close_container(m);
    return r;
}

int append_property(const SdBus& sd, Message* m, const UnitProperty& p) {
    int r = sd.open_container(m, 'r', "sv");
    if (r >= 0) r = sd.append(m, "s", p.name.c_str());
    const char* sig = "s";
    switch (p.type) {
        case UnitProperty::Type::string: sig = "s"; break;
        case UnitProperty::Type::boolean: sig = "b"; break;
        case UnitProperty::Type::uint64: sig = "t"; break;
        case UnitProperty::Type::pids: sig = "au"; break;
        case UnitProperty::Type::fd: sig = "h"; break;
        case UnitProperty::Type::exec: sig = "a(sasas)"; break;
    }
    if (r >= 0) r = sd.open_container(m, 'v', sig);
    if (r >= 0) {
        switch (p.type) {
            case UnitProperty::Type::string: r = sd.append(m, "s", p.text.c_str()); break;
            case UnitProperty::Type::boolean: r = sd.append(m, "b", static_cast<int>(p.number != 0)); break;
            case UnitProperty::Type::uint64: r = sd.append(m, "t", static_cast<std::uint64_t>(p.number)); break;
            case UnitProperty::Type::pids:
                r = sd.append(m, "au", 1u, static_cast<std::uint32_t>(p.number));
                break;
            case UnitProperty::Type::fd: r = sd.append(m, "h", static_cast<int>(p.number)); break;
            case UnitProperty::Type::exec: r = append_exec(sd, m, p); break;
        }
    }
    if (r >= 0) r = sd.close_container(m);
    if (r >= 0) r = sd.close_container(m);
    return r;
}

// /proc/self/cgroup's text, or "" if it cannot be read.
std::string own_cgroups() {
    auto text = read_bounded("/proc/self/cgroup", 1 << 16);
    return text ? text.value() : std::string();
}

// The cgroup, in `t` (own_cgroups), of the hierarchy whose line names
// `controller` among its controllers ("name=systemd"; "" is the unified
// "0::" line), if there is such a line.
std::optional<std::string> cgroup_of(const std::string& t, std::string_view controller) {
    std::size_t pos = 0;
    while (pos < t.size()) {
        auto nl = t.find('\n', pos);
        if (nl == std::string::npos) nl = t.size();
        const std::string_view line = std::string_view(t).substr(pos, nl - pos);
        pos = nl + 1;
        const auto a = line.find(':');
        const auto b = a == std::string_view::npos ? a : line.find(':', a + 1);
        if (b == std::string_view::npos) continue;
        const std::string_view controllers = line.substr(a + 1, b - a - 1);
        for (std::size_t from = 0;;) {
            const auto comma = controllers.find(',', from);
            if (controllers.substr(from, comma == std::string_view::npos ? comma : comma - from) == controller)
                return std::string(line.substr(b + 1));
            if (comma == std::string_view::npos) break;
            from = comma + 1;
        }
    }
    return std::nullopt;
}

// This process's cgroup in systemd's own hierarchy: the v1 name=systemd
// line where there is one (legacy and hybrid layouts), else the unified
// "0::" line (cgroup v2; in a legacy layout systemd leaves that one alone).
std::string systemd_cgroup() {
    const std::string t = own_cgroups();
    if (auto named = cgroup_of(t, "name=systemd")) return *named;
    return cgroup_of(t, "").value_or("");
}

// Polls `where()` every 10 ms until it is `want`, kMoveWaitMs at most;
// `now` is what it said last.
template <class Where>
bool wait_until_in(Where where, const std::string& want, std::string& now) {
    for (int waited = 0; waited < kMoveWaitMs; waited += 10) {
        if ((now = where()) == want) return true;
        timespec ts{0, 10'000'000};
        ::nanosleep(&ts, nullptr);
    }
    return false;
}

}  // namespace


Result<UnitStart> start_unit(const std::string& name, const std::vector<UnitProperty>& props,
                             const std::string& what) {
    auto sd = load();
    if (!sd) return sd.error();
    Held h{sd.value()};
    const SdBus& s = *sd.value();
    int r = s.bus_new(&h.bus);
    if (r < 0) return bus_fail("sd_bus_new", r);
    if ((r = s.set_address(h.bus, kPrivateBus)) < 0) return bus_fail("sd_bus_set_address", r);
    if ((r = s.start(h.bus)) < 0) return bus_fail("cannot connect to /run/systemd/private", r);
    r = s.new_method_call(h.bus, &h.call, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                          "org.freedesktop.systemd1.Manager", "StartTransientUnit");
    if (r < 0) return bus_fail("sd_bus_message_new_method_call", r);
    if ((r = s.append(h.call, "ss", name.c_str(), "fail")) < 0) return bus_fail("the unit's name", r);
    if ((r = s.open_container(h.call, 'a', "(sv)")) < 0) return bus_fail("the properties", r);
    for (const auto& p : props)
        if ((r = append_property(s, h.call, p)) < 0) return bus_fail("the property " + p.name, r);
    if ((r = s.close_container(h.call)) < 0) return bus_fail("the properties", r);
    if ((r = s.append(h.call, "a(sa(sv))", 0u)) < 0) return bus_fail("the auxiliary units", r);
    if ((r = s.call(h.bus, h.call, kCallMicros, &h.error, &h.reply)) < 0) {
        if (h.error.name != nullptr && std::string_view(h.error.name) == "org.freedesktop.systemd1.UnitExists")
            return UnitStart::exists;
        const std::string why = h.error.message != nullptr ? h.error.message : std::strerror(-r);
        return fail(Exit::host, "systemd refused " + what + " " + name + ": " + why);
    }
    return UnitStart::started;
}

Status enter_scope(const std::string& name, const std::string& cgroup, const std::vector<UnitProperty>& props,
                   const std::string& what, const std::string& who) {
    auto started = start_unit(name, props, what);
    if (!started) return started.error();
    if (started.value() == UnitStart::exists)
        return fail(Exit::host, "systemd refused " + what + " " + name + ": the unit exists already");
    // The start job moves this process; wait for it (a deadline, not forever).
    std::string want(1, '/');
    want.append(cgroup);
    std::string now;
    if (wait_until_in(systemd_cgroup, want, now)) return ok_status();
    return fail(Exit::host, "systemd did not move " + who + " into " + name + " within 5 s (it is in " +
                                (now.empty() ? "no cgroup of systemd's" : now) + ")");
}

Status check_in_unit(const std::string& cgroup, const std::string& who) {
    const std::string now = systemd_cgroup();
    if (now == "/" + cgroup) return ok_status();
    return fail(Exit::host, who + " is not in its unit's cgroup /" + cgroup + " (it is in " +
                                (now.empty() ? "no cgroup of systemd's" : now) + ")");
}

Status wait_moved(const std::string& controller, const std::string& cgroup, const std::string& who) {
    std::string now;
    if (wait_until_in([&] { return cgroup_of(own_cgroups(), controller).value_or("none"); }, cgroup, now)) return ok_status();
    return fail(Exit::host, "systemd did not move " + who + " into " + cgroup + " of the " + controller +
                                " hierarchy within 5 s (it is in " + now + ")");
}

}  // namespace clihost
