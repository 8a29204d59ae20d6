// tenant_output_test.cpp: what a tenant's tmux or jail says, as the helper
// passes it on (list, kill, an attach's stderr and status), and the session
// names between caller and tmux (issue 23).
#include "decide/tenant_output.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "base/validate.hpp"

namespace clihost {
namespace {

TEST(SessionNames, DistinctCallerNamesAreDistinctTmuxNames) {
    // tmux turns '.' into '_': x.y and x_y were one session.
    EXPECT_NE(tmux_session_name("x.y"), tmux_session_name("x_y"));
    EXPECT_EQ(tmux_session_name("x.y"), "x+y");
    EXPECT_EQ(tmux_session_name("x_y"), "x_y");
    // Injective over a sample of the alphabet's tricky corners.
    std::set<std::string> seen;
    for (const char* n : {"a.b", "a_b", "a-b", "a+b", "a..b", "a._b", "a_.b", "ab", "a.b.", "a__b"}) {
        if (!is_valid_session_name(n)) continue;
        EXPECT_TRUE(seen.insert(tmux_session_name(n)).second) << n;
    }
    // tmux keeps what we give it: no '.' nor ':' in any tmux name we make.
    EXPECT_EQ(tmux_session_name("a.b.c").find_first_of(".:"), std::string::npos);
}

TEST(SessionNames, ListReportsTheCallersOwnName) {
    for (const char* n : {"x.y", "x_y", "dev", "a-b.c_d", "A9"})
        EXPECT_EQ(caller_session_name(tmux_session_name(n)), n);
}

TEST(SessionNames, ATenantsNameIsEscapedLosslessly) {
    // The forgery: spaces and '=' would have made new fields.
    EXPECT_EQ(caller_session_name("zz tenant=B uid=1008 sessions=evil"),
              "zz\\x20tenant\\x3dB\\x20uid\\x3d1008\\x20sessions\\x3devil");
    EXPECT_EQ(caller_session_name("a\rb\x1e\x1b[2J"), "a\\x0db\\x1e\\x1b\\x5b2J");
    EXPECT_EQ(caller_session_name("\xff\xfe"), "\\xff\\xfe");  // not UTF-8: kept as bytes
    EXPECT_EQ(caller_session_name("a\\x41"), "a\\x5cx41");      // the escape itself cannot be forged
    EXPECT_EQ(caller_session_name("-x"), "\\x2dx");             // never a caller's name, never '-'
    EXPECT_EQ(caller_session_name("+x"), "\\x2bx");
    EXPECT_EQ(caller_session_name("a.b"), "a\\x2eb");           // '.' only ever stands for '+'
    EXPECT_EQ(caller_session_name("a,b"), "a\\x2cb");
}

// The documented way back: \xNN to the byte, '.' to tmux's '+'.
std::string tmux_name_back(const std::string& shown) {
    std::string out;
    for (std::size_t i = 0; i < shown.size(); ++i) {
        if (shown[i] == '\\' && i + 3 < shown.size() && shown[i + 1] == 'x') {
            out += static_cast<char>(std::stoi(shown.substr(i + 2, 2), nullptr, 16));
            i += 3;
        } else {
            out += shown[i] == '.' ? '+' : shown[i];
        }
    }
    return out;
}

TEST(SessionNames, EveryByteStringIsShownSafelyAndLosslessly) {
    std::mt19937 rng(23);
    for (int n = 0; n < 20000; ++n) {
        std::string raw(rng() % 12, '\0');
        for (char& c : raw) c = static_cast<char>(rng() % 256);
        const auto shown = caller_session_name(raw);
        for (char c : shown) {
            const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                            c == '-' || c == '.' || c == '\\';
            ASSERT_TRUE(ok) << int(static_cast<unsigned char>(c));
        }
        ASSERT_EQ(tmux_name_back(shown), raw);
    }
}

TEST(SessionNames, ListedSessionsSplitsLinesAndCapsTheirNumber) {
    EXPECT_EQ(listed_sessions("a\nb+c\n\n", 10), (std::vector<std::string>{"a", "b.c"}));
    EXPECT_EQ(listed_sessions("a\nb\nc\n", 2), (std::vector<std::string>{"a", "b"}));
    EXPECT_TRUE(listed_sessions("", 10).empty());
    // A \r is part of a name, not a line break.
    EXPECT_EQ(listed_sessions("a\rtenant=B\n", 10), (std::vector<std::string>{"a\\x0dtenant\\x3dB"}));
}

ListEntry entry(std::vector<std::string> sessions, SessionsState st = SessionsState::listed) {
    ListEntry e;
    e.tenant = "alice";
    e.uid = 1001;
    e.supervisor = 42;
    e.started = 0;
    e.state = st;
    e.sessions = std::move(sessions);
    return e;
}

TEST(ListText, OneLineWhateverTheTenantNamedItsSessions) {
    const auto names = listed_sessions("zz tenant=B uid=1008 sessions=evil\nok\x1e\r\x1b]0;x\x07\n", 10);
    const auto line = render_list_text(entry(names));
    EXPECT_EQ(line, "tenant=alice uid=1001 supervisor=42 started=1970-01-01T00:00:00Z changed=- sessions="
                    "zz\\x20tenant\\x3dB\\x20uid\\x3d1008\\x20sessions\\x3devil,ok\\x1e\\x0d\\x1b\\x5d0\\x3bx\\x07\n");
    // Exactly six fields, one '=' each, one line.
    EXPECT_EQ(line.find('\n'), line.size() - 1);
    EXPECT_EQ(std::count(line.begin(), line.end(), ' '), 5);
    EXPECT_EQ(std::count(line.begin(), line.end(), '='), 6);
}

TEST(ListText, NoneNotATenantAndNoAnswerAreTold) {
    EXPECT_NE(render_list_text(entry({})).find(" sessions=-\n"), std::string::npos);
    EXPECT_NE(render_list_text(entry({"a"}, SessionsState::not_queried)).find(" sessions=-\n"), std::string::npos);
    EXPECT_NE(render_list_text(entry({}, SessionsState::no_answer)).find(" sessions=?\n"), std::string::npos);
    auto e = entry({"a", "b"});
    e.figures = {{"memory", 123}, {"tasks", 4}};
    EXPECT_NE(render_list_text(e).find(" sessions=a,b memory=123 tasks=4\n"), std::string::npos);
    // No cgroup on this host: unknown, never a made-up 0.
    e.figures = {{"memory", std::nullopt}, {"tasks", std::nullopt}};
    EXPECT_NE(render_list_text(e).find(" sessions=a,b memory=- tasks=-\n"), std::string::npos);
    EXPECT_NE(render_list_json(e).find("\"memory\": null, \"tasks\": null, "), std::string::npos);
}

// Issue 41, items 4 and 5: a supervisor of one-offs only is said to be so,
// neither `?` nor `-`; memory_anon and memory_file are JSON's only.
TEST(ListText, ASupervisorWithoutASessionJailAndTheMemorySplit) {
    auto e = entry({}, SessionsState::none);
    EXPECT_NE(render_list_text(e).find(" sessions=(none)\n"), std::string::npos);
    EXPECT_NE(render_list_json(e).find("\"sessions\": [], \"sessions_state\": \"none\""), std::string::npos);
    e = entry({"a"});
    e.figures = {{"memory", 1192595456}, {"tasks", 7}};
    e.json_figures = {{"memory_anon", 51744768}, {"memory_file", std::nullopt}};
    EXPECT_NE(render_list_text(e).find(" sessions=a memory=1192595456 tasks=7\n"), std::string::npos);
    EXPECT_NE(render_list_json(e).find("\"memory\": 1192595456, \"tasks\": 7, \"memory_anon\": 51744768, "
                                       "\"memory_file\": null, \"earlier_version\": false}"),
              std::string::npos);
}

TEST(ListText, ChangedSettingsAreNamedOrUnknown) {
    auto e = entry({"a"});
    e.changed = {"nested_sandbox", "tmpfs_size"};
    EXPECT_NE(render_list_text(e).find(" changed=nested_sandbox,tmpfs_size sessions=a\n"), std::string::npos);
    EXPECT_NE(render_list_json(e).find("\"changed\": [\"nested_sandbox\", \"tmpfs_size\"], "), std::string::npos);
    e.settings_recorded = false;
    EXPECT_NE(render_list_text(e).find(" changed=unknown sessions=a\n"), std::string::npos);
    EXPECT_NE(render_list_json(e).find("\"changed\": null, "), std::string::npos);
}

TEST(ListJson, EscapedByConstruction) {
    EXPECT_EQ(json_string("a\"b\\c\n\x1b\xff"), "\"a\\\"b\\\\c\\u000a\\u001b\\u00ff\"");
    const auto names = listed_sessions("x\"y\n\xc3\x28\n", 10);
    EXPECT_EQ(render_list_json(entry(names)),
              "{\"tenant\": \"alice\", \"uid\": 1001, \"supervisor\": 42, \"started\": \"1970-01-01T00:00:00Z\", "
              "\"changed\": [], \"sessions\": [\"x\\\\x22y\", \"\\\\xc3\\\\x28\"], \"sessions_state\": \"listed\", "
              "\"earlier_version\": false}\n");
    EXPECT_NE(render_list_json(entry({}, SessionsState::no_answer)).find("\"sessions\": null, \"sessions_state\": "
                                                                         "\"no-answer\""),
              std::string::npos);
    EXPECT_NE(render_list_json(entry({}, SessionsState::not_queried)).find("\"sessions\": null, \"sessions_state\": "
                                                                           "\"not-a-tenant\""),
              std::string::npos);
    auto e = entry({});
    e.figures = {{"memory", 7}};
    EXPECT_NE(render_list_json(e).find("\"sessions\": [], \"sessions_state\": \"listed\", \"memory\": 7, "
                                       "\"earlier_version\": false}"),
              std::string::npos);
    // A session jail of a build before the owner model says so.
    e.earlier_version = true;
    EXPECT_NE(render_list_json(e).find(", \"earlier_version\": true}\n"), std::string::npos);
    // Pure printable ASCII, one line.
    for (char c : render_list_json(entry(listed_sessions("\x01\x7f\x80\n", 10)))) {
        const auto u = static_cast<unsigned char>(c);
        EXPECT_TRUE((u >= 0x20 && u <= 0x7e) || c == '\n') << int(u);
    }
}

TEST(Relay, EveryLineEscapedAndMarkedAsTheJails) {
    const std::string forged = "clihost-jail: tenant A refused: forged\n\033[2J\033]0;pwn\007";
    EXPECT_EQ(relay_jail_stderr(forged),
              "jail: clihost-jail: tenant A refused: forged\njail: \\x1b[2J\\x1b]0;pwn\\x07\n");
    EXPECT_EQ(relay_jail_stderr(""), "");
    EXPECT_EQ(relay_jail_stderr("a\r\nb\n"), "jail: a\\x0d\njail: b\n");
    // At most max_lines lines.
    EXPECT_EQ(relay_jail_stderr("1\n2\n3\n", 2), "jail: 1\njail: 2\n");
    // Control: no line of the relay starts with the helper's own prefix.
    const auto out = relay_jail_stderr(forged);
    EXPECT_NE(out.find("clihost-jail: "), std::string::npos);
    EXPECT_NE(out.rfind("clihost-jail: ", 0), 0U);
}

TEST(Relay, AnAttachReportsOnlyTheHelpersOwnCodes) {
    EXPECT_EQ(attach_client_status(0), 0);
    // Any exit status the tenant can choose, the watcher's own 75 too.
    for (int s : {1, 2, 3, 4, 5, 75, 127, -1}) EXPECT_EQ(attach_client_status(s), kClientFailedStatus) << s;
    // Killed by a signal: 128 + N, as a shell says it (never 1 to 4).
    for (int s : {129, 137, 255}) EXPECT_EQ(attach_client_status(s), s) << s;
    EXPECT_GT(kClientFailedStatus, 4);
    for (int s : {0, 1, 2, 3, 4, 5, 75, 129, 137}) EXPECT_EQ(attach_watcher_status(s, 75), s) << s;
    for (int s : {6, 74, 128, 256, -1}) EXPECT_EQ(attach_watcher_status(s, 75), kClientFailedStatus) << s;
}

TEST(RefusalDelay, DoublesFromOneSecondUpToTheMaximum) {
    RefusalRecord r;
    std::vector<unsigned> delays;
    long long now = 1000;
    for (int i = 0; i < 8; ++i) {
        const auto d = refusal_delay(r, now, 30);
        delays.push_back(d.delay);
        r = d.next;
        now += d.delay;
    }
    EXPECT_EQ(delays, (std::vector<unsigned>{1, 2, 4, 8, 16, 30, 30, 30}));
}

TEST(RefusalDelay, OffAtZeroAndForgottenAfterALongQuiet) {
    EXPECT_EQ(refusal_delay({5, 100}, 101, 0).delay, 0U);
    EXPECT_EQ(refusal_delay({5, 100}, 101, 30).delay, 30U);
    EXPECT_EQ(refusal_delay({5, 100}, 100 + kRefusalForgetSeconds + 1, 30).delay, 1U);
    EXPECT_EQ(refusal_delay({5, 200}, 100, 30).delay, 1U);  // a clock set back
    EXPECT_EQ(refusal_delay({1000, 100}, 101, 30).delay, 30U);  // no overflow
}

TEST(RefusalDelay, RecordRoundTripsAndRefusesGarbage) {
    const RefusalRecord r{3, 1700000000};
    const auto back = parse_refusal_record(format_refusal_record(r));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->failures, 3U);
    EXPECT_EQ(back->last, 1700000000);
    for (const char* bad : {"", "3", "3 x\n", "3 4", " 3 4\n", "-1 4\n", "3  4\n"})
        EXPECT_FALSE(parse_refusal_record(bad).has_value()) << bad;
}

TEST(TenantOutput, OomNoticeIsMadeOfTheCountAndTheLimitOnly) {
    EXPECT_EQ(oom_notice(1, std::uint64_t{512} << 20),
              "clihost-jail: the OOM killer ended 1 process (memory_max 512 MiB reached)");
    EXPECT_EQ(oom_notice(3, std::nullopt), "clihost-jail: the OOM killer ended 3 processes");
    EXPECT_EQ(oom_notice(2, std::uint64_t{1} << 30).find('#'), std::string::npos);
}

TEST(TenantOutput, NoticeClientsAreExactlyPseudoTerminals) {
    EXPECT_EQ(notice_clients("/dev/pts/3\n/dev/pts/12\n"), (std::vector<std::string>{"/dev/pts/3", "/dev/pts/12"}));
    // A hostile tmux's lines: anything but /dev/pts/N is dropped, duplicates once.
    EXPECT_EQ(notice_clients("/dev/pts/3\n/dev/pts/3\n/dev/pts/\n/dev/pts/1;x\n/dev/tty1\n-c\n/dev/pts/12345678901\n"
                             "#{client_tty}\n/dev/pts/4 \nclient-\nclient-12x\nclient-77\n/dev/pts/5"),
              (std::vector<std::string>{"/dev/pts/3", "client-77", "/dev/pts/5"}));
    std::string many;
    for (int i = 0; i < 40; ++i) many += "/dev/pts/" + std::to_string(i) + "\n";
    EXPECT_EQ(notice_clients(many).size(), kMaxNoticeClients);
}


}  // namespace
}  // namespace clihost
