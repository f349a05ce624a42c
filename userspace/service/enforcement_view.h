// What the operator surfaces (admin RPCs, metrics) may know about enforcement, as plain values.
// The app implements it over the reconciler and the pinned BPF maps; the gRPC and metrics
// adapters only read it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/counters.h"
#include "common/histogram.h"
#include "common/problem_kind.h"

namespace netqos::service {

// A container's own HTB leaf in one direction.
struct LeafQueue {
  std::string device;     // egress: the NIC; ingress: its IFB (nqifb<ifindex>)
  std::string htb_class;  // "10:100"
  QueueCounters counters;
  std::string error;  // why the counters could not be read ("" = read; else counters are zero)
};

// A container's leaf in one direction (docs/enforcement.md, "The bandwidth model").
struct LeafCap {
  uint64_t rate_bps = 0;  // guaranteed under contention
  uint64_t ceil_bps = 0;  // the most it gets; 0 when it borrows up to its QoS level's ceiling
  bool borrows = false;
  std::string source;  // "allocation", "annotation" or "allocation+annotation"
  // The bucket of the leaf's rate in bytes (HTB rbuffer): its burst (--qos-level-burst or the
  // pod's netqos.io/burst), else the default, what the rate earns in 1 ms + 1600 bytes. 0 for
  // egress paced in EDT mode, which has no bucket.
  uint32_t burst_bytes = 0;
};

// What the tenant policy decided about one of a pod's annotations (enforce/tenant_rules.h).
struct TenantDecision {
  std::string annotation;
  std::string value;  // bounded and escaped
  std::string verdict;
  std::string reason;
};

struct ContainerEnforcement {
  uint64_t cgroup_id = 0;
  std::string pod_uid;
  std::string pod_namespace;
  std::string pod_name;
  std::string container;
  std::string qos_level;  // "shared_cores", ...
  uint32_t net_class_id = 0;
  uint32_t priority = 0;  // skb->priority (HTB class handle), 0 = untouched
  std::string htb_class;  // "10:100" for a capped leaf, "10:31" for a level default, ""
  bool capped = false;    // has a leaf of its own (its pod's, or its own)
  std::string nic;        // allocation's NIC identifier ("" when not allocated)
  uint32_t allocated_mbps = 0;
  // Its leaf in each direction; unset: none in that direction.
  std::optional<LeafCap> egress_cap;
  std::optional<LeafCap> ingress_cap;
  std::optional<uint8_t> dscp;  // what the enforced NICs mark its packets with; nullopt: none
  std::string tenant_policy;    // the policy entry of its namespace ("namespace x", "default")
  std::vector<TenantDecision> tenant_decisions;
  std::string aggregate_class;  // its namespace's aggregate class ("10:105"), "" when none
  TrafficCounters counters;     // since the entry was created; drops include its own leaves'
  // Its own leaves, read with the counters. Unset: no leaf of its own in that direction (its
  // traffic shares its QoS level's default leaf, whose drops cannot be told apart by container).
  std::optional<LeafQueue> egress_queue;
  std::optional<LeafQueue> ingress_queue;
};

struct ClassEnforcement {
  uint32_t net_class_id = 0;
  TrafficCounters counters;
  // Sums over the own leaves of the class's containers (a shared pod-level leaf counted once).
  QueueCounters egress_queue;
  QueueCounters ingress_queue;
};

// A QoS level's HTB class on a shaped NIC in one direction (egress on the NIC, ingress on its
// IFB): the rates it was applied with, and what passed through it (all of the level's traffic
// there, its containers' leaves and its default leaf together).
struct LevelEnforcement {
  std::string nic;        // the NIC's identifier
  std::string qos_level;  // "shared_cores", ...
  std::string direction;  // "egress" or "ingress"
  uint64_t rate_bps = 0;
  uint64_t ceil_bps = 0;
  std::optional<QueueCounters> counters;  // unset: the class could not be read
};

struct EnforcementProblem {
  ProblemKind kind;    // the netqos_enforcement_problems label
  std::string object;  // ProblemKey(kind, the object): "nic:eth0"
  std::string message;
  uint64_t times_seen = 0;
};

struct EnforcementReport {
  std::string mode = "none";  // "bpf", "none", or "disabled" (bpf requested, failed to start)
  std::string error;          // why "disabled"
  // "bpf" whose dataplane is still being opened (it starts after serving): what an earlier run
  // pinned keeps enforcing, and nothing else is known yet.
  bool starting = false;
  std::string pin_dir;
  std::string cgroup_root;
  bool pods_known = false;
  size_t pod_veths = 0;  // pods classified at the host end of their veths
  uint64_t passes = 0;
  uint64_t pod_list_failures = 0;
  uint64_t problem_reports_total = 0;
  // Each pass's time by scope ("containers", "all", "resync", "full"); passes that did not finish;
  // passes whose kernel writes failed, by target ("class_map", "shaping", "edt_map",
  // "pod_address_map").
  std::map<std::string, HistogramCounts> pass_seconds;
  uint64_t pass_failures = 0;
  std::map<std::string, uint64_t> kernel_failures;
  std::vector<std::string> shaped_nics;
  // Each shaped NIC's egress shaping mode ("htb", "edt") and why it was chosen, by NIC identifier:
  // `reason` in words, `why` as one of shaping::kShapingReasonNames.
  struct NicShaping {
    std::string mode;
    std::string reason;
    std::string why;
    // Features the operator asked for that this NIC's mode does not do (shaping::ModeChoice).
    std::vector<std::string> inactive;
  };
  std::map<std::string, NicShaping> shaping_modes;
  std::vector<EnforcementProblem> problems;
  std::vector<ContainerEnforcement> containers;
  std::vector<ClassEnforcement> classes;
  std::vector<LevelEnforcement> levels;  // read with the counters only
  bool queue_counters = false;  // the HTB leaves were read: the *_queue members are meaningful
  // Pods whose annotation the tenant policy refuses or bounds now, per (namespace, annotation).
  std::map<std::pair<std::string, std::string>, uint64_t> refused_annotations;
};

// The tenant policy in force (--tenant-policy-file), for netqosctl and the status.
struct TenantPolicyReport {
  std::string path;    // "" = no file
  std::string source;  // "built-in default" or "<path> (read <time>)"
  uint64_t generation = 0;
  std::string loaded_at;
  std::string error;  // why the file's current content is not in force ("" = it is)
  uint64_t load_errors_total = 0;
  std::string policy_json;  // canonical
};

class EnforcementView {
 public:
  virtual ~EnforcementView() = default;
  // A consistent copy; `with_counters` reads the per-CPU maps (one syscall per entry) and the
  // HTB leaves' counters (one netlink dump per shaped NIC and IFB).
  virtual EnforcementReport Report(bool with_counters) const = 0;
};

}  // namespace netqos::service
