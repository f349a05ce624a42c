// A replay of the kubewharf kubelet's side of the QRM protocol, written from its source in
// kubewharf/kubernetes so that netqosd is driven the way the real kubelet drives it:
//   - pkg/kubelet/cm/topologymanager: policy.go (filterProvidersHints, mergePermutation,
//     compareHints, mergeFilteredHints), policy_none.go, policy_best_effort.go,
//     policy_restricted.go, policy_single_numa_node.go (filterSingleNumaHints), scope.go and
//     scope_container.go (container scope: init containers first, then app containers; merge,
//     store the hint, then Allocate; the first refusal stops the pod);
//   - pkg/kubelet/cm/qosresourcemanager: manager.go (RegisterPlugin, GetCapacity,
//     allocateContainerResources, UpdateAllocatedResources, readCheckpoint), topology_hints.go
//     (GetTopologyHints and its short circuit on a stored allocation), utils.go
//     (GetContainerTypeAndIndex, ParseTopologyManagerHint, ParseListOfTopologyHints).
// It is test code: the kubelet's decisions are modelled, netqosd is the real daemon.
//
// Two versions of policy.go are stored for kubewharf/kubernetes, and both are replayed
// (MergeRule): the newer one, which its policy_numeric.go ships with, marks a permutation
// preferred only when every hint in it is preferred AND all non-nil affinities are equal, and
// among non-preferred results takes the one closest to the widest of the providers' narrowest
// hints; the older one (the branch whose policies return a single TopologyHint) marks the AND of
// the affinities preferred whenever every hint is, and keeps the narrowest.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "e2e/kubelet_harness.h"
#include "support/wire.h"

namespace netqos::e2e::replay {

// bitmask.BitMask as a uint64 (bit n = NUMA node n).
using Mask = uint64_t;

inline int Count(Mask m) { return __builtin_popcountll(m); }
// bitmask.IsNarrowerThan: fewer bits, or as many bits and a smaller number.
inline bool IsNarrowerThan(Mask a, Mask b) {
  if (Count(a) == Count(b) && a < b) return true;
  return Count(a) < Count(b);
}
inline Mask MaskOf(const std::vector<uint64_t>& nodes) {
  Mask m = 0;
  for (auto n : nodes) m |= Mask{1} << n;
  return m;
}
inline std::vector<uint64_t> NodesOf(Mask m) {
  std::vector<uint64_t> out;
  for (uint64_t n = 0; n < 64; ++n)
    if (m & (Mask{1} << n)) out.push_back(n);
  return out;
}

// topologymanager.TopologyHint: a nil NUMANodeAffinity means "any node".
struct Hint {
  std::optional<Mask> affinity;
  bool preferred = false;
  bool operator==(const Hint& o) const {
    return affinity == o.affinity && preferred == o.preferred;
  }
};
inline Hint H(std::vector<uint64_t> nodes, bool preferred) { return {MaskOf(nodes), preferred}; }

// One provider's answer: resource -> hints, where nullopt is a nil list ("no preference") and
// an empty vector is "no possible affinity". An empty map is a provider with nothing to say.
using ProviderHints = std::map<std::string, std::optional<std::vector<Hint>>>;

enum class Policy { kNone, kBestEffort, kRestricted, kSingleNumaNode };
enum class MergeRule { kEqualAffinities, kOlderAnd };
inline const char* PolicyName(Policy p) {
  switch (p) {
    case Policy::kNone:
      return "none";
    case Policy::kBestEffort:
      return "best-effort";
    case Policy::kRestricted:
      return "restricted";
    case Policy::kSingleNumaNode:
      return "single-numa-node";
  }
  return "?";
}

// policy.go: filterProvidersHints.
inline std::vector<std::vector<Hint>> FilterProvidersHints(
    const std::vector<ProviderHints>& providers) {
  std::vector<std::vector<Hint>> all;
  for (const auto& hints : providers) {
    if (hints.empty()) {
      all.push_back({Hint{std::nullopt, true}});
      continue;
    }
    for (const auto& [resource, list] : hints) {
      if (!list) {
        all.push_back({Hint{std::nullopt, true}});
      } else if (list->empty()) {
        all.push_back({Hint{std::nullopt, false}});
      } else {
        all.push_back(*list);
      }
    }
  }
  return all;
}

// policy.go: mergePermutation.
inline Hint MergePermutation(Mask all_nodes, const std::vector<Hint>& permutation) {
  bool preferred = true;
  std::vector<Mask> affinities;
  for (const Hint& h : permutation) {
    if (h.affinity) {
      affinities.push_back(*h.affinity);
      if (*h.affinity != affinities.front()) preferred = false;
    }
    if (!h.preferred) preferred = false;
  }
  Mask merged = all_nodes;
  for (Mask m : affinities) merged &= m;
  return Hint{merged, preferred};
}

// The older policy.go: mergePermutation (a nil affinity counts as the whole machine, the result
// is preferred when every hint is) and mergeFilteredHints (start from the whole machine, not
// preferred; a preferred result beats a non-preferred one, else the narrower wins).
inline Hint OlderMergePermutation(Mask all_nodes, const std::vector<Hint>& permutation) {
  bool preferred = true;
  Mask merged = all_nodes;
  for (const Hint& h : permutation) {
    merged &= h.affinity ? *h.affinity : all_nodes;
    if (!h.preferred) preferred = false;
  }
  return Hint{merged, preferred};
}

// policy.go: iterateAllProviderTopologyHints, one hint of each provider per permutation.
inline void ForEachPermutation(const std::vector<std::vector<Hint>>& filtered,
                               const std::function<void(const std::vector<Hint>&)>& visit) {
  std::vector<Hint> accum;
  std::function<void(size_t)> iterate = [&](size_t i) {
    if (i == filtered.size()) {
      visit(accum);
      return;
    }
    for (const Hint& h : filtered[i]) {
      accum.push_back(h);
      iterate(i + 1);
      accum.pop_back();
    }
  };
  iterate(0);
}

inline Hint OlderMergeFilteredHints(Mask all_nodes,
                                    const std::vector<std::vector<Hint>>& filtered) {
  Hint best{all_nodes, false};
  ForEachPermutation(filtered, [&](const std::vector<Hint>& permutation) {
    Hint merged = OlderMergePermutation(all_nodes, permutation);
    if (Count(*merged.affinity) == 0) return;
    if (merged.preferred != best.preferred) {
      if (merged.preferred) best = merged;
      return;
    }
    if (IsNarrowerThan(*merged.affinity, *best.affinity)) best = merged;
  });
  return best;
}

// policy.go: maxOfMinAffinityCounts (narrowestHint skips nil affinities).
inline int MaxOfMinAffinityCounts(const std::vector<std::vector<Hint>>& filtered) {
  int max_of_min = 0;
  for (const auto& hints : filtered) {
    std::optional<Mask> narrowest;
    for (const Hint& h : hints) {
      if (!h.affinity) continue;
      if (!narrowest || IsNarrowerThan(*h.affinity, *narrowest)) narrowest = h.affinity;
    }
    if (narrowest && Count(*narrowest) > max_of_min) max_of_min = Count(*narrowest);
  }
  return max_of_min;
}

// policy.go: compareHints, case by case.
inline std::optional<Hint> CompareHints(int best_np, const std::optional<Hint>& current,
                                        const Hint& candidate) {
  const int cand = Count(*candidate.affinity);
  if (cand == 0) return current;
  if (!current) return candidate;
  const int cur = Count(*current->affinity);
  if (!current->preferred && candidate.preferred) return candidate;
  if (current->preferred && !candidate.preferred) return current;
  if (current->preferred && candidate.preferred) {
    return IsNarrowerThan(*candidate.affinity, *current->affinity) ? candidate : current;
  }
  if (cur > best_np)
    return IsNarrowerThan(*candidate.affinity, *current->affinity) ? candidate : current;
  if (cur == best_np) {
    if (cand != best_np) return current;
    return IsNarrowerThan(*candidate.affinity, *current->affinity) ? candidate : current;
  }
  if (cand > best_np) return current;
  if (cand == best_np) return candidate;
  if (cand > cur) return candidate;
  if (cand < cur) return current;
  return IsNarrowerThan(*candidate.affinity, *current->affinity) ? candidate : current;
}

// policy.go: mergeFilteredHints over every permutation (iterateAllProviderTopologyHints).
inline Hint MergeFilteredHints(Mask all_nodes, const std::vector<std::vector<Hint>>& filtered) {
  const int best_np = MaxOfMinAffinityCounts(filtered);
  std::optional<Hint> best;
  ForEachPermutation(filtered, [&](const std::vector<Hint>& permutation) {
    best = CompareHints(best_np, best, MergePermutation(all_nodes, permutation));
  });
  return best ? *best : Hint{all_nodes, false};
}

struct MergeResult {
  Hint hint;
  bool admit = false;
};

// The four policies' Merge (none never merges: the scope admits without hints).
inline MergeResult Merge(Policy policy, Mask all_nodes, const std::vector<ProviderHints>& providers,
                         MergeRule rule = MergeRule::kEqualAffinities) {
  auto filtered = FilterProvidersHints(providers);
  auto MergeFilteredHints = [rule](Mask all, const std::vector<std::vector<Hint>>& f) {
    return rule == MergeRule::kEqualAffinities ? replay::MergeFilteredHints(all, f)
                                               : OlderMergeFilteredHints(all, f);
  };
  switch (policy) {
    case Policy::kNone:
      return {Hint{}, true};
    case Policy::kBestEffort:
      return {MergeFilteredHints(all_nodes, filtered), true};
    case Policy::kRestricted: {
      Hint h = MergeFilteredHints(all_nodes, filtered);
      return {h, h.preferred};
    }
    case Policy::kSingleNumaNode: {
      // filterSingleNumaHints: keep preferred nil hints and preferred one-node hints.
      std::vector<std::vector<Hint>> single;
      for (const auto& hints : filtered) {
        std::vector<Hint> keep;
        for (const Hint& h : hints) {
          if (!h.preferred) continue;
          if (!h.affinity || Count(*h.affinity) == 1) keep.push_back(h);
        }
        single.push_back(keep);
      }
      Hint h = MergeFilteredHints(all_nodes, single);
      if (h.affinity && *h.affinity == all_nodes) h = Hint{std::nullopt, h.preferred};
      return {h, h.preferred};
    }
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// Pods as the kubelet sees them.

struct ContainerSpec {
  std::string name;
  double mbps = 0;  // the container's request of kResource (0: not requested)
};

struct PodSpec {
  std::string uid;
  std::string name;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<ContainerSpec> init_containers;
  std::vector<ContainerSpec> containers;  // [0] is the main container (no main-name annotation)
  // What the CPU hint provider answers for each of this pod's containers, fixed: nullopt is a
  // provider with no preference (the kubelet's CPU manager for a non-exclusive pod, Katalyst's
  // CPU plugin for shared_cores and reclaimed_cores).
  std::optional<std::vector<Hint>> cpu_hints;
};

inline PodSpec MakePod(const std::string& uid, const std::string& qos, const std::string& ns_type) {
  PodSpec p;
  p.uid = uid;
  p.name = uid;
  p.labels[kQosKey] = qos;
  p.annotations[kQosKey] = qos;
  if (!ns_type.empty())
    p.annotations[kEnhancementKey] = "{\"namespace_type\": \"" + ns_type + "\"}";
  return p;
}

// utils.go: GetContainerTypeAndIndex.
inline std::pair<rp::ContainerType, uint64_t> ContainerTypeAndIndex(const PodSpec& pod,
                                                                    const std::string& name) {
  for (size_t i = 0; i < pod.init_containers.size(); ++i)
    if (pod.init_containers[i].name == name) return {rp::INIT, i};
  for (size_t i = 0; i < pod.containers.size(); ++i)
    if (pod.containers[i].name == name) return {i == 0 ? rp::MAIN : rp::SIDECAR, i};
  throw std::runtime_error("container " + name + " not in pod " + pod.uid);
}

// ---------------------------------------------------------------------------------------------
// The QoS resource manager (pkg/kubelet/cm/qosresourcemanager).

// podResourcesChk: pod -> container -> resource -> what Allocate answered. This is the content
// of the kubelet's own checkpoint (kubelet_qrm_checkpoint), written after every Allocate and
// every UpdateAllocatedResources.
using PodResources =
    std::map<std::string, std::map<std::string, std::map<std::string, rp::ResourceAllocationInfo>>>;

struct RpcCounts {
  int get_topology_hints = 0;
  int allocate = 0;
  int remove_pod = 0;
};

class QrmManager {
 public:
  // A new kubelet: readCheckpoint loads the stored allocations (none on a fresh node).
  explicit QrmManager(PodResources checkpoint = {}) : pod_resources_(std::move(checkpoint)) {}

  // The plugin watcher found a socket: GetInfo, ValidatePlugin (type and version), then
  // RegisterPlugin (dial, GetResourcePluginOptions, registerEndpoint replacing any old
  // endpoint), then NotifyRegistrationStatus.
  grpc::Status RegisterViaPluginWatcher(const std::string& socket_path) {
    auto channel = grpc::CreateChannel("unix://" + socket_path, grpc::InsecureChannelCredentials());
    reg::PluginInfo info;
    {
      auto stub = reg::Registration::NewStub(channel);
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      auto st = stub->GetInfo(&ctx, reg::InfoRequest(), &info);
      if (!st.ok()) return st;
    }
    std::string error;
    if (info.type() != "ResourcePlugin") error = "plugin type " + info.type();
    bool version_ok = false;
    for (const auto& v : info.supported_versions()) version_ok |= v == "v1alpha1";
    if (!version_ok) error = "no supported version";
    rp::ResourcePluginOptions opts;
    if (error.empty()) {
      // The endpoint is the socket itself when GetInfo leaves it empty (the plugin watcher).
      auto stub = rp::ResourcePlugin::NewStub(channel);
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      auto st = stub->GetResourcePluginOptions(&ctx, rp::Empty(), &opts);
      if (!st.ok()) error = st.error_message();
    }
    {
      auto stub = reg::Registration::NewStub(channel);
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      reg::RegistrationStatus status;
      status.set_plugin_registered(error.empty());
      status.set_error(error);
      reg::RegistrationStatusResponse resp;
      auto st = stub->NotifyRegistrationStatus(&ctx, status, &resp);
      if (!st.ok()) return st;
    }
    if (!error.empty()) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, error);
    endpoints_[info.name()] = Endpoint{channel, rp::ResourcePlugin::NewStub(channel), opts};
    return grpc::Status::OK;
  }

  bool Registered(const std::string& resource) const { return endpoints_.count(resource) > 0; }
  const rp::ResourcePluginOptions& Options(const std::string& resource) const {
    return endpoints_.at(resource).opts;
  }

  // GetCapacity: the node's capacity and allocatable of each resource, from
  // GetTopologyAwareAllocatableResources (aggregated quantities of node, scalar resources; 0 when
  // the call fails).
  struct Capacity {
    std::map<std::string, double> capacity, allocatable;
  };
  Capacity GetCapacity() {
    Capacity out;
    for (auto& [name, ep] : endpoints_) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      rp::GetTopologyAwareAllocatableResourcesResponse resp;
      auto st = ep.stub->GetTopologyAwareAllocatableResources(
          &ctx, rp::GetTopologyAwareAllocatableResourcesRequest(), &resp);
      if (!st.ok() || resp.allocatable_resources().empty()) {
        out.capacity[name] = out.allocatable[name] = 0;
        continue;
      }
      for (const auto& [acc, r] : resp.allocatable_resources()) {
        if (r.is_node_resource() && r.is_scalar_resource()) {
          out.capacity[acc] = r.aggregated_capacity_quantity();
          out.allocatable[acc] = r.aggregated_allocatable_quantity();
        }
      }
    }
    return out;
  }

  // topology_hints.go: GetTopologyHints for one container (the manager is a hint provider).
  ProviderHints GetTopologyHints(const PodSpec& pod, const ContainerSpec& c) {
    UpdateAllocatedResources();  // garbage collect first, as upstream does
    ProviderHints out;
    if (c.mbps <= 0 || !IsPluginResource(kResource)) return out;
    auto ep = endpoints_.find(kResource);
    if (ep == endpoints_.end() || !ep->second.opts.with_topology_alignment()) {
      out[kResource] = std::nullopt;
      return out;
    }
    // The short circuit: an allocation already stored (a kubelet restart) answers with the
    // hints it was stored with, without asking the plugin.
    if (const auto* info = Stored(pod.uid, c.name, kResource);
        info && info->has_resource_hints() && info->resource_hints().hints_size() > 0) {
      if (info->is_scalar_resource() &&
          static_cast<int>(std::ceil(info->allocated_quantity())) >= static_cast<int>(c.mbps)) {
        out[kResource] = ParseList(info->resource_hints());
        return out;
      }
    }
    rp::ResourceRequest req = Request(pod, c);
    ++rpcs_.get_topology_hints;
    std::string bytes;
    auto st = RawUnary(ep->second.channel, "GetTopologyHints", req, &bytes);
    if (!st.ok()) {
      out[kResource] = std::vector<Hint>{};  // "empty TopologyHint list will cause fail"
      return out;
    }
    // Decoded as the kubelet's gogo-generated code does: a map entry without its value leaves a
    // nil *ListOfTopologyHints (no preference), which C++ protobuf would turn into an empty
    // list (no possible affinity). A missing key is nil too.
    auto entry = netqos::testing::FindMapEntry(bytes, 10, kResource);
    if (!entry.found || !entry.value_present) {
      out[kResource] = std::nullopt;
    } else {
      rp::ListOfTopologyHints list;
      if (!list.ParseFromString(entry.value_bytes))
        throw std::runtime_error("GetTopologyHints: unparsable hint list");
      out[kResource] = ParseList(list);
    }
    return out;
  }

  // manager.go: allocateContainerResources with the hint the topology manager stored.
  // `response` gets the plugin's answer when the plugin was called.
  grpc::Status Allocate(const PodSpec& pod, const ContainerSpec& c, const Hint& stored_hint,
                        rp::ResourceAllocationResponse* response = nullptr) {
    if (c.mbps <= 0 || !IsPluginResource(kResource)) return grpc::Status::OK;
    UpdateAllocatedResources();
    if (const auto* info = Stored(pod.uid, c.name, kResource);
        info && info->is_scalar_resource() &&
        static_cast<int>(std::ceil(info->allocated_quantity())) >= static_cast<int>(c.mbps)) {
      return grpc::Status::OK;  // "already allocated ... not to allocate"
    }
    auto ep = endpoints_.find(kResource);
    if (ep == endpoints_.end())
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown Resource Plugin");
    rp::ResourceRequest req = Request(pod, c);
    if (ep->second.opts.with_topology_alignment()) {
      // ParseTopologyManagerHint: a nil affinity becomes a hint message with no nodes.
      auto* hint = req.mutable_hint();
      if (stored_hint.affinity)
        for (auto n : NodesOf(*stored_hint.affinity)) hint->add_nodes(n);
      hint->set_preferred(stored_hint.preferred);
    }
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    rp::ResourceAllocationResponse resp;
    ++rpcs_.allocate;
    auto st = ep->second.stub->Allocate(&ctx, req, &resp);
    if (!st.ok()) {
      // canSkipEndpointError (utils.go): a shared_cores pod is admitted without the resource
      // when its plugin fails; dedicated, reclaimed and system pods are refused.
      auto qos = pod.annotations.find(kQosKey);
      if (qos != pod.annotations.end() && qos->second == "shared_cores") {
        skipped_errors_.push_back(st.error_message());
        return grpc::Status::OK;
      }
      return st;
    }
    if (response) *response = resp;
    if (!resp.has_allocation_result()) return grpc::Status::OK;  // nil result: nothing stored
    for (const auto& [acc, info] : resp.allocation_result().resource_allocation())
      pod_resources_[pod.uid][c.name][acc] = info;
    return grpc::Status::OK;
  }

  // manager.go: UpdateAllocatedResources. Every pod with stored allocations that is no longer
  // active gets RemovePod from every endpoint; it is forgotten only when all of them succeed,
  // so a failed RemovePod is retried on the next call (the reconcile loop, or the next
  // GetTopologyHints / Allocate). Not replayed: upstream skips a stopped endpoint (its socket
  // was removed, DeRegisterPlugin) as if RemovePod had succeeded; a SIGKILLed netqosd leaves its
  // socket, so its endpoint is not stopped and the RemovePod is retried.
  void UpdateAllocatedResources() {
    std::vector<std::string> to_remove;
    for (const auto& [uid, containers] : pod_resources_)
      if (!active_.count(uid)) to_remove.push_back(uid);
    for (const auto& uid : to_remove) {
      bool all_success = true;
      for (auto& [name, ep] : endpoints_) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
        rp::RemovePodRequest req;
        req.set_pod_uid(uid);
        rp::RemovePodResponse resp;
        ++rpcs_.remove_pod;
        auto st = ep.stub->RemovePod(&ctx, req, &resp);
        if (!st.ok()) {
          all_success = false;
          last_remove_error_ = st.error_message();
        }
      }
      if (all_success) pod_resources_.erase(uid);
    }
  }

  // The kubelet's list of active pods (what activePods() returns).
  void SetActive(const std::string& uid, bool active) {
    if (active)
      active_.insert(uid);
    else
      active_.erase(uid);
  }

  grpc::Status GetTopologyAwareResources(const std::string& uid, const std::string& container,
                                         rp::GetTopologyAwareResourcesResponse* out) {
    auto& ep = endpoints_.at(kResource);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    rp::GetTopologyAwareResourcesRequest req;
    req.set_pod_uid(uid);
    req.set_container_name(container);
    return ep.stub->GetTopologyAwareResources(&ctx, req, out);
  }

  const PodResources& Checkpoint() const { return pod_resources_; }
  const rp::ResourceAllocationInfo* Stored(const std::string& uid, const std::string& container,
                                           const std::string& resource) const {
    auto p = pod_resources_.find(uid);
    if (p == pod_resources_.end()) return nullptr;
    auto c = p->second.find(container);
    if (c == p->second.end()) return nullptr;
    auto r = c->second.find(resource);
    return r == c->second.end() ? nullptr : &r->second;
  }
  const RpcCounts& Rpcs() const { return rpcs_; }
  const std::string& LastRemoveError() const { return last_remove_error_; }
  const std::vector<std::string>& SkippedAllocateErrors() const { return skipped_errors_; }

 private:
  struct Endpoint {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<rp::ResourcePlugin::Stub> stub;
    rp::ResourcePluginOptions opts;
  };

  // isResourcePluginResource: a registered endpoint, or a resource named in stored allocations.
  bool IsPluginResource(const std::string& resource) const {
    if (endpoints_.count(resource)) return true;
    for (const auto& [uid, cs] : pod_resources_)
      for (const auto& [c, rs] : cs)
        if (rs.count(resource)) return true;
    return false;
  }

  static std::vector<Hint> ParseList(const rp::ListOfTopologyHints& list) {
    std::vector<Hint> out;
    for (const auto& h : list.hints())
      out.push_back(Hint{MaskOf({h.nodes().begin(), h.nodes().end()}), h.preferred()});
    return out;
  }

  static rp::ResourceRequest Request(const PodSpec& pod, const ContainerSpec& c) {
    rp::ResourceRequest req;
    auto [type, index] = ContainerTypeAndIndex(pod, c.name);
    req.set_pod_uid(pod.uid);
    req.set_pod_namespace("default");
    req.set_pod_name(pod.name);
    req.set_container_name(c.name);
    req.set_container_type(type);
    req.set_container_index(index);
    req.set_resource_name(kResource);
    (*req.mutable_resource_requests())[kResource] = c.mbps;
    for (const auto& [k, v] : pod.labels) (*req.mutable_labels())[k] = v;
    for (const auto& [k, v] : pod.annotations) (*req.mutable_annotations())[k] = v;
    return req;
  }

  std::map<std::string, Endpoint> endpoints_;
  PodResources pod_resources_;
  std::set<std::string> active_;
  RpcCounts rpcs_;
  std::string last_remove_error_;
  std::vector<std::string> skipped_errors_;
};

// ---------------------------------------------------------------------------------------------
// The topology manager with its container scope, the fake CPU provider and the QRM as hint
// providers (the CPU manager is added first, as the container manager does).

struct AdmitResult {
  bool admit = false;
  std::string reason;                 // "TopologyAffinityError", "UnexpectedAdmissionError"
  std::map<std::string, Hint> hints;  // container -> the merged hint stored for it
  std::map<std::string, rp::ResourceAllocationResponse> allocations;  // plugin answers
};

class TopologyManager {
 public:
  TopologyManager(Policy policy, QrmManager& qrm, MergeRule rule = MergeRule::kEqualAffinities,
                  Mask all_nodes = 0b1111)
      : policy_(policy), rule_(rule), qrm_(qrm), all_nodes_(all_nodes) {}

  // scope_container.go: Admit.
  AdmitResult Admit(const PodSpec& pod) {
    AdmitResult out;
    // The pod being admitted is already among the kubelet's active pods (HandlePodAdditions adds
    // it to the pod manager first), so the garbage collection in GetTopologyHints and Allocate
    // leaves its first containers' allocations alone; a refused pod fails and stops being active.
    qrm_.SetActive(pod.uid, true);
    out = AdmitContainers(pod);
    if (!out.admit) qrm_.SetActive(pod.uid, false);
    return out;
  }

 private:
  AdmitResult AdmitContainers(const PodSpec& pod) {
    AdmitResult out;
    std::vector<ContainerSpec> all = pod.init_containers;
    all.insert(all.end(), pod.containers.begin(), pod.containers.end());
    for (const ContainerSpec& c : all) {
      Hint hint{};  // policy none: nothing stored, GetAffinity returns the zero hint
      if (policy_ != Policy::kNone) {
        std::vector<ProviderHints> providers;
        ProviderHints cpu;
        if (pod.cpu_hints) cpu["cpu"] = pod.cpu_hints;
        providers.push_back(cpu);
        providers.push_back(qrm_.GetTopologyHints(pod, c));
        MergeResult m = Merge(policy_, all_nodes_, providers, rule_);
        if (!m.admit) {
          out.reason = "TopologyAffinityError";
          return out;
        }
        hint = m.hint;
        out.hints[c.name] = hint;
      }
      rp::ResourceAllocationResponse resp;
      auto st = qrm_.Allocate(pod, c, hint, &resp);
      if (!st.ok()) {
        out.reason = "UnexpectedAdmissionError: " + st.error_message();
        return out;
      }
      if (resp.has_allocation_result()) out.allocations[c.name] = resp;
    }
    out.admit = true;
    return out;
  }

  Policy policy_;
  MergeRule rule_;
  QrmManager& qrm_;
  Mask all_nodes_;
};

}  // namespace netqos::e2e::replay
