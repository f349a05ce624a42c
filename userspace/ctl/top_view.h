// `netqosctl top`: rates from two samples of the per-container and per-class counters (deltas of
// the pinned per-CPU maps) and of the HTB leaves' drops (from netqosd), joined with the class rows
// for names; one frame per refresh, as a table or one JSON line. Pure: the command samples, this
// computes and renders.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "bpf/pinned_maps.h"
#include "ctl/class_rows.h"
#include "ctl/sparkline.h"

namespace netqos::ctl {

struct CounterSample {
  double seconds = 0;  // a monotonic clock reading, for rates
  std::map<uint64_t, TrafficCounters> containers;
  std::map<uint32_t, TrafficCounters> classes;
  // The leaves' drops, when netqosd answered with them (the BPF counters never drop).
  bool queues_read = false;
  std::map<uint64_t, LeafDrops> container_drops{};
  std::map<uint32_t, LeafDrops> class_drops{};
  double unix_time = 0;  // the wall clock when `seconds` was read: a frame's "time"
};

// The leaves' drops of every container and class in `rows` (as JoinClasses built them).
void AddLeafDrops(const ClassRows& rows, CounterSample* sample);

struct Rates {
  double tx_bits = 0;  // per second
  double tx_packets = 0;
  double rx_bits = 0;
  double rx_packets = 0;
  double drops = 0;  // all known drops (the leaves' both ways; the BPF programs never drop)
  std::optional<double> egress_drops;  // the own egress leaf's; unset when unknown
  std::optional<double> ingress_drops;
};

// Per-second rates between two readings. A counter that went backwards (its entry was removed
// and created again) counts from zero.
Rates RateBetween(const TrafficCounters& before, const TrafficCounters& after, double seconds);

struct TopFrame {
  struct Container {
    uint64_t cgroup_id = 0;
    std::optional<ClassRow> row;  // class entry and/or the daemon's names
    Rates rates;
    TrafficCounters totals;  // drops: all known (the leaves')
    LeafDrops drops;         // the own leaves' drops so far, by direction
    std::string tx_trend;    // the send rate's sparkline (AddTrends); "" when not asked for
  };
  struct Class {
    uint32_t net_class_id = 0;
    Rates rates;
    TrafficCounters totals;
    LeafDrops drops;
  };
  double interval_seconds = 0;
  double unix_time = 0;
  std::string pin_dir;
  std::string source;  // "pinned maps" or "netqosd" (counters from ListClasses)
  bool names_from_daemon = false;
  std::string note;
  std::vector<Container> containers;  // busiest first
  std::vector<Class> classes;
  bool trends = false;  // the table has a TX TREND column (--sparkline)
};

// Containers: every cgroup with counters in `after` or a row in `rows`; classes: every class id
// with counters in `after`.
TopFrame BuildTopFrame(const CounterSample& before, const CounterSample& after,
                       const std::vector<ClassRow>& rows);

// Adds each container's send rate to `history` and draws its sparkline: full height at its
// egress leaf's ceiling where netqosd reports one, else at the largest rate in the history.
void AddTrends(RateHistory& history, SparkGlyphs glyphs, TopFrame* frame);

nlohmann::json TopFrameJson(const TopFrame& frame);
void PrintTopFrame(const TopFrame& frame, std::ostream& out);

}  // namespace netqos::ctl
