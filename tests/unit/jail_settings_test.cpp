// The settings a session jail keeps from its start, and their differences
// from the config file now (jail_settings.hpp).
#include <gtest/gtest.h>

#include "decide/jail_files.hpp"
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

// Issue 41, item 2: what an attach shows the tenant, and jail.json.
TEST(JailSettings, AnAttachNamesTheChangedKeysAndWhatAppliesThem) {
    const auto started = jail_settings(parsed("[jail]\nnested_sandbox = true\n"));
    EXPECT_EQ(attach_notice(settings_drift(started, parsed("[jail]\nnested_sandbox = true\n"))), "");
    EXPECT_EQ(attach_notice(settings_drift(std::nullopt, parsed(""))), "");  // not known: no line
    EXPECT_EQ(attach_notice(settings_drift(started, parsed(""))),
              "clihost-jail: settings changed (nested_sandbox); the operator's stop applies them");
    const Policy many = parsed("[jail]\ntmpfs_size = 128M\nnetwork = host\nshell = /bin/sh\n[limits]\n"
                               "tasks_max = 64\ncpu_weight = 5\n");
    EXPECT_EQ(attach_notice(settings_drift(started, many)),
              "clihost-jail: settings changed (tmpfs_size, network, nested_sandbox, +3 more); the operator's "
              "stop applies them");
}

TEST(JailSettings, JailJsonSaysWhatTheJailStartedWithAndWhatDiffersNow) {
    const auto started = jail_settings(parsed("[limits]\ntasks_max = 512\nmemory_max = 2G\n"));
    const std::string text = jail_info_json(started, 0, settings_drift(started, parsed("[jail]\nnested_sandbox = "
                                                                                       "true\n")),
                                            60);
    for (const char* line :
         {"{\n  \"format\": 1,\n  \"started\": \"1970-01-01T00:00:00Z\",\n  \"nested_sandbox\": false,\n",
          "\n  \"network\": \"isolated\",\n  \"tmpfs_size\": \"256M\",\n",
          "\n  \"limits\": {\"cgroup_parent\": \"clihost-jail\", \"memory_max\": \"2G\", \"memory_high\": \"max\", "
          "\"memory_swap_max\": \"0\", \"tasks_max\": \"512\", \"cpu_weight\": \"100\"},\n",
          "\n  \"settings\": {\"bwrap\": \"/usr/bin/bwrap\", \"proc\": \"private\", ",
          "\n  \"checked\": \"1970-01-01T00:01:00Z\",\n  \"changed\": [\"nested_sandbox\", "
          "\"limits.memory_max\", \"limits.tasks_max\"],\n",
          "Creating new namespace failed: No space left on device"})
        EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
    EXPECT_EQ(text.substr(text.size() - 4), "]\n}\n");
    // As the config says now: nothing changed; not known: null. nested on: no note.
    const auto on = jail_settings(parsed("[jail]\nnested_sandbox = true\n"));
    const std::string same = jail_info_json(on, 0, settings_drift(on, parsed("[jail]\nnested_sandbox = true\n")), 0);
    EXPECT_NE(same.find("\n  \"changed\": [],\n"), std::string::npos) << same;
    EXPECT_NE(same.find("\n  \"notes\": []\n}\n"), std::string::npos) << same;
    EXPECT_NE(jail_info_json(on, 0, SettingsDrift{}, 0).find("\n  \"changed\": null,\n"), std::string::npos);
    // A value holding a quote or a control byte stays one JSON string.
    JailSettings odd = on;
    odd.emplace_back("x", "/bin/\"x\x01");
    EXPECT_NE(jail_info_json(odd, 0, SettingsDrift{}, 0).find("\"x\": \"/bin/\\\"x\\u0001\""), std::string::npos);
}
