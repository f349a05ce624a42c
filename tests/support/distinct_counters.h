// A counters struct (common/counters.h) whose every member holds a value of its own, so that a
// conversion that drops, swaps or duplicates a field cannot give the same struct back.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/counters.h"

namespace netqos::testing {

// Member i (in the field list's order) is base + i + 1.
template <typename Counters>
Counters DistinctCounters(uint64_t base = 1000) {
  Counters c;
  uint64_t next = base;
  for (const auto& f : CounterFields<Counters>::kAll) c.*f.member = ++next;
  return c;
}

}  // namespace netqos::testing
