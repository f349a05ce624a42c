// Pure planning of the per-NIC HTB hierarchy (no I/O): from the link rate, the per-QoS-level
// configuration and the containers allocated on the NIC, compute the classes netqos wants.
// Container leaves get stable minors from a MinorAllocator; skb->priority must carry
// TC_H_MAKE(kQdiscMajor << 16, minor).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/named_enum.h"
#include "common/qos_level.h"
#include "common/status.h"
#include "common/tc_handle.h"  // TcHandleText: how a plan's handles are shown

namespace netqos::shaping {

// The QoS levels are common/qos_level.h's, named here as well since every plan speaks of them.
using ::netqos::kQosLevelCount;
using ::netqos::kQosLevelSpellings;
using ::netqos::ParseQosLevel;
using ::netqos::QosLevel;
using ::netqos::QosLevelName;

inline constexpr uint32_t kQdiscMajor = 0x10;  // root qdisc handle 10:
inline constexpr uint32_t kTopMinor = 0x1;     // 10:1, rate = ceil = link
inline constexpr uint32_t kFirstContainerMinor = 0x100;
inline constexpr uint32_t kLastContainerMinor = 0xfffe;

constexpr uint32_t MakeHandle(uint32_t major, uint32_t minor) {
  return (major << 16) | (minor & 0xffffu);
}
constexpr uint32_t HandleMinor(uint32_t handle) { return handle & 0xffffu; }
constexpr uint32_t HandleMajor(uint32_t handle) { return handle >> 16; }
// 10:10 system, 10:20 dedicated, 10:30 shared, 10:40 reclaimed.
constexpr uint32_t LevelMinor(QosLevel l) { return 0x10u * (static_cast<uint32_t>(l) + 1u); }
// 10:11, 10:21, 10:31, 10:41: traffic of the level without an allocated leaf.
constexpr uint32_t LevelDefaultMinor(QosLevel l) { return LevelMinor(l) + 1u; }

// Leaf and class rates are in bit/s: a pod annotated "1500k" gets 1.5 Mbit/s, not 2. Link rates
// and allocations (Katalyst's unit) are whole Mbit/s.
inline constexpr uint64_t kBitsPerMbit = 1000 * 1000;
constexpr uint64_t MbitToBits(uint64_t mbps) { return mbps * kBitsPerMbit; }
// Bytes per second, what HTB's rate64 and the EDT map hold: rounded up, so a rate never ends
// below its bit rate by the rounding (at most 7 bit/s above it).
constexpr uint64_t BitsToBytes(uint64_t bps) { return bps / 8 + (bps % 8 != 0 ? 1 : 0); }
// "20 Mbit/s", "1.5 Mbit/s", "800 kbit/s", "1500 bit/s": for messages.
std::string BitRateText(uint64_t bps);

// A class's token buckets (HTB rbuffer for its rate, cbuffer for its ceiling), in bytes. 0 asks
// for the default: what the rate earns in 1 ms plus one 1600-byte packet (DefaultBucketBytes).
// A burst set per level or pod (--qos-level-burst, netqos.io/burst) is used for both buckets.
inline constexpr uint32_t kMinBurstBytes = 1600;      // one packet: HTB sends no less anyway
inline constexpr uint32_t kMaxBurstBytes = 1u << 30;  // 1 GiB
// The kernel keeps a bucket as the time its rate takes to fill it, in 32-bit 64 ns ticks (275 s),
// and libnl passes it through whole microseconds: a bucket is held to this many seconds at its
// rate, far beyond any useful burst, so a large burst on a slow leaf cannot wrap around.
inline constexpr uint64_t kMaxBucketSeconds = 100;
uint32_t DefaultBucketBytes(uint64_t rate_bps);
// The bucket a class at `rate_bps` gets for `burst_bytes` (0: the default).
uint32_t BucketBytes(uint64_t rate_bps, uint32_t burst_bytes);

// Rates are fractions of the link rate in permille so the config stays integral.
struct LevelConfig {
  uint32_t rate_permille = 0;     // guaranteed share of the link
  uint32_t ceil_permille = 1000;  // 1000 = may borrow up to the whole link (work-conserving)
  uint32_t prio = 0;              // HTB prio 0..7 of the level's leaves (lower borrows first)
  bool operator==(const LevelConfig&) const = default;
};

// What an allocated container's leaf may reach beyond its allocation (--container-ceil).
enum class ContainerCeil {
  kAllocation,  // a hard cap: the leaf's ceiling is its allocation (Katalyst's meaning)
  kLevel,       // the allocation is a guarantee; idle bandwidth of its QoS level may be borrowed
};
inline constexpr Choices<ContainerCeil, 2> kContainerCeilNames{{
    {"allocation", ContainerCeil::kAllocation},
    {"level", ContainerCeil::kLevel},
}};

struct ShapingConfig {
  std::array<LevelConfig, kQosLevelCount> levels = {{
      {50, 1000, 0},   // system
      {400, 1000, 1},  // dedicated
      {400, 1000, 2},  // shared
      {150, 1000, 3},  // reclaimed
  }};
  // Level that unclassified traffic (skb->priority not one of ours) falls into.
  QosLevel default_level = QosLevel::kShared;
  // Minimum guaranteed rate of each level's default leaf.
  uint64_t default_leaf_min_mbps = 1;
  // Low-priority network groups (Katalyst HEAD): when set, the reclaimed level's ceiling on each
  // NIC follows its group in both directions (the enforcer computes it from the allocations),
  // never below this percentage of the NIC's allocatable. nullopt: off.
  std::optional<uint32_t> low_priority_floor_percent;
  ContainerCeil container_ceil = ContainerCeil::kAllocation;
  // The DSCP each level's packets are marked with on the enforced NICs (--qos-level-dscp);
  // nullopt: left alone. Not HTB's: carried here with the other per-level settings of the flags.
  std::array<std::optional<uint8_t>, kQosLevelCount> dscp{};
  // The DSCP of every packet the enforced NICs send that no level or pod marks
  // (--dscp-default); nullopt: left as its sender set it.
  std::optional<uint8_t> unmarked_dscp;
  // Each level's burst in bytes (--qos-level-burst), for its container leaves and its default
  // leaf; 0: the default bucket. A pod's netqos.io/burst overrides it for the pod's leaves.
  std::array<uint32_t, kQosLevelCount> burst_bytes{};
  // Whether a NIC (or one direction of it) carries netqos's tree while nothing on it is capped
  // (HtbPlan::shapes). false: it keeps its own root qdisc until then, so a node whose containers
  // have no caps pays no qdisc on its packets; the QoS levels' shares and priorities then hold
  // only where something is capped (--shape-idle-nics, and --qos-level-shaping, set it).
  bool shape_idle = false;
};

struct ContainerAllocation {
  uint64_t key = 0;  // cgroup id
  QosLevel level = QosLevel::kShared;
  uint64_t rate_bps = 0;  // bit/s: the leaf's rate, what it is guaranteed under contention
  uint64_t ceil_bps = 0;  // bit/s it may reach; 0 = rate_bps (a hard cap)
  // The leaf may borrow up to its QoS level's ceiling (--container-ceil=level); ceil_bps unset.
  bool borrow = false;
  // Leaf minor, from the node-wide MinorAllocator: BuildHtbPlan requires it.
  uint32_t minor = 0;
  // The leaf's burst (its rate and ceiling buckets), bytes; 0 = the default bucket.
  uint32_t burst_bytes = 0;
  // The namespace aggregate class the leaf sits under (GroupClass::minor); 0: its level's class.
  uint32_t group_minor = 0;
  // This direction of the leaf is only there to put its pod under its namespace's aggregate (no
  // allocation or annotation caps it): it borrows from the aggregate, and EDT does not pace it
  // (it has no rate of its own to pace at).
  bool aggregate_member = false;
};

// A namespace aggregate on one NIC and QoS level (the tenant policy's): a class between the
// level's class and the leaves of the namespace's pods (node, level, namespace, pod, container).
// Namespaces without an aggregate have none: their leaves stay right under their level.
struct GroupClass {
  uint32_t minor = 0;  // in the container range, from the node-wide allocator
  QosLevel level = QosLevel::kShared;
  uint64_t rate_bps = 0;  // guaranteed: at least what its leaves are guaranteed together
  uint64_t ceil_bps = 0;  // the aggregate (its share on this level, when the namespace spans more)
  bool operator==(const GroupClass&) const = default;
};

struct PlannedClass {
  uint32_t handle = 0;
  uint32_t parent = 0;    // TC_H_ROOT-parented classes do not exist here: 10:1's parent is 10:0
  uint64_t rate_bps = 0;  // bit/s
  uint64_t ceil_bps = 0;  // bit/s
  uint32_t prio = 0;
  std::optional<uint64_t> container_key;  // set for container leaves
  uint32_t burst_bytes = 0;               // both buckets, bytes; 0 = the default (BucketBytes)

  bool operator==(const PlannedClass&) const = default;
};

struct HtbPlan {
  std::string nic;
  uint64_t link_mbps = 0;
  uint32_t qdisc_handle = MakeHandle(kQdiscMajor, 0);
  uint32_t default_minor = 0;  // HTB `default`
  // Parents before children: the order in which the classes can be created.
  std::vector<PlannedClass> classes;
  // Non-fatal: the guarantees do not fit the link (rates were capped at the link rate).
  std::vector<std::string> overcommit;
  // Whether the tree is to be installed: something in it caps (a container leaf, a namespace
  // aggregate, a level whose ceiling is below the link), or ShapingConfig::shape_idle. false: the
  // classes above describe what the tree would be, and the NIC keeps its own root qdisc.
  bool shapes = true;

  const PlannedClass* Find(uint32_t handle) const;
};

// Hands out leaf minors, stable per container key. Freed minors are reused (lowest first)
// before fresh ones are taken from the range.
class MinorAllocator {
 public:
  MinorAllocator(uint32_t first = kFirstContainerMinor, uint32_t last = kLastContainerMinor);

  // The key's minor; allocates one if the key has none. ResourceExhausted when the range is full.
  Result<uint32_t> Acquire(uint64_t key);
  // Records a known assignment (restore after restart). AlreadyExists if the minor is taken by
  // another key or the key holds another minor; InvalidArgument if out of range.
  Status Restore(uint64_t key, uint32_t minor);
  void Release(uint64_t key);
  std::optional<uint32_t> Lookup(uint64_t key) const;
  std::vector<uint64_t> Keys() const;
  size_t size() const { return by_key_.size(); }
  size_t capacity() const { return last_ - first_ + 1; }

 private:
  uint32_t first_;
  uint32_t last_;
  uint32_t next_fresh_;
  std::set<uint32_t> free_;  // released minors below next_fresh_
  std::set<uint32_t> used_;
  std::map<uint64_t, uint32_t> by_key_;
};

// Per QoS level, a ceiling in Mbit/s below the configured one (nullopt: none). The low-priority
// network group sets the reclaimed level's; the level's rate is held to it as well.
using LevelCeilings = std::array<std::optional<uint64_t>, kQosLevelCount>;

// Plans one NIC for containers that already carry their leaf minors (a node-wide allocator keeps
// a container's minor, and so its skb->priority, the same on every NIC and IFB). Pure.
// `groups`: the namespace aggregates on this NIC; a container's group_minor must name one of its
// level.
Result<HtbPlan> BuildHtbPlan(const std::string& nic, const ShapingConfig& config,
                             uint64_t link_mbps, const std::vector<ContainerAllocation>& containers,
                             const LevelCeilings& ceilings = {},
                             const std::vector<GroupClass>& groups = {});

// One level's class: permille ≤ 1000, ceil > 0, rate ≤ ceil, prio ≤ 7. The message is the bare
// reason ("rate exceeds ceil"); callers name the level or the item.
Status ValidateLevelConfig(const LevelConfig& level);

// Validates a ShapingConfig (each level as ValidateLevelConfig, bursts, the floor and the
// default level).
Status ValidateConfig(const ShapingConfig& config);

}  // namespace netqos::shaping
