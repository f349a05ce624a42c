// Text from the daemon (pod names, annotation values inside messages, errors) made safe for an
// operator's terminal: control characters (C0, DEL and C1, which a UTF-8 terminal reads as
// escape sequences) and bytes that are not UTF-8 are printed escaped, and the text is cut at a
// length. netqosctl prints every string it got from netqosd through this.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace netqos {

inline constexpr size_t kMaxTerminalText = 1024;

// `\n`, `\r` and `\t` as such, other control characters and invalid UTF-8 bytes as `\xNN`,
// C1 controls (U+0080..U+009F) as `\u0080`..`\u009f`; at most `max_bytes` of the input, then
// "...(<n> bytes)". Printable UTF-8 is kept as is.
std::string TerminalText(std::string_view text, size_t max_bytes = kMaxTerminalText);

}  // namespace netqos
