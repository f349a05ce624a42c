// The kernel's counters of netqos's HTB classes (what `tc -s class show` prints), as plain values;
// htb_class_stats_reader.h reads them. The BPF programs never drop: the drops and overlimits of a
// container's traffic happen in its HTB leaf, so these are where a container's losses show.
#pragma once

#include <cstdint>
#include <map>

#include "common/counters.h"

namespace netqos::shaping {

// One class's counters, with the class they belong to. QueueCounters is a base rather than a
// member: an HtbClassStats goes wherever QueueCounters are wanted, and the reader fills `drops`.
struct HtbClassStats : QueueCounters {
  uint32_t handle = 0;
  uint32_t parent = 0;

  bool operator==(const HtbClassStats&) const = default;
};

// By class handle (TC_H_MAKE(major, minor)); only the classes of netqos's qdisc major (10:).
using HtbClassStatsMap = std::map<uint32_t, HtbClassStats>;

}  // namespace netqos::shaping
