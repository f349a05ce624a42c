// What the dataplane should hold, computed from the allocations and the containers running on the
// node. Pure (no I/O): decides each container's class id, QoS level, skb->priority and HTB leaf.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/bandwidth_quantity.h"
#include "core/config.h"
#include "core/types.h"
#include "enforce/burst.h"
#include "enforce/dscp.h"
#include "enforce/leaf_rates.h"
#include "enforce/tenant_policy.h"
#include "enforce/tenant_rules.h"
#include "shaping/htb_plan.h"

namespace netqos::enforce {

// Which pod a container belongs to: made once per pod by the resolver and shared by its
// containers and their pass results, so a node of 10,000 containers holds one copy per pod.
struct PodMeta {
  std::string uid;
  std::string ns;
  std::string name;
};
using PodMetaPtr = std::shared_ptr<const PodMeta>;
using PodAnnotationsPtr = std::shared_ptr<const core::StringMap>;

// An empty pod and annotation map, shared: what a container holds until it is given its pod's,
// so the accessors below never see a null pointer.
const PodMetaPtr& NoPodMeta();
const PodAnnotationsPtr& NoPodAnnotations();

// A started container as the kubelet reports it, with its cgroup resolved.
struct ObservedContainer {
  PodMetaPtr pod = NoPodMeta();  // never null; the same object for every container of a pod
  // The pod's annotations, unfiltered, as on the pod; never null, shared by its containers. Apart
  // from `pod`: the pass reads them, its result does not keep them.
  PodAnnotationsPtr annotations = NoPodAnnotations();
  std::string container_name;
  uint64_t cgroup_id = 0;      // the container's cgroup (what bpf_skb_cgroup_id returns)
  uint64_t pod_cgroup_id = 0;  // the pod's cgroup; 0 when not found

  const std::string& pod_uid() const { return pod->uid; }
  const std::string& pod_namespace() const { return pod->ns; }
  const std::string& pod_name() const { return pod->name; }
  const core::StringMap& pod_annotations() const { return *annotations; }
};

// A NIC netqos shapes (--enforce-nics) that exists right now.
struct EnforcedLink {
  core::NicId id;
  uint64_t link_mbps = 0;
};

// One class-map value (bpf/netqos_abi.h netqos_class), without the BPF types.
struct ClassEntry {
  uint32_t priority = 0;      // skb->priority: an HTB class handle, 0 = untouched
  uint32_t net_class_id = 0;  // Katalyst class id; keys the per-class counters
  uint8_t qos_level = 0;      // QosLevel numbering (== enum netqos_qos_level: bpf_class_table.cc)
  uint32_t flags = 0;         // kClassIngressShaped, kClassVeth
  uint16_t slot = 0;          // the carrier slot of a container of a pod behind a veth; 0 = none
  // The DSCP the NIC egress program marks the container's packets with (0..63); nullopt: the DS
  // field is left alone. In the BPF value: netqos_class.dscp + NETQOS_CLASS_F_SET_DSCP.
  std::optional<uint8_t> dscp = std::nullopt;
  bool operator==(const ClassEntry&) const = default;
};
// == NETQOS_CLASS_F_INGRESS_SHAPED: the ingress program redirects the class's packets to the IFB.
inline constexpr uint32_t kClassIngressShaped = 0x1;
// == NETQOS_CLASS_F_VETH: the container's pod is classified at its veth, and shaped there on
// ingress (veth_sync.h); the NIC's ingress program leaves its packets alone.
inline constexpr uint32_t kClassVeth = 0x4;
// == NETQOS_CLASS_F_AGGREGATE: in EDT mode the NIC program also paces the class's packets by its
// namespace's aggregate (the aggregate map); classes without it never look there.
inline constexpr uint32_t kClassAggregate = 0x8;
// == NETQOS_CLASS_F_NO_LEAF: the container has no leaf (its level's default class), so in EDT
// mode the NIC program does not look for a pacing budget for it.
inline constexpr uint32_t kClassNoLeaf = 0x20;

// An empty tenant entry, shared: a DesiredContainer's until its pass names one.
const std::shared_ptr<const std::string>& NoTenantEntry();

// A NIC, and a list of NICs, as a pass's result holds them: one object per distinct NIC (list) in
// a pass, shared by its containers, which are many more than the node's NICs.
using NicIdPtr = std::shared_ptr<const core::NicId>;
using NicListPtr = std::shared_ptr<const std::vector<core::NicId>>;
// The empty list, shared: a DesiredContainer's until its pass gives it a leaf.
const NicListPtr& NoNics();

struct DesiredContainer {
  ClassEntry entry;
  PodMetaPtr pod = NoPodMeta();  // never null; its observed container's (shared per pod)
  std::string container_name;
  NicIdPtr nic;                 // the allocation's NIC; null when not allocated
  uint32_t allocated_mbps = 0;  // the allocation (0 = none)
  // Set when the container's traffic goes to a leaf of its own (or its pod's): the leaf's key,
  // its rates per direction and the NICs it is on (the allocation's; every enforced NIC for a
  // pod capped by its annotations alone).
  std::optional<uint64_t> leaf_key;
  LeafRates rates;
  NicListPtr leaf_nics = NoNics();  // never null
  // The leaf's burst (both directions, rate and ceiling buckets), bytes; 0 = the default bucket.
  uint32_t burst_bytes = 0;
  // The tenant policy's entry for the pod's namespace ("namespace <name>" or "default"), one
  // string per namespace shared by the pass's containers (never null), and what it decided about
  // each tenant annotation of the pod (tenant_rules.h).
  std::shared_ptr<const std::string> tenant = NoTenantEntry();
  std::vector<TenantDecision> decisions;
  // The class of its namespace's aggregate its leaf sits under (the same minor on every NIC);
  // nullopt: none (its namespace has no aggregate).
  std::optional<uint32_t> aggregate_minor;

  const std::string& pod_uid() const { return pod->uid; }
  const std::string& pod_namespace() const { return pod->ns; }
  const std::string& pod_name() const { return pod->name; }
  const std::string& tenant_entry() const { return *tenant; }
};

// Per pod uid: the bandwidth annotations a pod is enforced with. A refused value keeps the one
// used before it, so a typo in an update does not lift a pod's cap.
using AnnotatedByPod = std::map<std::string, core::AnnotatedBandwidth>;

struct DesiredState {
  std::map<uint64_t, DesiredContainer> by_cgroup;
  // Leaves per enforced NIC, minors assigned: egress on the NIC, ingress on its IFB.
  std::map<core::NicId, std::vector<shaping::ContainerAllocation>> egress;
  std::map<core::NicId, std::vector<shaping::ContainerAllocation>> ingress;
  // The namespace aggregates' classes per enforced NIC (only where a namespace has one).
  std::map<core::NicId, std::vector<shaping::GroupClass>> egress_groups;
  std::map<core::NicId, std::vector<shaping::GroupClass>> ingress_groups;
  // Things an operator should fix; the affected container is still enforced as well as possible.
  std::vector<std::string> problems;
  AnnotatedByPod annotated;  // for the next pass's `previous_annotated`
  // Pods whose annotation the tenant policy refused or bounded, per (namespace, annotation key).
  std::map<std::pair<std::string, std::string>, uint64_t> refused;
};

struct DesiredOptions {
  // True when at least one NIC is enforced: only then is skb->priority set. On a NIC with a
  // kernel-default qdisc the priority would otherwise pick a pfifo_fast band.
  bool set_priority = false;
  // Per QoS level: its class on the IFB can hold traffic back (a ceiling below the link). Only
  // then do that level's unallocated containers pay the detour through the IFB on ingress.
  std::array<bool, shaping::kQosLevelCount> ingress_level_limited{};
  // Where HTB puts a packet whose priority names no class of the IFB (a container capped on
  // egress only): the unclassified level's default class.
  shaping::QosLevel unclassified_level = shaping::QosLevel::kShared;
  // --container-ceil: what an allocated container's leaf may reach; a pod may choose its own.
  ContainerCeil container_ceil = ContainerCeil::kAllocation;
  // Per QoS level: the DSCP its containers' packets are marked with (--qos-level-dscp); a pod's
  // netqos.io/dscp annotation overrides it (enforce/dscp.h).
  LevelDscp level_dscp{};
  // Per QoS level: the burst of its leaves (--qos-level-burst), 0 = the default bucket; a pod's
  // netqos.io/burst annotation overrides it (enforce/burst.h).
  LevelBurst level_burst{};
  // The DSCP of every container no level or annotation marks (--dscp-default); nullopt: left
  // alone. The NIC program marks packets of no container with it too.
  std::optional<uint8_t> unmarked_dscp = std::nullopt;
  // What tenants may ask for with their pods' annotations (tenant_policy.h); null: the built-in
  // default, the strictest.
  std::shared_ptr<const TenantPolicy> tenant = nullptr;
};

// The options for enforcing with `shaping` (on at least one NIC when `shaping_on`).
DesiredOptions DesiredOptionsFor(const shaping::ShapingConfig& shaping, bool shaping_on);

// The flags of a container's class entry (set_priority only): kClassIngressShaped when its
// received packets land in an IFB class that can hold them back, kClassNoLeaf when it has no leaf
// minor. `leaf_minor`: the container has a leaf minor; `ingress_leaf`: that leaf exists on the
// IFB (an ingress cap).
uint32_t ClassFlags(const DesiredOptions& options, shaping::QosLevel level, bool leaf_minor,
                    bool ingress_leaf);

// `current` is what the class map holds now (cgroup id -> priority): a container keeps the leaf
// minor it already has, so a restarted daemon adopts the running shaping without moving flows.
// `minors` is the node-wide leaf allocator: keys no longer capped are released, new ones acquired.
// `previous_annotated` is the last pass's DesiredState::annotated.
DesiredState ComputeDesiredState(const core::PolicyConfig& policy,
                                 const core::PodEntries& allocations,
                                 const std::vector<ObservedContainer>& containers,
                                 const std::vector<EnforcedLink>& enforced,
                                 const std::map<uint64_t, uint32_t>& current,
                                 const DesiredOptions& options, shaping::MinorAllocator& minors,
                                 const AnnotatedByPod& previous_annotated = {});

// Counts the refusals of `d` (once per pod and annotation, `counted` remembers) into `refused`.
void CountRefusals(const DesiredContainer& d,
                   std::set<std::pair<std::string, std::string>>& counted,
                   std::map<std::pair<std::string, std::string>, uint64_t>& refused);

// Katalyst level name ("shared_cores") -> shaping level; unknown names give nullopt.
std::optional<shaping::QosLevel> LevelOf(const std::string& katalyst_level);

}  // namespace netqos::enforce
