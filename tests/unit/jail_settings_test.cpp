// The settings a session jail keeps from its start, and their differences
// from the config file now (jail_settings.hpp).
#include <gtest/gtest.h>

#include "decide/jail_settings.hpp"

using namespace clihost;

namespace {

Policy parsed(const std::string& text) {
    auto p = parse_config(text);
    EXPECT_TRUE(p.ok()) << p.error().message;
    return p.value();
}

}  // namespace

TEST(JailSettings, EverySettingThatShapesAJailIsRecorded) {
    JailSettings s = jail_settings(parsed("[jail]\nsetenv = A=$HOME/x\nshell = /usr/bin/bash\n"));
    std::vector<std::string> keys;
    for (const auto& [k, v] : s) keys.push_back(k);
    EXPECT_EQ(keys, (std::vector<std::string>{"bwrap", "proc", "ro_bind", "tmpfs", "tmpfs_size", "network",
                                              "nested_sandbox", "extra_env", "setenv", "shell", "pam.service",
                                              "pam.session", "limits.cgroup_parent", "limits.memory_max",
                                              "limits.memory_high", "limits.memory_swap_max", "limits.tasks_max",
                                              "limits.cpu_weight"}));
    EXPECT_EQ(s[4].second, "256M");
    EXPECT_EQ(s[8].second, "A=$HOME/x");
    EXPECT_EQ(s[2].second, "/usr /bin /sbin /lib /lib32 /lib64 /etc /opt /var/lib");
}

TEST(JailSettings, TheDifferencesNameEachChangedKeyWithBothValues) {
    const auto started = jail_settings(parsed("[jail]\nnested_sandbox = true\n"));
    const Policy now = parsed("[jail]\nnested_sandbox = false\ntmpfs_size = 128M\nsetenv = A=1\n");
    const auto drift = settings_drift(started, now);
    ASSERT_TRUE(drift.recorded);
    EXPECT_EQ(drift.changes, (std::vector<SettingChange>{{"tmpfs_size", "256M", "128M"},
                                                         {"nested_sandbox", "true", "false"},
                                                         {"setenv", "", "A=1"}}));
    EXPECT_EQ(changed_field(drift), "tmpfs_size,nested_sandbox,setenv");
    EXPECT_EQ(describe_changes(drift.changes),
              "tmpfs_size (started 256M, now 128M), nested_sandbox (started true, now false), "
              "setenv (started (none), now A=1)");
    // Control: the same file gives no difference.
    EXPECT_TRUE(settings_drift(started, parsed("[jail]\nnested_sandbox = true\n")).changes.empty());
    EXPECT_EQ(changed_field(settings_drift(started, parsed("[jail]\nnested_sandbox = true\n"))), "-");
    // A callers' or tenants' change is no jail setting (every connection reads it anew).
    EXPECT_EQ(changed_field(settings_drift(started, parsed("[callers]\nusers = x\n[jail]\nnested_sandbox = true\n"
                                                           "allow_caller_command = true\n"))),
              "-");
}

TEST(JailSettings, AJailThatRecordedNoneIsUnknownNotCurrent) {
    EXPECT_EQ(changed_field(settings_drift(std::nullopt, Policy{})), "unknown");
}

TEST(JailSettings, KeysOnlyOneSideHasAreDifferences) {
    const JailSettings started{{"bwrap", "/usr/bin/bwrap"}, {"gone", "x"}};
    const JailSettings now{{"bwrap", "/usr/bin/bwrap"}, {"new_key", "y"}};
    EXPECT_EQ(setting_changes(started, now),
              (std::vector<SettingChange>{{"new_key", "", "y"}, {"gone", "x", ""}}));
}

TEST(JailSettings, TheRecordRoundTripsAndRefusesAnythingElse) {
    const auto s = jail_settings(parsed("[jail]\nsetenv = A=$HOME/x B=\nshell = /usr/bin/bash\n"));
    const auto text = format_settings(s);
    auto back = parse_settings(text);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back.value(), s);
    for (const char* bad : {"bwrap /x", "bwrap\n", "BWRAP /x\n", "bwrap /x\nbwrap /y\n", "bwrap /x\x01\n",
                            "bwrap /x\n\n", " x\n"})
        EXPECT_FALSE(parse_settings(bad).ok()) << bad;
    EXPECT_FALSE(parse_settings(std::string(100000, 'a') + " x\n").ok());
    // A policy path may hold DEL and bytes above ASCII (fuzz_config found both): it reads back.
    const auto high = jail_settings(parsed("[jail]\nro_bind = /usr /s\xaein /x\x7f\n"));
    ASSERT_TRUE(parse_settings(format_settings(high)).ok());
    EXPECT_EQ(parse_settings(format_settings(high)).value(), high);
}

TEST(JailSettings, ALimitChangedInTheFileIsDrift) {
    const auto started = jail_settings(parsed("[limits]\ntasks_max = 100\n"));
    const auto drift = settings_drift(started, parsed("[limits]\ntasks_max = 200\nmemory_max = 1G\n"));
    ASSERT_TRUE(drift.recorded);
    std::vector<std::string> keys;
    for (const auto& c : drift.changes) keys.push_back(c.key);
    EXPECT_EQ(keys, (std::vector<std::string>{"limits.memory_max", "limits.tasks_max"}));
    EXPECT_TRUE(settings_drift(started, parsed("[limits]\ntasks_max = 100\n")).changes.empty());
}
