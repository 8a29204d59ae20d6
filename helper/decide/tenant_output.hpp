// tenant_output.hpp: the pure rules for everything a tenant's tmux or jail
// says that the helper passes on to its caller (list, kill, an attach's
// stderr and exit status), and for the session names between the caller and
// tmux. Everything a tenant controls is hostile: session names, hooks'
// output, a client's stderr and exit status. Nothing here touches the system.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace clihost {

// --- session names ----------------------------------------------------------

// The tmux name of a caller's session name ([A-Za-z0-9_.-]{1,64}, checked
// by the command line): '.' becomes '+'. tmux itself turns '.' into '_',
// which made `x.y` and `x_y` one session; '+' is outside the caller's
// alphabet and kept by tmux, so the mapping is injective and readable.
std::string tmux_session_name(std::string_view caller_name);

// A session name as tmux reports it, in the caller's form: '+' back to '.',
// and every other byte outside [A-Za-z0-9_-] (and a leading '-') as \xNN
// (two lowercase hex digits). So a name the helper made is the caller's
// own name again, and any other (one a tenant made) is shown losslessly and
// can never contain a space, '=', ',', a quote, a control byte or a
// non-ASCII byte: undo \xNN, then '.' -> '+' for the tmux name.
std::string caller_session_name(std::string_view tmux_name);

// The session names in `list-sessions -F '#{session_name}'` output, in the
// caller's form, at most `max_names` of them (the rest are dropped).
std::vector<std::string> listed_sessions(std::string_view out, std::size_t max_names);

// --- an OOM kill's notice ---------------------------------------------------

// At most this many of the tenant's terminals get the notice.
inline constexpr std::size_t kMaxNoticeClients = 16;

// The one line an OOM kill in the tenant's jails puts on its terminals, made
// only of what the kernel counted and the limit in force (nothing the
// tenant names: a process's name is its own to choose):
// "clihost-jail: the OOM killer ended N process(es) (memory_max M MiB
// reached)".
std::string oom_notice(std::uint64_t kills, std::optional<std::uint64_t> memory_max);

// The clients in `list-clients -F '#{client_name}'` output (the tenant's
// tmux: hostile): lines exactly /dev/pts/N or client-N (N 1 to 10 digits),
// at most kMaxNoticeClients, duplicates dropped; any other line is dropped.
std::vector<std::string> notice_clients(std::string_view out);

// --- list ----------------------------------------------------------------------

enum class SessionsState {
    listed,       // sessions holds what its tmux answered
    not_queried,  // its owner is no longer a tenant (removed from the group, say)
    no_answer,    // its tmux did not answer within the deadline, or failed
    none,         // its supervisor runs no session jail (one-off jails only, or it is ending)
};

struct ListEntry {
    std::string tenant;
    long long uid{0};
    long long supervisor{0};
    long long started{0};  // seconds since the epoch
    SessionsState state{SessionsState::not_queried};
    std::vector<std::string> sessions;  // caller's form (caller_session_name)
    // Settings the jail started with that differ from the config file now
    // (jail_settings.hpp's keys); not recorded by a jail of an earlier version.
    bool settings_recorded{true};
    std::vector<std::string> changed;
    // Further figures (the resources issue's usage), in this order; an
    // unknown one (no cgroup on this host) is `-` in text, null in JSON.
    std::vector<std::pair<std::string, std::optional<long long>>> figures;
    // Figures in the JSON object only, after those (memory_anon, memory_file).
    std::vector<std::pair<std::string, std::optional<long long>>> json_figures;
    // A session jail of a build before the owner model (a v1 record): it
    // stays where it was started, in its caller's cgroup, until `stop`.
    bool earlier_version{false};
};

// One text line: tenant=NAME uid=UID supervisor=PID started=ISO8601
// changed=KEYS sessions=a,b,c [KEY=N ...]; changed=- : none, unknown : not
// recorded. sessions=- : none, or its owner is no longer
// a tenant; sessions=? : its tmux did not answer; sessions=(none): its
// supervisor runs no session jail (one-offs only). The tenant name is
// escaped like a session name; nothing in the line comes raw from a tenant.
std::string render_list_text(const ListEntry& e);

// One JSON object on one line (JSON Lines): {"tenant": ..., "uid": N,
// "supervisor": N, "started": "ISO8601", "changed": [...] or null (not
// recorded), "sessions": [...] or null,
// "sessions_state": "listed" | "not-a-tenant" | "no-answer" | "none"
// (sessions [], no session jail), KEY: N... (figures, then json_figures),
// "earlier_version": true | false}.
std::string render_list_json(const ListEntry& e);

// A JSON string literal of `s`: '"', '\\' and every byte outside 0x20-0x7e
// escaped (\uXXXX for bytes, so the literal is pure ASCII).
std::string json_string(std::string_view s);

std::string iso_time(long long t);

// --- what a jail says ------------------------------------------------------------

// Text a jail wrote to its stderr, as the helper relays it to its caller's:
// each line as "jail: " + escaped (log::escape's rule: every byte outside
// 0x20-0x7e, '"' and '\\' as \xNN, at most 512 bytes a line), at most
// `max_lines` lines. No relayed line starts with "clihost-jail: ", no byte
// of it drives a terminal.
std::string relay_jail_stderr(std::string_view said, std::size_t max_lines = 8);

// The exit status an attach reports for its tmux client's status: 0 stays 0
// (detached, or its session ended), and so does 128 + N for a client killed
// by signal N (ttyd's SIGHUP, relayed); any exit status 1 to 127 (an error,
// or whatever the tenant chose with detach-client -E) is
// kClientFailedStatus, so that the helper's own codes 1 to 4 (and the
// watcher's internal ones) are only ever the helper's.
inline constexpr int kClientFailedStatus = 5;
int attach_client_status(int client_status);
// What the helper's root process makes of its attach watcher's status: the
// watcher reports the helper's own codes (1 to 4), the client's mapped
// status (0, kClientFailedStatus, 128 + N) or `no_server`; anything else is
// kClientFailedStatus too.
int attach_watcher_status(int watcher_status, int no_server);
// The attach jail's status when its watcher found no tmux server on the
// tenant's socket and started nothing (the session jail is ending): an exit
// status no tmux client returns (it exits 0 or 1).
inline constexpr int kNoServerStatus = 75;

// --- the refusal delay --------------------------------------------------------

// A tenant's refused attaches so far and when the last one was.
struct RefusalRecord {
    unsigned failures{0};
    long long last{0};
};

// What a refused attach does: wait `delay` seconds, then record `next`.
// 1 s, doubling, up to max_seconds; max_seconds 0 is off (no delay). A
// record older than kRefusalForgetSeconds starts again at 1 s.
inline constexpr long long kRefusalForgetSeconds = 600;
struct RefusalDelay {
    unsigned delay{0};
    RefusalRecord next;
};
RefusalDelay refusal_delay(const RefusalRecord& before, long long now, unsigned max_seconds);

// The record's file text ("FAILURES LAST\n") and back; nullopt if malformed.
std::string format_refusal_record(const RefusalRecord& r);
std::optional<RefusalRecord> parse_refusal_record(std::string_view text);

}  // namespace clihost
