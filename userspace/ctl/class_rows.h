// The class map as netqosctl shows it: entries read from the pinned map joined, by cgroup id, with
// what netqosd reports about them (ListClasses: pod and container names, allocation, NIC). Either
// side may be missing (daemon down, pins unreadable); the join and its rendering are pure.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "bpf/pinned_maps.h"
#include "common/counters.h"
#include "common/status.h"
#include "netqos/admin/v1/admin.pb.h"

namespace netqos::ctl {

using bpf::kDefaultPinDir;

// "shared_cores" for NETQOS_QOS_SHARED, ...; "unknown" otherwise.
std::string QosLevelText(uint8_t level);
// An HTB class handle as tc prints it: 0x100100 -> "10:100"; 0 -> "-".
std::string HtbClassText(uint32_t priority);
// The DSCP a class entry marks its packets with (NETQOS_CLASS_F_SET_DSCP), nullopt when none.
std::optional<uint8_t> EntryDscp(const netqos_class& entry);
// A DSCP as netqosctl prints it: "46", "-" when not marked.
std::string DscpText(std::optional<uint8_t> dscp);
// 123456789 -> "123.5M" (SI, for bit/s and packets/s); values below 1000 keep one decimal.
std::string HumanRate(double v);
// Totals (bytes, packets) in the same SI style: 1536 -> "1.5k".
std::string HumanCount(uint64_t v);

// A container's leaf rates as "egress/ingress": "20M/40M" for hard caps, "100M+" for a guarantee
// that borrows up to its QoS level's ceiling, "100M-200M" for a guarantee below an annotated
// ceiling, "-" for a direction without a leaf; "-" alone when it has none.
std::string CapText(const ::netqos::admin::v1::ContainerClass& d);
// {rate_bps, ceil_bps, borrows, source}, or null without a leaf in that direction.
nlohmann::json CapJson(bool has, const ::netqos::admin::v1::LeafCap& cap);
// The tenant policy's decisions about the container's pod's annotations, as an array.
nlohmann::json TenantDecisionsJson(const ::netqos::admin::v1::ContainerClass& d);

// Every field, by its name in common/counters.h's list.
nlohmann::json CountersJson(const TrafficCounters& c);
nlohmann::json CountersJson(const QueueCounters& c);

// Queue drops of HTB leaves by direction (the BPF programs never drop, so these are a
// container's drops). Unset: unknown (netqosd not reachable or too old to report them, or the
// leaf could not be read).
struct LeafDrops {
  std::optional<uint64_t> egress;
  std::optional<uint64_t> ingress;
  // Sum of the known directions; nullopt when neither is known.
  std::optional<uint64_t> Total() const;
};

// "12/0" (egress/ingress), "-" for an unknown direction.
std::string DropsText(const LeafDrops& d);
nlohmann::json DropsJson(const LeafDrops& d);

// What to tell the operator when the pinned maps cannot be read, e.g. "pin dir X not found: is
// enforcement on (--enforcement=bpf) and is --bpf-pin-dir right?".
std::string DescribePinError(const Status& status, const std::string& pin_dir);

// The pinned side: nullopt members when it could not be read.
struct PinnedSnapshot {
  std::vector<std::pair<uint64_t, netqos_class>> classes;
  std::vector<std::pair<uint64_t, TrafficCounters>> container_counters;
  std::vector<std::pair<uint32_t, TrafficCounters>> class_counters;
};

struct ClassRow {
  uint64_t cgroup_id = 0;
  std::optional<netqos_class> pinned;                         // the kernel's entry
  std::optional<::netqos::admin::v1::ContainerClass> daemon;  // netqosd's view of it
  std::optional<TrafficCounters> counters;                    // pinned counters, else the daemon's
  bool queues_read = false;  // the daemon read the HTB leaves for its answer (see Drops())

  uint32_t priority() const;
  uint32_t net_class_id() const;
  std::string qos_level() const;
  // The pinned entry's DSCP, else the daemon's; nullopt: not marked.
  std::optional<uint8_t> dscp() const;
  // "ns/pod/container" when the daemon knows it, else "".
  std::string Name() const;
  // Its own leaves' drops: from the daemon when it read the queues; 0 in a direction where the
  // container has no leaf of its own (what its level's shared default leaf drops is not its).
  LeafDrops Drops() const;
};

struct ClassRows {
  std::vector<ClassRow> containers;  // sorted by name, then cgroup id
  std::vector<std::pair<uint32_t, TrafficCounters>> classes;
  bool queues_read = false;  // the daemon read the HTB leaves: class_drops is meaningful
  std::map<uint32_t, LeafDrops> class_drops;  // net class id -> its leaves' drops (daemon)
};

// A class's drops (sums over its containers' own leaves); unknown unless the daemon read them.
LeafDrops ClassDrops(const ClassRows& rows, uint32_t net_class_id);

// Either input may be null. Containers are the union of both sides (plus cgroups that only have
// counters, when `with_counter_only` is set).
ClassRows JoinClasses(const PinnedSnapshot* pinned,
                      const ::netqos::admin::v1::ListClassesResponse* daemon,
                      bool with_counter_only = false);

nlohmann::json ClassRowJson(const ClassRow& row);

// Where the data came from, for the header line and the JSON document.
struct ClassSources {
  std::string pin_dir;
  bool pinned_read = false;
  bool daemon_reached = false;
  std::string mode;  // the daemon's enforcement mode ("" when unreachable)
  std::string note;  // why a side is missing, what to do
};

nlohmann::json ClassesJson(const ClassRows& rows, const ClassSources& sources);
void PrintClasses(const ClassRows& rows, const ClassSources& sources, std::ostream& out);

}  // namespace netqos::ctl
