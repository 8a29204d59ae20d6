// log::escape: what reaches syslog and the caller's terminal from a
// caller-controlled string.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "base/log.hpp"

using clihost::log::escape;

TEST(LogEscape, PrintableAsciiPassesUnchanged) {
    EXPECT_EQ(escape("run --user alice --session dev_1.2-x ~!@#$%^&*()[]{}<>?/|'`=+;:,"),
              "run --user alice --session dev_1.2-x ~!@#$%^&*()[]{}<>?/|'`=+;:,");
    EXPECT_EQ(escape(""), "");
}

TEST(LogEscape, EveryByteOutsidePrintableAsciiIsHexEscaped) {
    for (int b = 0; b < 256; ++b) {
        const std::string in(1, static_cast<char>(b));
        const bool plain = b >= 0x20 && b <= 0x7e && b != '"' && b != '\\';
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\x%02x", b);
        EXPECT_EQ(escape(in), plain ? in : std::string(hex)) << "byte " << b;
    }
}

TEST(LogEscape, TerminalAndLineControlsCannotPassRaw) {
    // 8-bit CSI (a terminal honouring C1 reads "\x9b2J" as clear-screen), NEL,
    // U+2028 LINE SEPARATOR in UTF-8, ESC, a newline that would forge a line.
    EXPECT_EQ(escape("a\x9b" "2Jb"), "a\\x9b2Jb");
    EXPECT_EQ(escape("a\x85" "b"), "a\\x85b");
    EXPECT_EQ(escape("a\xe2\x80\xa8" "b"), "a\\xe2\\x80\\xa8b");
    EXPECT_EQ(escape("a\x1b[31mb"), "a\\x1b[31mb");
    EXPECT_EQ(escape("x\ndecision=allow"), "x\\x0adecision=allow");
    EXPECT_EQ(escape(std::string("a\0b", 3)), "a\\x00b");
}

TEST(LogEscape, QuotesAndBackslashesCannotForgeAFieldOrAnEscape) {
    // reason="..." ends only where the logger ends it, and a literal "\x9b"
    // typed by the caller stays distinguishable from an escaped 0x9b byte.
    EXPECT_EQ(escape("x\" decision=\"allow"), "x\\x22 decision=\\x22allow");
    EXPECT_EQ(escape("\\x9b"), "\\x5cx9b");
}

TEST(LogEscape, InputIsBoundedTo512Bytes) {
    EXPECT_EQ(escape(std::string(600, 'a')), std::string(512, 'a'));
    EXPECT_EQ(escape(std::string(600, '\x85')).size(), 512u * 4);
}
