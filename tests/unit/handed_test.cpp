// handed_test.cpp: the words a stub is handed (base/handed.hpp), as the
// helper lays them out and the stub reads them back.
#include "base/handed.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace clihost;

namespace {

const std::vector<std::string> kEnv{"HOME=/home/alice", "PATH=/usr/bin:/bin", "TTYD_SANDBOX=true"};

}  // namespace

TEST(Handed, WhatIsLaidOutIsReadBackWhole) {
    const std::vector<std::string> argv{"printf", "[%s]\\n", "", "two words", "+x", "-"};
    const std::string msg = encode_handed(argv, kEnv, 4096);
    ASSERT_FALSE(msg.empty());
    // As the stub reads it: each argv word after a '+', an empty word, the environment.
    constexpr char kLaid[] = "+printf\0+[%s]\\n\0+\0+two words\0++x\0+-\0\0HOME=/home/alice\0PATH=/usr/bin:/bin\0"
                             "TTYD_SANDBOX=true";  // and the literal's own NUL ends the last word
    EXPECT_EQ(msg, std::string(kLaid, sizeof kLaid));
    const HandedWords back = decode_handed(msg);
    EXPECT_EQ(back.wrong, nullptr);
    EXPECT_EQ(back.argv, argv);
    EXPECT_EQ(back.env, kEnv);
}

TEST(Handed, AnEmptyArgumentIsAnArgumentAndNoEnvironmentIsNone) {
    const HandedWords back = decode_handed(encode_handed({"/bin/sh", "-c", ""}, {}, 4096));
    EXPECT_EQ(back.wrong, nullptr);
    EXPECT_EQ(back.argv, (std::vector<std::string>{"/bin/sh", "-c", ""}));
    EXPECT_TRUE(back.env.empty());
}

TEST(Handed, WhatCannotMakeTheTripIsNotLaidOut) {
    EXPECT_EQ(encode_handed({}, kEnv, 4096), "");
    EXPECT_EQ(encode_handed({""}, kEnv, 4096), "");
    EXPECT_EQ(encode_handed({std::string("a\0b", 3)}, kEnv, 4096), "");
    EXPECT_EQ(encode_handed({"true"}, {"NOVALUE"}, 4096), "");
    EXPECT_EQ(encode_handed({"true"}, {"=x"}, 4096), "");
    // The bound is on the whole message.
    const std::string fits = encode_handed({"true"}, kEnv, 4096);
    EXPECT_EQ(encode_handed({"true"}, kEnv, fits.size()), fits);
    EXPECT_EQ(encode_handed({"true"}, kEnv, fits.size() - 1), "");
}

TEST(Handed, TheStubRefusesWhatTheHelperNeverLaysOut) {
    EXPECT_STREQ(decode_handed("").wrong, "malformed connection");
    EXPECT_STREQ(decode_handed(std::string("+true\0", 6)).wrong, "malformed command");          // no separator
    EXPECT_STREQ(decode_handed(std::string("\0", 1)).wrong, "malformed command");               // no argv
    EXPECT_STREQ(decode_handed(std::string("+\0\0", 3)).wrong, "malformed command");            // an empty argv[0]
    EXPECT_STREQ(decode_handed(std::string("true\0\0", 6)).wrong, "malformed command");         // the old layout
    EXPECT_STREQ(decode_handed(std::string("+true\0\0X\0", 9)).wrong, "malformed environment");
    EXPECT_STREQ(decode_handed(std::string("+true\0\0=x\0", 10)).wrong, "malformed environment");
    EXPECT_STREQ(decode_handed(std::string("+true\0\0A=1", 10)).wrong, "malformed connection");  // unterminated
}
