// Namespace aggregates (the tenant policy's `aggregate`, tenant_policy.h): all the pods of a
// namespace together held to a ceiling, with an optional guarantee, on each enforced NIC and in
// each direction. In HTB a class between the QoS level's and the leaves of the namespace's pods
// (node, level, namespace, pod, container); namespaces without an aggregate have no such class.
// Pure: which classes, their rates, and where each member leaf goes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "shaping/htb_plan.h"

namespace netqos::enforce {

// The key of a namespace's aggregate class at `level` in the node-wide leaf minor allocator: the
// top bit set (no cgroup id has it, so it never names a leaf), the level, and a hash of the name.
uint64_t AggregateKey(shaping::QosLevel level, const std::string& pod_namespace);

// One leaf of an aggregated namespace on one NIC, in one direction.
struct AggregateMember {
  uint64_t leaf_key = 0;
  std::string pod_namespace;
  shaping::QosLevel level = shaping::QosLevel::kShared;
  uint64_t rate_bps = 0;  // its guarantee
  uint64_t ceil_bps = 0;  // its own ceiling; 0 when it borrows
  bool borrow = false;
};

// Where a member goes and what it keeps: under its aggregate's class, its guarantee scaled down
// when the namespace's leaves are guaranteed more than the aggregate allows (the aggregate is the
// outer bound: HTB lets a leaf send at its rate whatever its parent's ceiling), its own ceiling
// held to the aggregate.
struct AggregatePlacement {
  uint32_t group_minor = 0;
  uint64_t rate_bps = 0;
  uint64_t ceil_bps = 0;  // 0 when it borrows (up to the aggregate)
};

struct AggregateCap {
  uint64_t ceil_bps = 0;
  uint64_t rate_bps = 0;  // guarantee; 0: none beyond its leaves'
};

struct AggregatePlan {
  std::vector<shaping::GroupClass> groups;
  std::map<uint64_t, AggregatePlacement> members;  // by leaf key
  std::vector<std::string> problems;               // each starts with `where`
};

// One NIC and direction (`where` names them for problems). A namespace whose members are in more
// than one QoS level gets a class in each, the aggregate divided between them by what their leaves
// are guaranteed (at least 1 kbit/s each): never more than the aggregate together, though one level
// cannot borrow another's share. `minor_of` gives the class minor of an AggregateKey (nullopt:
// none; those members stay under their level).
AggregatePlan PlanAggregates(const std::vector<AggregateMember>& members,
                             const std::map<std::string, AggregateCap>& caps,
                             const std::function<std::optional<uint32_t>(uint64_t)>& minor_of,
                             const std::string& where);

}  // namespace netqos::enforce
