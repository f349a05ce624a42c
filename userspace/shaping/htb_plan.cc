#include "shaping/htb_plan.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "common/tc_handle.h"

namespace netqos::shaping {
namespace {

constexpr std::array<QosLevel, kQosLevelCount> kLevels = {QosLevel::kSystem, QosLevel::kDedicated,
                                                          QosLevel::kShared, QosLevel::kReclaimed};

std::string NicPrefix(const std::string& nic) { return "nic " + nic + ": "; }

uint64_t Permille(uint64_t link_bps, uint32_t permille) { return link_bps / 1000 * permille; }

}  // namespace

std::string BitRateText(uint64_t bps) {
  struct Unit {
    uint64_t size;
    const char* name;
  };
  for (Unit u :
       {Unit{1'000'000'000, " Gbit/s"}, Unit{kBitsPerMbit, " Mbit/s"}, Unit{1000, " kbit/s"}}) {
    if (bps < u.size) continue;
    // Up to three decimals, trailing zeros dropped: 1.5 Mbit/s, 20 Mbit/s, 1.001 Gbit/s.
    std::string text = std::to_string(bps / u.size);
    uint64_t frac = (bps % u.size) * 1000 / u.size;
    if (frac != 0) {
      std::string digits = std::to_string(1000 + frac).substr(1);
      while (digits.back() == '0') digits.pop_back();
      text += "." + digits;
    }
    return text + u.name;
  }
  return std::to_string(bps) + " bit/s";
}

// tc and libnl default to rate / psched_hz + mtu, and psched_hz is 1e9 with high-resolution
// timers, so their bucket is one packet: every late dequeue (timer slack, softirq delay) then
// loses tokens, and a loaded 2-CPU VM measured a 1 Gbit/s leaf at 0.97 of its rate (0.995 with
// this bucket). A 1 ms burst at the class rate is negligible against any measurement window.
uint32_t DefaultBucketBytes(uint64_t rate_bps) {
  return static_cast<uint32_t>(std::min<uint64_t>(BitsToBytes(rate_bps) / 1000 + 1600, UINT32_MAX));
}

uint32_t BucketBytes(uint64_t rate_bps, uint32_t burst_bytes) {
  if (burst_bytes == 0) return DefaultBucketBytes(rate_bps);
  const uint64_t longest = BitsToBytes(rate_bps) * kMaxBucketSeconds;
  return static_cast<uint32_t>(std::min<uint64_t>(burst_bytes, std::max<uint64_t>(longest, 1)));
}

const PlannedClass* HtbPlan::Find(uint32_t handle) const {
  for (const auto& c : classes) {
    if (c.handle == handle) return &c;
  }
  return nullptr;
}

MinorAllocator::MinorAllocator(uint32_t first, uint32_t last)
    : first_(first), last_(std::max(first, last)), next_fresh_(first) {}

Result<uint32_t> MinorAllocator::Acquire(uint64_t key) {
  if (auto it = by_key_.find(key); it != by_key_.end()) return it->second;
  uint32_t minor = 0;
  if (!free_.empty()) {
    minor = *free_.begin();
    free_.erase(free_.begin());
  } else {
    while (next_fresh_ <= last_ && used_.count(next_fresh_) != 0) ++next_fresh_;
    if (next_fresh_ > last_) {
      return ResourceExhausted("no free HTB leaf minor: all " + std::to_string(capacity()) +
                               " minors in " + TcHandleText(first_) + ".." + TcHandleText(last_) +
                               " are in use");
    }
    minor = next_fresh_++;
  }
  used_.insert(minor);
  by_key_[key] = minor;
  return minor;
}

Status MinorAllocator::Restore(uint64_t key, uint32_t minor) {
  if (minor < first_ || minor > last_) {
    return InvalidArgument("minor " + std::to_string(minor) + " of container " +
                           std::to_string(key) + " is outside the leaf range");
  }
  if (auto it = by_key_.find(key); it != by_key_.end()) {
    if (it->second == minor) return Status::Ok();
    return Status(
        StatusCode::kAlreadyExists,
        "container " + std::to_string(key) + " already holds minor " + std::to_string(it->second));
  }
  if (used_.count(minor) != 0) {
    return Status(StatusCode::kAlreadyExists,
                  "minor " + std::to_string(minor) + " is already held by another container");
  }
  free_.erase(minor);
  // Fresh minors skipped over become free so that they can be handed out later.
  for (uint32_t m = next_fresh_; m < minor; ++m) {
    if (used_.count(m) == 0) free_.insert(m);
  }
  next_fresh_ = std::max(next_fresh_, minor + 1);
  used_.insert(minor);
  by_key_[key] = minor;
  return Status::Ok();
}

void MinorAllocator::Release(uint64_t key) {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return;
  used_.erase(it->second);
  free_.insert(it->second);
  by_key_.erase(it);
}

std::vector<uint64_t> MinorAllocator::Keys() const {
  std::vector<uint64_t> keys;
  keys.reserve(by_key_.size());
  for (const auto& [key, minor] : by_key_) keys.push_back(key);
  return keys;
}

std::optional<uint32_t> MinorAllocator::Lookup(uint64_t key) const {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return std::nullopt;
  return it->second;
}

Status ValidateLevelConfig(const LevelConfig& c) {
  if (c.rate_permille > 1000 || c.ceil_permille > 1000) {
    return InvalidArgument("rate and ceil are permille of the link, at most 1000");
  }
  if (c.ceil_permille == 0) return InvalidArgument("ceil must be positive");
  if (c.rate_permille > c.ceil_permille) return InvalidArgument("rate exceeds ceil");
  if (c.prio > 7) return InvalidArgument("HTB prio must be 0..7");
  return Status::Ok();
}

Status ValidateConfig(const ShapingConfig& config) {
  for (QosLevel l : kLevels) {
    const LevelConfig& c = config.levels[static_cast<size_t>(l)];
    const std::string what = std::string("shaping config level ") + QosLevelName(l) + ": ";
    if (Status st = ValidateLevelConfig(c); !st.ok()) return InvalidArgument(what + st.message());
    const uint32_t burst = config.burst_bytes[static_cast<size_t>(l)];
    if (burst != 0 && (burst < kMinBurstBytes || burst > kMaxBurstBytes)) {
      return InvalidArgument(what + "burst must be " + std::to_string(kMinBurstBytes) + ".." +
                             std::to_string(kMaxBurstBytes) + " bytes");
    }
  }
  if (config.low_priority_floor_percent && *config.low_priority_floor_percent > 100) {
    return InvalidArgument("shaping config: the low-priority group floor is a percentage, 0..100");
  }
  const int d = static_cast<int>(config.default_level);
  if (d < 0 || d >= kQosLevelCount) return InvalidArgument("shaping config: bad default level");
  return Status::Ok();
}

namespace {

// Checks one NIC's containers, each of which must already carry its minor.
Status ValidateContainers(const std::string& where, uint64_t link_mbps,
                          const std::vector<ContainerAllocation>& containers) {
  // Runs on every change of a NIC with thousands of leaves: no allocation per container (the
  // message prefix is built only for an error, duplicates are found by sorting and a bitmap).
  auto who = [&](const ContainerAllocation& c) {
    return where + "container " + std::to_string(c.key) + ": ";
  };
  const uint64_t link_bps = MbitToBits(link_mbps);
  std::vector<bool> minor_used(kLastContainerMinor + 1);
  for (const auto& c : containers) {
    const int l = static_cast<int>(c.level);
    if (l < 0 || l >= kQosLevelCount) return InvalidArgument(who(c) + "unknown QoS level");
    if (c.rate_bps == 0) return InvalidArgument(who(c) + "rate is 0 bit/s");
    if (c.rate_bps > link_bps || c.ceil_bps > link_bps) {
      return InvalidArgument(who(c) + "rate " + BitRateText(std::max(c.rate_bps, c.ceil_bps)) +
                             " exceeds the link rate " + BitRateText(link_bps));
    }
    if (c.ceil_bps != 0 && (c.ceil_bps < c.rate_bps || c.borrow)) {
      return InvalidArgument(who(c) + "ceiling " + BitRateText(c.ceil_bps) + " is below its rate " +
                             BitRateText(c.rate_bps) + " or set with borrowing");
    }
    if (c.burst_bytes != 0 && (c.burst_bytes < kMinBurstBytes || c.burst_bytes > kMaxBurstBytes)) {
      return InvalidArgument(who(c) + "burst " + std::to_string(c.burst_bytes) +
                             " bytes is outside " + std::to_string(kMinBurstBytes) + ".." +
                             std::to_string(kMaxBurstBytes));
    }
    if (c.minor < kFirstContainerMinor || c.minor > kLastContainerMinor) {
      return InvalidArgument(who(c) + "leaf minor " + std::to_string(c.minor) +
                             " is outside the container range");
    }
    if (minor_used[c.minor]) {
      return InvalidArgument(who(c) + "leaf minor " +
                             TcHandleText(MakeHandle(kQdiscMajor, c.minor)) +
                             " is used by another container");
    }
    minor_used[c.minor] = true;
  }
  std::vector<uint64_t> keys;
  keys.reserve(containers.size());
  for (const auto& c : containers) keys.push_back(c.key);
  std::sort(keys.begin(), keys.end());
  if (auto dup = std::adjacent_find(keys.begin(), keys.end()); dup != keys.end()) {
    ContainerAllocation c;
    c.key = *dup;
    return InvalidArgument(who(c) + "listed more than once");
  }
  return Status::Ok();
}

// Checks the aggregates and the leaves that name one: a group's minor is in the container range
// and no container's, its rate within its ceiling within the link; a leaf's group exists and is of
// its level.
Status ValidateGroups(const std::string& where, uint64_t link_mbps,
                      const std::vector<ContainerAllocation>& containers,
                      const std::vector<GroupClass>& groups) {
  if (groups.empty()) {
    for (const auto& c : containers) {
      if (c.group_minor != 0) {
        return InvalidArgument(
            where + "container " + std::to_string(c.key) + ": its aggregate class " +
            TcHandleText(MakeHandle(kQdiscMajor, c.group_minor)) + " is not planned");
      }
    }
    return Status::Ok();
  }
  std::map<uint32_t, const GroupClass*> by_minor;
  for (const auto& g : groups) {
    const std::string who =
        where + "aggregate " + TcHandleText(MakeHandle(kQdiscMajor, g.minor)) + ": ";
    if (g.minor < kFirstContainerMinor || g.minor > kLastContainerMinor) {
      return InvalidArgument(who + "minor outside the container range");
    }
    const int l = static_cast<int>(g.level);
    if (l < 0 || l >= kQosLevelCount) return InvalidArgument(who + "unknown QoS level");
    if (g.rate_bps == 0 || g.rate_bps > g.ceil_bps || g.ceil_bps > MbitToBits(link_mbps)) {
      return InvalidArgument(who + "rate " + BitRateText(g.rate_bps) + " and ceiling " +
                             BitRateText(g.ceil_bps) + " must be 0 < rate <= ceiling <= link");
    }
    if (!by_minor.emplace(g.minor, &g).second)
      return InvalidArgument(who + "listed more than once");
  }
  for (const auto& c : containers) {
    if (by_minor.count(c.minor) != 0) {
      return InvalidArgument(where + "container " + std::to_string(c.key) + ": leaf minor " +
                             TcHandleText(MakeHandle(kQdiscMajor, c.minor)) + " is an aggregate's");
    }
    if (c.group_minor == 0) continue;
    auto g = by_minor.find(c.group_minor);
    if (g == by_minor.end() || g->second->level != c.level) {
      return InvalidArgument(
          where + "container " + std::to_string(c.key) + ": no aggregate class " +
          TcHandleText(MakeHandle(kQdiscMajor, c.group_minor)) + " of its level");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<HtbPlan> BuildHtbPlan(const std::string& nic, const ShapingConfig& config,
                             uint64_t link_mbps, const std::vector<ContainerAllocation>& containers,
                             const LevelCeilings& ceilings, const std::vector<GroupClass>& groups) {
  const std::string where = NicPrefix(nic);
  NETQOS_RETURN_IF_ERROR(ValidateConfig(config).Wrap("nic " + nic));
  if (link_mbps == 0) return InvalidArgument(where + "link rate is 0 Mbps");
  NETQOS_RETURN_IF_ERROR(ValidateContainers(where, link_mbps, containers));
  NETQOS_RETURN_IF_ERROR(ValidateGroups(where, link_mbps, containers, groups));

  HtbPlan plan;
  plan.nic = nic;
  plan.link_mbps = link_mbps;
  plan.default_minor = LevelDefaultMinor(config.default_level);
  const uint64_t link_bps = MbitToBits(link_mbps);
  const uint32_t top = MakeHandle(kQdiscMajor, kTopMinor);
  plan.classes.reserve(1 + 2 * kQosLevelCount + containers.size() + groups.size());
  plan.classes.push_back({top, MakeHandle(kQdiscMajor, 0), link_bps, link_bps, 0, {}});

  uint64_t guaranteed = 0;
  bool capped_level = false;
  for (QosLevel l : kLevels) {
    const LevelConfig& lc = config.levels[static_cast<size_t>(l)];
    std::vector<PlannedClass> leaves;
    uint64_t containers_sum = 0;  // what the level's children are guaranteed
    for (const auto& c : containers) {
      if (c.level != l) continue;
      const uint32_t parent = c.group_minor != 0 ? c.group_minor : LevelMinor(l);
      if (c.group_minor == 0) containers_sum += c.rate_bps;
      leaves.push_back({MakeHandle(kQdiscMajor, c.minor), MakeHandle(kQdiscMajor, parent),
                        c.rate_bps, c.borrow ? 0 : std::max(c.rate_bps, c.ceil_bps), lc.prio, c.key,
                        c.burst_bytes});
    }
    std::vector<PlannedClass> aggregates;
    for (const auto& g : groups) {
      if (g.level != l) continue;
      containers_sum += g.rate_bps;
      // Like the level classes: HTB uses prio only on leaves.
      aggregates.push_back({MakeHandle(kQdiscMajor, g.minor),
                            MakeHandle(kQdiscMajor, LevelMinor(l)),
                            g.rate_bps,
                            g.ceil_bps,
                            0,
                            {}});
    }
    auto by_handle = [](const PlannedClass& a, const PlannedClass& b) {
      return a.handle < b.handle;
    };
    std::sort(leaves.begin(), leaves.end(), by_handle);
    std::sort(aggregates.begin(), aggregates.end(), by_handle);

    const uint64_t configured = Permille(link_bps, lc.rate_permille);
    uint64_t ceil = std::max<uint64_t>(kBitsPerMbit, Permille(link_bps, lc.ceil_permille));
    const uint64_t default_rate =
        std::max(MbitToBits(config.default_leaf_min_mbps),
                 configured > containers_sum ? configured - containers_sum : 0);
    const uint64_t children = containers_sum + std::max<uint64_t>(kBitsPerMbit, default_rate);
    uint64_t rate = std::max(configured, children);
    if (rate > link_bps) {
      plan.overcommit.push_back(where + "level " + QosLevelName(l) + " needs " +
                                BitRateText(children) + " (containers " +
                                BitRateText(containers_sum) + " + default leaf) but the link has " +
                                BitRateText(link_bps) + "; capped at the link rate");
      rate = link_bps;
    }
    ceil = std::min(link_bps, std::max(ceil, rate));
    if (const auto& cap = ceilings[static_cast<size_t>(l)]; cap) {
      // HTB wants rate <= ceil: a level held below its guarantee gives the guarantee up too.
      const uint64_t c = MbitToBits(std::max<uint64_t>(1, *cap));
      ceil = std::min(ceil, c);
      rate = std::min(rate, c);
    }
    guaranteed += rate;
    if (ceil < link_bps) capped_level = true;

    const uint32_t parent = MakeHandle(kQdiscMajor, LevelMinor(l));
    // HTB uses prio only on leaves (the kernel neither keeps nor reports it for inner classes),
    // so the level's prio goes to its leaves and the level class itself carries 0.
    plan.classes.push_back({parent, top, rate, ceil, 0, {}});
    const uint64_t dflt = std::max<uint64_t>(kBitsPerMbit, std::min(default_rate, ceil));
    plan.classes.push_back({MakeHandle(kQdiscMajor, LevelDefaultMinor(l)),
                            parent,
                            std::min(dflt, ceil),
                            ceil,
                            lc.prio,
                            {},
                            config.burst_bytes[static_cast<size_t>(l)]});
    // Parents before children: the aggregates before the leaves (some of which are theirs).
    for (auto& a : aggregates) {
      a.ceil_bps = std::min(a.ceil_bps, ceil);
      a.rate_bps = std::min(a.rate_bps, a.ceil_bps);
      plan.classes.push_back(a);
    }
    for (auto leaf : leaves) {
      // Borrowing leaves reach up to what their parent may take (the level, or their namespace's
      // aggregate); HTB wants rate <= ceil.
      if (leaf.ceil_bps == 0) {
        uint64_t parent_ceil = ceil;
        for (const auto& a : aggregates) {
          if (a.handle == leaf.parent) parent_ceil = a.ceil_bps;
        }
        leaf.ceil_bps = std::max(leaf.rate_bps, parent_ceil);
      }
      plan.classes.push_back(leaf);
    }
  }
  if (guaranteed > link_bps) {
    plan.overcommit.push_back(where + "QoS level guarantees sum to " + BitRateText(guaranteed) +
                              ", more than the link rate " + BitRateText(link_bps));
  }
  // Levels that only share the link out (rates and priorities, every ceiling at the link) act
  // under contention alone; without a cap among them the NIC's own root does as well for less
  // per packet (docs/benchmarks.md).
  plan.shapes = config.shape_idle || !containers.empty() || !groups.empty() || capped_level;
  return plan;
}

}  // namespace netqos::shaping
