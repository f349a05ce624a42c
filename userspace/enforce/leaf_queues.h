// Which container each HTB leaf's counters belong to. The BPF programs never drop: a container's
// drops are the queue drops of its own leaf (egress on the NIC, ingress on the NIC's IFB). The
// enforcer records, per shaped link, which leaf handle carries which leaf key; this joins what
// the kernel reports for those handles with the containers of the last pass. Pure (no I/O).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/counters.h"
#include "common/status.h"
#include "core/types.h"
#include "enforce/desired_state.h"
#include "shaping/htb_class_stats.h"
#include "shaping/htb_plan.h"

namespace netqos::enforce {

// A QoS level's class in one tree (10:10 system ... 10:40 reclaimed): the parent of the level's
// container leaves and of its default leaf, so everything the level sends passes through it.
struct LevelClass {
  shaping::QosLevel level = shaping::QosLevel::kShared;
  uint32_t handle = 0;
  uint64_t rate_bps = 0;  // as applied: guaranteed to the level under contention
  uint64_t ceil_bps = 0;  // the most the level gets
  bool operator==(const LevelClass&) const = default;
};
// The level classes of a plan, by level; none in an empty plan (egress paced in EDT mode) or in
// one not installed (HtbPlan::shapes false: nothing capped on the NIC).
std::vector<LevelClass> LevelClasses(const shaping::HtbPlan& plan);

// The leaves of one shaped link, as the last pass applied them.
struct LinkLeaves {
  core::Nic nic;    // ifindex and netns_path say where the trees are
  std::string ifb;  // the device of the ingress tree (IfbNameFor(nic.ifindex))
  // Leaf key (a container's cgroup id, or its pod's for a pod-level allocation) -> class handle.
  std::map<uint64_t, uint32_t> egress;
  std::map<uint64_t, uint32_t> ingress;
  std::vector<LevelClass> egress_levels;
  std::vector<LevelClass> ingress_levels;
};

// The leaf keys of a plan's container leaves (or of some of its classes: a patch's new ones),
// with their class handles.
std::map<uint64_t, uint32_t> LeafHandles(const std::vector<shaping::PlannedClass>& classes);
inline std::map<uint64_t, uint32_t> LeafHandles(const shaping::HtbPlan& plan) {
  return LeafHandles(plan.classes);
}

// What the kernel reported for one link: the classes on the NIC and on its IFB.
struct LinkClassStats {
  shaping::HtbClassStatsMap egress;
  shaping::HtbClassStatsMap ingress;
};

// Reads a link's class counters (the kernel: enforce/kernel/kernel_class_stats.h).
using ReadLinkClassStats = std::function<Result<LinkClassStats>(const core::Nic& nic)>;

// A container's own leaf in one direction.
struct LeafQueue {
  std::string device;  // the NIC's name (egress) or the IFB's (ingress)
  uint32_t handle = 0;
  QueueCounters counters;  // zeros when `error` is set
  std::string error;       // why there are no counters ("" = read)
};

struct ContainerQueues {
  std::optional<LeafQueue> egress;  // unset: no leaf of its own in that direction
  std::optional<LeafQueue> ingress;
};

struct ClassQueues {
  QueueCounters egress;  // sums over distinct leaves
  QueueCounters ingress;
};

// A level class of a shaped link in one direction, with its counters.
struct LevelQueue {
  std::string nic;  // the link's NIC identifier
  bool egress = true;
  LevelClass level;
  std::optional<QueueCounters> counters;  // unset: not read (the link's error is in errors)
};

struct QueueSnapshot {
  std::map<uint64_t, ContainerQueues> containers;  // by cgroup id: containers with a leaf
  std::map<uint32_t, ClassQueues> classes;         // by net class id, for every class seen
  std::vector<LevelQueue> levels;                  // every level class of every shaped link
  std::vector<std::string> errors;                 // links that could not be read
};

// `readings[i]` is what was read for `links[i]`. Containers without a leaf key (their level's
// default leaf) get no entry; a leaf shared by a pod's containers is reported for each of them
// and counted once in its class. Every level class of the links is reported, read or not.
QueueSnapshot AttributeLeafQueues(const std::vector<LinkLeaves>& links,
                                  const std::vector<Result<LinkClassStats>>& readings,
                                  const std::map<uint64_t, DesiredContainer>& containers);

}  // namespace netqos::enforce
