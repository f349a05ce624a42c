// Go's time.ParseDuration, for flags that Kubernetes operators write the way they write the
// kubelet's and Katalyst's: "300ms", "1.5h", "2h45m", "-1m30s". Pure; no flag knowledge (which
// values a flag takes is its caller's business, e.g. whether a negative one makes sense).
#pragma once

#include <chrono>
#include <string_view>

#include "common/status.h"

namespace netqos {

// A possibly signed sequence of decimal numbers, each with an optional fraction and a unit
// suffix, with Go's units (ns, us, µs, μs, ms, s, m, h) and Go's rules: "0" alone needs no unit,
// every other number does; the total must fit in int64 nanoseconds (about 292 years); fractions
// finer than a nanosecond are dropped. Errors say what was wrong and quote the text.
Result<std::chrono::nanoseconds> ParseGoDuration(std::string_view text);

}  // namespace netqos
