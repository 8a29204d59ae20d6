// jail_settings.hpp: the settings that shape a session jail, as its
// supervisor started it, and how they differ from the config file now.
// A session jail lives on, detached, until it is stopped: a change of the
// config reaches the next one, never the running one. The supervisor records
// what it started with (RuntimeDir::write_settings); `list` and `check` name
// every difference, so that neither the operator nor the tenant has to
// guess why an agent still fails after nested_sandbox was turned on. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hpp"
#include "decide/config.hpp"

namespace clihost {

// (key, value) in a fixed order, each value in jail.conf's own spelling
// (lists joined with one blank, sizes with their largest suffix).
using JailSettings = std::vector<std::pair<std::string, std::string>>;

// Every setting a running session jail keeps from its start: its bwrap,
// /proc, binds, tmpfs mounts and their size, network, nested sandboxes, the
// environment (extra_env names, setenv), the shell, and the PAM session its
// supervisor holds. Not the callers, tenants or allow_caller_command, which
// every connection reads anew, nor what a jail gets from the caller.
JailSettings jail_settings(const Policy& policy);

// One difference: the key, its value when the jail started ("" if the
// record has no such key, e.g. a key newer than the jail) and now.
struct SettingChange {
    std::string key;
    std::string started;
    std::string now;
    bool operator==(const SettingChange&) const = default;
};

// The keys whose values differ, in `now`'s order, then keys only `started` has.
std::vector<SettingChange> setting_changes(const JailSettings& started, const JailSettings& now);

// The record's text: "key value\n" lines (values never hold a newline).
std::string format_settings(const JailSettings& s);
// Strict inverse of format_settings (bounded, no byte below 0x20 in a value, each key once): anything else is an error.
Result<JailSettings> parse_settings(std::string_view text);

// What `list` (text and JSON) and `check` say about one live session jail:
// whether its supervisor recorded its settings (a jail started by an
// earlier version did not) and, if so, how they differ from `now`.
struct SettingsDrift {
    bool recorded{false};
    std::vector<SettingChange> changes;  // empty: the jail runs as the config says now
};
SettingsDrift settings_drift(const std::optional<JailSettings>& started, const Policy& now);

// `list`'s field value: "-" (none), "nested_sandbox,tmpfs_size", or
// "unknown" (not recorded).
std::string changed_field(const SettingsDrift& drift);

// check's wording: "nested_sandbox (started true, now false), ...".
std::string describe_changes(const std::vector<SettingChange>& changes);

// The line an attach shows the tenant when its jail's settings differ from
// the config file: "clihost-jail: settings changed (nested_sandbox); the
// operator's stop applies them" (at most three keys, then "+N more"); ""
// when none differ or the drift is not known. Keys only: never a value.
std::string attach_notice(const SettingsDrift& drift);

// What applies a change: the words `check` uses, and README's.
std::string apply_changes_hint(std::string_view tenant);

}  // namespace clihost
