// The kernel's counters of netqos's HTB classes (what `tc -s class show` prints), as plain values;
// htb_class_stats_reader.h reads them. The BPF programs never drop: the drops and overlimits of a
// container's traffic happen in its HTB leaf, so these are where a container's losses show.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace netqos::shaping {

// One class's counters since the class was created (a re-created class starts from zero).
struct HtbClassStats {
  uint32_t handle = 0;
  uint32_t parent = 0;
  uint64_t bytes = 0;            // dequeued towards the device: frames without preamble and FCS
  uint64_t packets = 0;          // dequeued packets (a GSO packet counts as its segments)
  uint64_t drops = 0;            // packets the leaf's queue refused (full): the shaping's losses
  uint64_t overlimits = 0;       // times the class was over its rate and ceil when asked to send
  uint64_t backlog_bytes = 0;    // queued now (leaves only)
  uint64_t backlog_packets = 0;  // queued now (leaves only)

  bool operator==(const HtbClassStats&) const = default;
};

// By class handle (TC_H_MAKE(major, minor)); only the classes of netqos's qdisc major (10:).
using HtbClassStatsMap = std::map<uint32_t, HtbClassStats>;

}  // namespace netqos::shaping
