// runtime_state.hpp: which supervisor serves which tenant's session jail.
// Kept in a root-owned 0700 directory (CLIHOST_JAIL_RUNTIME_DIR, default
// /run/clihost-jail), never in the tenant's home: a tenant who could write
// it could point `stop` at any process, or make `run` attach to a jail of
// its own making. Nothing here is trusted blindly: a record names a pid, its
// start time and the boot, and counts only while all three still match a
// process running this very program as root.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "base/unique_fd.hpp"
#include "decide/tenant_output.hpp"
#include "decide/jail_settings.hpp"

namespace clihost {

// The record format this build writes: v4, a supervisor that is the
// program clihost-jail-supervisor (the split by privilege), naming its
// endpoint (UID.sock in the runtime directory), which speaks protocol
// version 3 (decide/request.hpp: list and kill are queries). A v3 record is
// the supervisor of a build before the split (a fork of the setuid image)
// speaking the same protocol: served and listed (`earlier_version`) until
// `stop`. A v2 record is a supervisor of protocol version 2, a v1 record a
// session jail of a build before the owner model (no endpoint): read,
// recognised, only stopped.
inline constexpr int kRecordVersion = 4;
inline constexpr int kFirstServedRecord = 3;
// The second line of a session jail's mark whose network process ended.
inline constexpr std::string_view kNetworkLostMark = "network lost\n";

struct SupervisorRecord {
    std::string tenant;               // the account name when it started
    uid_t uid{};
    pid_t pid{};                      // the supervisor (root)
    unsigned long long start_ticks{}; // field 22 of /proc/PID/stat
    std::string boot_id;              // /proc/sys/kernel/random/boot_id
    long long started{};              // unix time, for `list`
    int version{kRecordVersion};      // 1: a session jail of a build before the owner model
};

// A supervisor this build hands connections to and asks (protocol 3).
inline bool speaks_our_protocol(const SupervisorRecord& r) { return r.version >= kFirstServedRecord; }

// One line, "v4 TENANT UID PID START_TICKS BOOT_ID STARTED UID.sock\n" (v2,
// v3: the same; v1: without the endpoint). Pure.
std::string format_record(const SupervisorRecord& r);
// Strict inverse of format_record; anything else is an error. Pure, fuzzable.
Result<SupervisorRecord> parse_record(std::string_view text);
// Start time (field 22) of a /proc/PID/stat text, counted after the last
// ')' so that a command name with spaces or parentheses cannot shift it.
std::optional<unsigned long long> parse_stat_start_time(std::string_view stat);

// The state letter (field 3) of a /proc/PID/stat text, read the same way:
// 'Z' for a zombie (exited, not yet reaped).
std::optional<char> parse_stat_state(std::string_view stat);

// This process's start ticks and the boot id, for a record.
std::optional<unsigned long long> own_start_ticks();
std::string current_boot_id();

// The endpoint of the supervisor of `uid`: "UID.sock" in the runtime directory.
std::string endpoint_name(uid_t uid);

// Is the record's supervisor still the process it names? Same boot, same
// start time (a pid is reused only after its process is gone, and never
// with the same start time), and running as root.
bool record_is_live(const SupervisorRecord& r);

// A pidfd for the record's supervisor, opened first and verified after, so
// that it names exactly that process (a pid can be reused; a pidfd cannot).
// Invalid if the supervisor is gone.
UniqueFd open_supervisor(const SupervisorRecord& r);

class RuntimeDir {
public:
    // Creates the directory if absent; refuses it unless it is a real
    // directory owned by root with mode 0700 (exit 3 otherwise).
    static Result<RuntimeDir> open();

    // An exclusive lock on one tenant, held while a session jail is found
    // or started or stopped: concurrent first connections start one jail,
    // and other tenants never wait for it. Waits at most `seconds`.
    Result<UniqueFd> lock_tenant(uid_t uid, int seconds) const;

    std::optional<SupervisorRecord> read(uid_t uid) const;
    Status write(const SupervisorRecord& r) const;
    // Removes the record only if it still names `pid` (a later supervisor's
    // record is never removed by an earlier one).
    void remove_if(uid_t uid, pid_t pid) const;
    std::vector<SupervisorRecord> all() const;

    // The settings the session jail of `r` started with (jail_settings.hpp),
    // in UID.settings beside its record: "v1 PID START_TICKS" naming the
    // supervisor, then format_settings. Written by the supervisor before its
    // record, removed with it (remove_if). read_settings answers only for
    // the supervisor the record names: nothing (a jail started by a helper
    // that recorded none, or a file left by another) otherwise.
    Status write_settings(const SupervisorRecord& r, const JailSettings& settings) const;
    std::optional<JailSettings> read_settings(const SupervisorRecord& r) const;

    // Whether the supervisor `pid` of `uid` runs a session jail now (or only
    // one-off jails): UID.session, root's, naming that pid, written when its
    // session jail starts and removed when it ends (and by remove_if), so
    // that `stop` says truthfully what it stopped.
    void mark_session_jail(uid_t uid, pid_t pid, bool running) const;
    bool runs_session_jail(const SupervisorRecord& r) const;
    // The session jail's network process (slirp4netns) ended while the jail
    // runs: its mark says so (a second line), for `list`. Not restarted: the
    // jail keeps no network until its next start (`stop`, then an attach).
    void mark_network_lost(uid_t uid, pid_t pid) const;
    bool network_lost(const SupervisorRecord& r) const;

    // UID.netns, the name under which a build before this one bound the
    // attach jails' network namespace (this one holds it as a descriptor,
    // net.cpp:make_empty_netns): unmounted and removed where `stop` finds
    // a record whose supervisor is gone.
    void remove_attach_netns(uid_t uid) const;

    // RUNTIME/pam.d, the directory libpam reads the PAM service from
    // (pam_start_confdir): a symbolic link SERVICE -> /etc/pam.d/SERVICE and
    // an empty file "other". libpam parses "other" at every pam_start, as
    // the fallback for types a service leaves out, and loads its modules
    // (Debian's: pam_permit, pam_cap, pam_systemd and their libraries) into
    // the root helper; here it loads the service's own modules and nothing
    // else. The directory is root's, mode 0700, the file root's and empty,
    // the link replaced (atomically) whenever it names anything else.
    // Returns the directory's path.
    Result<std::string> pam_confdir(const std::string& service) const;

    // A tenant's refused attaches (UID.refused, root's, 0600), for the
    // refusal delay (refusal_delay, tenant_output.hpp): read (none or a
    // malformed one: no failures), written in place, removed by a success.
    RefusalRecord read_refusals(uid_t uid) const;
    void write_refusals(uid_t uid, const RefusalRecord& r) const;
    void clear_refusals(uid_t uid) const;

private:
    explicit RuntimeDir(UniqueFd fd) : fd_(std::move(fd)) {}
    std::string session_mark(const SupervisorRecord& r) const;
    Status replace_file(const std::string& name, const std::string& text, const std::string& what) const;

public:
    // The directory, opened (for *at calls).
    int fd() const { return fd_.get(); }

private:
    UniqueFd fd_;
};

}  // namespace clihost
