// TerminalText and the bounded quoting of values from outside: nothing a pod writes may drive an
// operator's terminal (C0, DEL, C1 controls, invalid UTF-8) or fill it (length), and a cut never
// splits a UTF-8 character.
#include "common/terminal_text.h"

#include <catch2/catch.hpp>
#include <string>

#include "common/log_value.h"

using netqos::BoundedLogValue;
using netqos::QuotedValue;
using netqos::TerminalText;

TEST_CASE("TerminalText escapes what a terminal would act on", "[common]") {
  CHECK(TerminalText("pod web/app: 20 Mbit/s") == "pod web/app: 20 Mbit/s");
  CHECK(TerminalText("caf\xc3\xa9") == "caf\xc3\xa9");  // printable UTF-8 stays
  CHECK(TerminalText("a\nb\rc\td") == "a\\nb\\rc\\td");
  CHECK(TerminalText("\x1b]0;owned\x07\x1b[2J") == "\\x1b]0;owned\\x07\\x1b[2J");
  CHECK(TerminalText("\x7f") == "\\x7f");
  CHECK(TerminalText("\xc2\x9b"
                     "31m") == "\\u009b31m");  // C1 CSI, as UTF-8
  CHECK(TerminalText("\x9b"
                     "31m") == "\\x9b31m");                  // a lone byte: not UTF-8
  CHECK(TerminalText("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // a surrogate
  CHECK(TerminalText("\xc0\xaf") == "\\xc0\\xaf");           // overlong
  CHECK(TerminalText("\xe2\x82") == "\\xe2\\x82");           // cut short
  CHECK(TerminalText("kubepods-pod1\\x2d2.slice") == "kubepods-pod1\\x2d2.slice");
}

TEST_CASE("TerminalText bounds the length and says how long the text was", "[common]") {
  const std::string long_text(5000, 'a');
  const std::string out = TerminalText(long_text);
  CHECK(out == std::string(netqos::kMaxTerminalText, 'a') + "...(5000 bytes)");
  CHECK(TerminalText("abcdef", 3) == "abc...(6 bytes)");
}

TEST_CASE("BoundedLogValue and QuotedValue cut at a character boundary", "[common]") {
  CHECK(BoundedLogValue("plain") == "plain");
  CHECK(BoundedLogValue("two words") == "\"two words\"");
  CHECK(BoundedLogValue(std::string(70, 'x')) == std::string(64, 'x') + "...(70 bytes)");
  // A two-byte character across the cut is left out whole.
  CHECK(BoundedLogValue(std::string(63, 'x') + "\xc3\xa9" + "y") ==
        std::string(63, 'x') + "...(66 bytes)");
  CHECK(QuotedValue("0x10") == "\"0x10\"");
  CHECK(QuotedValue("a\"b\n") == "\"a\\\"b\\n\"");
  CHECK(QuotedValue("") == "\"\"");
  CHECK(QuotedValue(std::string(100, 'z'), 4) == "\"zzzz\"...(100 bytes)");
}
