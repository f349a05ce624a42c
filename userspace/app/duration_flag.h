// netqosd's flags that take a length of time (--enforcement-resync-period,
// --kubelet-registration-timeout): Go's duration syntax, as the kubelet's and Katalyst's duration
// flags take it ("30s", "1m30s", "1.5h"), or a plain whole number of seconds, which is what these
// flags took before and what existing DaemonSets pass.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "common/status.h"

namespace netqos::app {

// The bounds of every duration flag: at least a second, as the whole seconds these flags took
// before (a shorter resync or registration poll would busy-loop), and at most what a whole number
// of seconds could say then (2^31 - 1 s, about 68 years; steady_clock arithmetic stays in range).
inline constexpr std::chrono::milliseconds kMinDurationFlag = std::chrono::seconds(1);
inline constexpr std::chrono::milliseconds kMaxDurationFlag = std::chrono::seconds(2147483647);

// `text` as --`flag`'s value; errors name the flag and the value, and say what was wrong
// (not a duration, negative, out of bounds, finer than a millisecond).
Result<std::chrono::milliseconds> ParseDurationFlag(std::string_view flag, std::string_view text);

// How --help and --print-config show a duration: Go's form (time.Duration.String()), "30s",
// "1m30s", "1.5s", "1h0m0s". ParseDurationFlag reads it back to the same value.
std::string DurationFlagText(std::chrono::milliseconds d);

}  // namespace netqos::app
