#include "enforce/desired_state.h"

#include <algorithm>
#include <set>

#include "core/constants.h"
#include "core/low_priority_group.h"
#include "core/net_class.h"
#include "core/qos.h"
#include "enforce/aggregates.h"

namespace netqos::enforce {
namespace {

const core::AllocationInfo* FindAllocation(const core::PodEntries& allocations,
                                           const std::string& pod_uid,
                                           const std::string& container) {
  auto pod = allocations.find(pod_uid);
  if (pod == allocations.end()) return nullptr;
  auto it = pod->second.find(container);
  return it == pod->second.end() ? nullptr : &it->second;
}

struct Leaf {
  std::vector<core::NicId> nics;
  shaping::QosLevel level = shaping::QosLevel::kShared;
  LeafRates rates;
  uint32_t burst_bytes = 0;
  std::vector<uint64_t> cgroups;  // containers whose traffic uses this leaf
  // The namespace's aggregate (tenant policy), when it has one: the leaf goes under its class.
  std::string pod_namespace;
  NamespaceAggregate aggregate;
};

// What a pod's annotations ask for under its tenant rules, read once per pod per pass.
struct PodCaps {
  core::AnnotatedBandwidth annotated;
  ContainerCeil ceil = ContainerCeil::kAllocation;
  PodBurst burst;  // the pod's netqos.io/burst when read and valid (bounded per leaf later)
  std::vector<TenantDecision> decisions;  // about the pod's bandwidth, ceiling and burst
  bool any() const { return annotated.egress_bps || annotated.ingress_bps; }
};

const TenantPolicy& PolicyOf(const DesiredOptions& options) {
  static const TenantPolicy kBuiltIn;
  return options.tenant ? *options.tenant : kBuiltIn;
}

std::string PodLabel(const ObservedContainer& c) { return c.pod_namespace() + "/" + c.pod_name(); }

std::string Joined(const std::vector<std::string>& notes) {
  std::string out;
  for (const auto& n : notes) out += (out.empty() ? "" : "; ") + n;
  return out;
}

// A refused annotation keeps the value the pod was enforced with before, if any. The tenant
// rules decide what the pod may ask for at all (tenant_rules.h).
// `level` is the first container's: a refused burst names the level whose burst is used instead.
PodCaps ReadPodCaps(const ObservedContainer& c, shaping::QosLevel level,
                    const DesiredOptions& options, const TenantRules& rules,
                    const std::string& entry, const AnnotatedByPod& previous,
                    std::vector<std::string>& problems) {
  PodCaps caps;
  std::vector<std::string> notes;
  caps.annotated = core::ReadBandwidthAnnotations(c.pod_annotations());
  caps.decisions = RuleBandwidth(c.pod_annotations(), caps.annotated, rules, entry);
  CeilRuling ceil = RuleContainerCeil(c.pod_annotations(), options.container_ceil, rules, entry);
  caps.ceil = ceil.ceil;
  if (ceil.decision) caps.decisions.push_back(std::move(*ceil.decision));
  if (auto refused = BurstNotHonoured(c.pod_annotations(), rules, entry)) {
    caps.decisions.push_back(std::move(*refused));
  } else {
    caps.burst = ReadPodBurst(c.pod_annotations());
    if (!caps.burst.error.empty()) {
      caps.decisions.push_back(
          {kBurstAnnotation, TenantValue(c.pod_annotations().at(kBurstAnnotation)),
           TenantVerdict::kRefused,
           caps.burst.error + "; the " + shaping::QosLevelName(level) + " level's burst, " +
               BurstText(options.level_burst[static_cast<size_t>(level)]) + ", applies"});
    }
  }
  auto before = previous.find(c.pod_uid());
  const core::AnnotatedBandwidth* old = before == previous.end() ? nullptr : &before->second;
  const auto keep = [&](bool refused, std::optional<uint64_t>& now,
                        const std::optional<uint64_t> core::AnnotatedBandwidth::*field) {
    if (refused && old != nullptr) now = old->*field;
  };
  keep(caps.annotated.egress_refused, caps.annotated.egress_bps,
       &core::AnnotatedBandwidth::egress_bps);
  keep(caps.annotated.ingress_refused, caps.annotated.ingress_bps,
       &core::AnnotatedBandwidth::ingress_bps);
  for (const auto& e : caps.annotated.errors)
    notes.push_back(e + " (the pod keeps the cap it had)");
  // One problem per pod: the log keys problems by what precedes the first ':'.
  if (!notes.empty()) problems.push_back(PodLabel(c) + ": " + Joined(notes));
  return caps;
}

bool IsLeafPriority(uint32_t priority) {
  const uint32_t minor = shaping::HandleMinor(priority);
  return shaping::HandleMajor(priority) == shaping::kQdiscMajor &&
         minor >= shaping::kFirstContainerMinor && minor <= shaping::kLastContainerMinor;
}

// Where a container's traffic is capped, and at what: its key (the container's cgroup, or its
// pod's for a pod-level leaf), the NICs and the rates per direction.
struct LeafPlacement {
  uint64_t key = 0;
  std::vector<core::NicId> nics;
  LeafRates rates;
};

// The allocation's NIC; for a pod capped by annotations alone, every enforced NIC (its traffic
// may leave by any of them), with one leaf shared by the pod. nullopt: no leaf (`notes` says
// why when it is something to fix).
std::optional<LeafPlacement> PlaceLeaf(const ObservedContainer& c,
                                       const core::AllocationInfo* alloc, bool pod_level,
                                       const PodCaps& caps,
                                       const std::map<core::NicId, uint64_t>& link_mbps,
                                       std::vector<std::string>& notes) {
  LeafPlacement p;
  p.key = c.cgroup_id;
  if (alloc != nullptr) {
    if (link_mbps.count(alloc->nic()) != 0) p.nics.push_back(alloc->nic());
    if (pod_level) p.key = c.pod_cgroup_id;
  } else if (caps.any()) {
    for (const auto& [id, mbps] : link_mbps) p.nics.push_back(id);
    p.key = c.pod_cgroup_id;
  }
  if (p.nics.empty()) return std::nullopt;
  uint64_t link_bps = UINT64_MAX;
  for (const auto& id : p.nics)
    link_bps = std::min(link_bps, shaping::MbitToBits(link_mbps.at(id)));
  const std::string on = p.nics.size() == 1 ? " on " + p.nics[0].Identifier() : "";
  // Katalyst's allocation reserves the request both ways; one without egress (an implicit
  // request) reserves nothing, and is capped at what it declared, both ways.
  const uint64_t egress_mbps = alloc != nullptr ? alloc->egress : 0;
  const uint64_t ingress_mbps = egress_mbps != 0 ? alloc->ingress : 0;
  const uint32_t declared_mbps =
      alloc != nullptr && egress_mbps == 0 ? core::RequestedMbps(*alloc) : 0;
  if (declared_mbps != 0) {
    const uint64_t declared = shaping::MbitToBits(declared_mbps);
    p.rates.egress =
        ImplicitDirectionRates(declared, caps.annotated.egress_bps, link_bps, "egress" + on, notes);
    p.rates.ingress = ImplicitDirectionRates(declared, caps.annotated.ingress_bps, link_bps,
                                             "ingress" + on, notes);
  } else {
    p.rates.egress = ComputeDirectionRates(egress_mbps, caps.annotated.egress_bps, caps.ceil,
                                           link_bps, "egress" + on, notes);
    p.rates.ingress = ComputeDirectionRates(ingress_mbps, caps.annotated.ingress_bps, caps.ceil,
                                            link_bps, "ingress" + on, notes);
  }
  if (!p.rates.any()) return std::nullopt;
  if (p.key == 0) {
    notes.push_back("pod-level cap but the pod cgroup was not found; not capped");
    return std::nullopt;
  }
  return p;
}

// Puts the leaves of aggregated namespaces under their aggregate's class, on each NIC and in each
// direction (aggregates.h), and adds the classes to the state.
void PlaceAggregates(const std::map<uint64_t, Leaf>& leaves,
                     const std::map<uint64_t, uint32_t>& aggregate_minors, DesiredState& s) {
  std::map<std::string, AggregateCap> egress_caps, ingress_caps;
  for (const auto& [key, leaf] : leaves) {
    if (!leaf.aggregate.any()) continue;
    const NamespaceAggregate& a = leaf.aggregate;
    if (a.egress_ceil_bps != 0)
      egress_caps[leaf.pod_namespace] = {a.egress_ceil_bps, a.egress_rate_bps};
    if (a.ingress_ceil_bps != 0) {
      ingress_caps[leaf.pod_namespace] = {a.ingress_ceil_bps, a.ingress_rate_bps};
    }
  }
  const auto minor_of = [&](uint64_t key) -> std::optional<uint32_t> {
    auto it = aggregate_minors.find(key);
    if (it == aggregate_minors.end()) return std::nullopt;
    return it->second;
  };
  struct Direction {
    std::map<core::NicId, std::vector<shaping::ContainerAllocation>>* trees;
    std::map<core::NicId, std::vector<shaping::GroupClass>>* groups;
    const std::map<std::string, AggregateCap>* caps;
    const char* name;
  };
  for (Direction dir : {Direction{&s.egress, &s.egress_groups, &egress_caps, "egress"},
                        Direction{&s.ingress, &s.ingress_groups, &ingress_caps, "ingress"}}) {
    if (dir.caps->empty()) continue;
    for (auto& [nic, tree] : *dir.trees) {
      std::vector<AggregateMember> members;
      for (const auto& a : tree) {
        const Leaf& leaf = leaves.at(a.key);
        if (dir.caps->count(leaf.pod_namespace) == 0) continue;
        members.push_back({a.key, leaf.pod_namespace, a.level, a.rate_bps, a.ceil_bps, a.borrow});
      }
      if (members.empty()) continue;
      AggregatePlan plan = PlanAggregates(
          members, *dir.caps, minor_of, "aggregate on " + nic.Identifier() + " " + dir.name + ": ");
      for (auto& a : tree) {
        auto placed = plan.members.find(a.key);
        if (placed == plan.members.end()) continue;
        a.group_minor = placed->second.group_minor;
        a.rate_bps = placed->second.rate_bps;
        a.ceil_bps = placed->second.ceil_bps;
      }
      (*dir.groups)[nic] = std::move(plan.groups);
      for (auto& p : plan.problems) s.problems.push_back(std::move(p));
    }
  }
  for (auto& [cg, d] : s.by_cgroup) {
    if (!d.leaf_key) continue;
    auto leaf = leaves.find(*d.leaf_key);
    if (leaf == leaves.end() || !leaf->second.aggregate.any()) continue;
    if (auto m = minor_of(AggregateKey(leaf->second.level, leaf->second.pod_namespace))) {
      d.aggregate_minor = *m;
    }
  }
}

// A direction of a leaf that is there for its namespace's aggregate only: the smallest guarantee,
// borrowing up to the aggregate.
DirectionRates MemberRates(uint64_t aggregate_ceil_bps) {
  DirectionRates r;
  r.rate_bps = std::min(aggregate_ceil_bps, kUnreservedLeafRateBps);
  r.borrow = true;
  r.member = true;
  return r;
}

// Every pod of an aggregated namespace is in the aggregate, in every direction it caps: a pod
// without a leaf gets one (its pod's, on every enforced NIC, like a pod capped by annotations), a
// leaf without a direction the aggregate caps gets it.
void AddMemberDirections(LeafPlacement& p, const NamespaceAggregate& a) {
  if (a.egress_ceil_bps != 0 && !p.rates.egress.capped()) {
    p.rates.egress = MemberRates(a.egress_ceil_bps);
  }
  if (a.ingress_ceil_bps != 0 && !p.rates.ingress.capped()) {
    p.rates.ingress = MemberRates(a.ingress_ceil_bps);
  }
}

std::optional<LeafPlacement> MemberLeaf(const ObservedContainer& c, const NamespaceAggregate& a,
                                        const std::map<core::NicId, uint64_t>& link_mbps) {
  LeafPlacement p;
  p.key = c.pod_cgroup_id != 0 ? c.pod_cgroup_id : c.cgroup_id;
  for (const auto& [id, mbps] : link_mbps) p.nics.push_back(id);
  if (p.nics.empty() || p.key == 0) return std::nullopt;
  AddMemberDirections(p, a);
  return p;
}

}  // namespace

const PodMetaPtr& NoPodMeta() {
  static const PodMetaPtr kNone = std::make_shared<const PodMeta>();
  return kNone;
}

const PodAnnotationsPtr& NoPodAnnotations() {
  static const PodAnnotationsPtr kNone = std::make_shared<const core::StringMap>();
  return kNone;
}

const NicListPtr& NoNics() {
  static const NicListPtr kNone = std::make_shared<const std::vector<core::NicId>>();
  return kNone;
}

const std::shared_ptr<const std::string>& NoTenantEntry() {
  static const std::shared_ptr<const std::string> kNone = std::make_shared<const std::string>();
  return kNone;
}

std::optional<shaping::QosLevel> LevelOf(const std::string& katalyst_level) {
  if (katalyst_level == core::kSystemCores) return shaping::QosLevel::kSystem;
  if (katalyst_level == core::kDedicatedCores) return shaping::QosLevel::kDedicated;
  if (katalyst_level == core::kSharedCores) return shaping::QosLevel::kShared;
  if (katalyst_level == core::kReclaimedCores) return shaping::QosLevel::kReclaimed;
  return std::nullopt;
}

DesiredOptions DesiredOptionsFor(const shaping::ShapingConfig& shaping, bool shaping_on) {
  DesiredOptions o;
  o.set_priority = shaping_on;
  for (size_t l = 0; l < shaping.levels.size(); ++l) {
    o.ingress_level_limited[l] = shaping.levels[l].ceil_permille < 1000;
  }
  // The low-priority group holds reclaimed traffic below the link on the IFB too.
  if (shaping.low_priority_floor_percent) {
    o.ingress_level_limited[static_cast<size_t>(shaping::QosLevel::kReclaimed)] = true;
  }
  o.unclassified_level = shaping.default_level;
  o.container_ceil = shaping.container_ceil;
  o.level_dscp = shaping.dscp;
  o.level_burst = shaping.burst_bytes;
  o.unmarked_dscp = shaping.unmarked_dscp;
  return o;
}

void CountRefusals(const DesiredContainer& d,
                   std::set<std::pair<std::string, std::string>>& counted,
                   std::map<std::pair<std::string, std::string>, uint64_t>& refused) {
  for (const auto& decision : d.decisions) {
    if (decision.verdict == TenantVerdict::kHonoured) continue;
    if (!counted.insert({d.pod_uid(), decision.annotation}).second) continue;
    ++refused[{d.pod_namespace(), decision.annotation}];
  }
}

uint32_t ClassFlags(const DesiredOptions& options, shaping::QosLevel level, bool leaf_minor,
                    bool ingress_leaf) {
  if (!options.set_priority) return 0;
  bool limited = false;
  if (ingress_leaf) {
    limited = true;
  } else {
    const auto lands_in = leaf_minor ? options.unclassified_level : level;
    limited = options.ingress_level_limited[static_cast<size_t>(lands_in)];
  }
  return (limited ? kClassIngressShaped : 0) | (leaf_minor ? 0 : kClassNoLeaf);
}

DesiredState ComputeDesiredState(const core::PolicyConfig& policy,
                                 const core::PodEntries& allocations,
                                 const std::vector<ObservedContainer>& containers,
                                 const std::vector<EnforcedLink>& enforced,
                                 const std::map<uint64_t, uint32_t>& current,
                                 const DesiredOptions& options, shaping::MinorAllocator& minors,
                                 const AnnotatedByPod& previous_annotated) {
  DesiredState s;
  std::map<std::string, PodCaps> pod_caps;
  std::map<uint64_t, std::vector<std::string>> notes_by_cgroup;
  std::map<core::NicId, uint64_t> link_mbps;
  for (const auto& l : enforced) {
    link_mbps[l.id] = l.link_mbps;
    s.egress[l.id];  // every enforced NIC gets its tree, leaves or not
    s.ingress[l.id];
  }

  std::map<uint64_t, Leaf> leaves;                        // by leaf key
  std::set<std::pair<std::string, std::string>> counted;  // (pod uid, annotation) refused
  // The tenant entry's name per namespace, made once a pass and shared by its containers.
  std::map<std::string, std::shared_ptr<const std::string>> tenant_entries;
  // The allocations' NICs and the leaves' NIC lists, likewise.
  std::map<core::NicId, NicIdPtr> nic_ids;
  std::map<std::vector<core::NicId>, NicListPtr> nic_lists;
  for (const auto& c : containers) {
    if (c.cgroup_id == 0) continue;
    const core::AllocationInfo* alloc = FindAllocation(allocations, c.pod_uid(), c.container_name);
    bool pod_level = false;
    if (alloc == nullptr) {
      alloc = FindAllocation(allocations, c.pod_uid(), core::kPodLevelContainerName);
      pod_level = alloc != nullptr;
    }

    // Everything about the container an operator should fix, in one problem: the problem log
    // keys problems by what precedes the first ':', and two under one key would flap.
    std::vector<std::string>& notes = notes_by_cgroup[c.cgroup_id];
    const TenantPolicy& tenant = PolicyOf(options);
    const TenantRules& rules = tenant.For(c.pod_namespace());
    DesiredContainer d;
    std::shared_ptr<const std::string>& entry = tenant_entries[c.pod_namespace()];
    if (!entry) entry = std::make_shared<const std::string>(tenant.EntryName(c.pod_namespace()));
    d.tenant = entry;

    // The allocation's level, which the kubelet asked for and netqos admitted; without one, what
    // the pod's annotations claim, held to what its tenant rules allow. A level that cannot be
    // used classifies the container at the unclassified level: it keeps its caps.
    std::string level_name;
    std::optional<shaping::QosLevel> level;
    if (alloc != nullptr) {
      level_name = alloc->qos_level;
      level = LevelOf(level_name);
      if (!level) {
        level = options.unclassified_level;
        notes.push_back("the allocation's QoS level " + TenantValue(level_name) +
                        " is unknown; classified at the unclassified level " +
                        KatalystLevelName(*level));
        level_name = KatalystLevelName(*level);
      }
    } else {
      LevelChoice choice = UnallocatedLevel(policy.qos, c.pod_annotations(), rules,
                                            d.tenant_entry(), options.unclassified_level);
      level = choice.level;
      level_name = choice.katalyst_name;
      if (choice.decision) d.decisions.push_back(std::move(*choice.decision));
    }
    d.pod = c.pod;
    d.container_name = c.container_name;
    d.entry.qos_level = static_cast<uint8_t>(*level);
    if (auto id = core::ResolveNetClassId(policy, c.pod_annotations(), level_name); id.ok()) {
      d.entry.net_class_id = *id;
    } else {
      // The cap matters more than the tag: keep enforcing with the level's configured id.
      auto dflt = policy.qos_class_ids.find(level_name);
      d.entry.net_class_id = dflt == policy.qos_class_ids.end() ? 0 : dflt->second;
      notes.push_back(id.status().message() + "; using the " + level_name + " class id " +
                      std::to_string(d.entry.net_class_id));
    }
    DscpRuling dscp =
        RuleDscp(options.level_dscp, *level, c.pod_annotations(), rules, d.tenant_entry());
    d.entry.dscp = dscp.dscp ? dscp.dscp : options.unmarked_dscp;
    if (dscp.decision) d.decisions.push_back(std::move(*dscp.decision));

    auto pod = pod_caps.find(c.pod_uid());
    if (pod == pod_caps.end()) {
      pod = pod_caps
                .emplace(c.pod_uid(), ReadPodCaps(c, *level, options, rules, d.tenant_entry(),
                                                  previous_annotated, s.problems))
                .first;
      s.annotated[c.pod_uid()] = pod->second.annotated;
    }
    d.decisions.insert(d.decisions.end(), pod->second.decisions.begin(),
                       pod->second.decisions.end());
    if (alloc != nullptr) {
      NicIdPtr& nic = nic_ids[alloc->nic()];
      if (!nic) nic = std::make_shared<const core::NicId>(alloc->nic());
      d.nic = nic;
      d.allocated_mbps = alloc->egress;
      const uint32_t declared = alloc->egress == 0 ? core::RequestedMbps(*alloc) : 0;
      if (auto implicit = ImplicitDecision(c.pod_annotations(), alloc->egress, declared, rules,
                                           d.tenant_entry())) {
        d.decisions.push_back(std::move(*implicit));
      }
    }
    std::optional<LeafPlacement> placed =
        PlaceLeaf(c, alloc, pod_level, pod->second, link_mbps, notes);
    if (rules.aggregate.any()) {
      if (placed) {
        AddMemberDirections(*placed, rules.aggregate);
      } else {
        placed = MemberLeaf(c, rules.aggregate, link_mbps);
      }
    }
    if (placed) {
      Leaf& leaf = leaves[placed->key];
      leaf.nics = placed->nics;
      leaf.level = *level;
      leaf.rates = placed->rates;
      leaf.pod_namespace = c.pod_namespace();
      leaf.aggregate = rules.aggregate;
      BurstRuling burst = RuleBurst(pod->second.burst, c.pod_annotations(), options.level_burst,
                                    *level, placed->rates, rules, d.tenant_entry());
      leaf.burst_bytes = burst.burst_bytes;
      if (burst.decision) d.decisions.push_back(std::move(*burst.decision));
      leaf.cgroups.push_back(c.cgroup_id);
      d.leaf_key = placed->key;
      d.rates = placed->rates;
      d.burst_bytes = leaf.burst_bytes;
      NicListPtr& nics = nic_lists[placed->nics];
      if (!nics) nics = std::make_shared<const std::vector<core::NicId>>(std::move(placed->nics));
      d.leaf_nics = nics;
    }
    for (const auto& decision : d.decisions) {
      if (decision.verdict != TenantVerdict::kHonoured) notes.push_back(DecisionText(decision));
    }
    CountRefusals(d, counted, s.refused);
    s.by_cgroup[c.cgroup_id] = std::move(d);
  }

  // The aggregates' classes take minors from the same allocator, under keys no leaf has.
  std::map<uint64_t, std::string> aggregate_keys;  // key -> namespace
  for (const auto& [key, leaf] : leaves) {
    if (!leaf.aggregate.any()) continue;
    const uint64_t k = AggregateKey(leaf.level, leaf.pod_namespace);
    auto [it, added] = aggregate_keys.emplace(k, leaf.pod_namespace);
    if (!added && it->second != leaf.pod_namespace) {
      s.problems.push_back("aggregate: namespaces " + it->second + " and " + leaf.pod_namespace +
                           " hash to one class key; " + leaf.pod_namespace +
                           " is shaped without its aggregate");
    }
  }
  // Minors: release the departed, let containers keep the minor they already run with, then
  // hand out fresh ones.
  for (uint64_t key : minors.Keys()) {
    if (leaves.count(key) == 0 && aggregate_keys.count(key) == 0) minors.Release(key);
  }
  for (const auto& [key, leaf] : leaves) {
    if (minors.Lookup(key)) continue;
    for (uint64_t cg : leaf.cgroups) {
      auto cur = current.find(cg);
      if (cur == current.end() || !IsLeafPriority(cur->second)) continue;
      if (minors.Restore(key, shaping::HandleMinor(cur->second)).ok()) break;
    }
  }
  for (auto it = leaves.begin(); it != leaves.end();) {
    if (minors.Lookup(it->first) || minors.Acquire(it->first).ok()) {
      ++it;
      continue;
    }
    for (uint64_t cg : it->second.cgroups) {
      s.by_cgroup[cg].leaf_key.reset();
      notes_by_cgroup[cg].push_back("no free HTB leaf minor; shaped by its QoS level only");
    }
    it = leaves.erase(it);
  }

  std::map<uint64_t, uint32_t> aggregate_minors;  // aggregate key -> class minor
  for (const auto& [key, ns] : aggregate_keys) {
    auto minor = minors.Acquire(key);
    if (minor.ok()) {
      aggregate_minors[key] = *minor;
    } else {
      s.problems.push_back("aggregate: namespace " + ns + ": " + minor.status().message() +
                           "; shaped without its aggregate");
    }
  }

  for (const auto& [cg, notes] : notes_by_cgroup) {
    if (notes.empty()) continue;
    const DesiredContainer& d = s.by_cgroup.at(cg);
    s.problems.push_back(d.pod_namespace() + "/" + d.pod_name() + " container " + d.container_name +
                         ": " + Joined(notes));
  }

  for (auto& [cg, d] : s.by_cgroup) {
    if (!options.set_priority) continue;
    const auto level = static_cast<shaping::QosLevel>(d.entry.qos_level);
    std::optional<uint32_t> minor;
    if (d.leaf_key) minor = minors.Lookup(*d.leaf_key);
    d.entry.priority = shaping::MakeHandle(shaping::kQdiscMajor,
                                           minor ? *minor : shaping::LevelDefaultMinor(level));
    const bool ingress_leaf = minor && leaves.at(*d.leaf_key).rates.ingress.capped();
    d.entry.flags = ClassFlags(options, level, minor.has_value(), ingress_leaf);
  }
  for (const auto& [key, leaf] : leaves) {
    const uint32_t minor = *minors.Lookup(key);
    for (const auto& nic : leaf.nics) {
      for (auto [into, r] : {std::pair{&s.egress[nic], &leaf.rates.egress},
                             std::pair{&s.ingress[nic], &leaf.rates.ingress}}) {
        if (!r->capped()) continue;
        shaping::ContainerAllocation a{key,       leaf.level, r->rate_bps,     r->ceil_bps,
                                       r->borrow, minor,      leaf.burst_bytes};
        a.aggregate_member = r->member;
        into->push_back(a);
      }
    }
  }
  if (!aggregate_minors.empty()) {
    PlaceAggregates(leaves, aggregate_minors, s);
    for (auto& [cg, d] : s.by_cgroup) {
      if (options.set_priority && d.aggregate_minor) d.entry.flags |= kClassAggregate;
    }
  }
  return s;
}

}  // namespace netqos::enforce
