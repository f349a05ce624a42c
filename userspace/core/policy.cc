#include "core/policy.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "common/log_value.h"
#include "core/allocation_annotations.h"
#include "core/constants.h"
#include "core/hints.h"
#include "core/ip_format.h"
#include "core/net_class.h"
#include "core/numa_set.h"
#include "core/qos.h"
#include "core/quantity.h"
#include "core/state_size.h"

namespace netqos::core {
namespace {

bool NicOrder(const Nic& a, const Nic& b) {
  if (a.id.name != b.id.name) return a.id.name < b.id.name;
  return a.id.netns < b.id.netns;
}

bool HasIp(const Nic& nic) { return !nic.ipv4.empty() || !nic.ipv6.empty(); }

bool Available(const Nic& nic, bool require_ip) {
  return nic.enabled && (!require_ip || HasIp(nic)) && nic.healthy;
}

std::string UnavailableReason(const Nic& nic) {
  if (!nic.healthy && !nic.unhealthy_reason.empty()) return nic.unhealthy_reason;
  if (!nic.enabled) return "link disabled";
  if (!HasIp(nic)) return "no IP address";
  return "unhealthy";
}

std::string NicLabel(const NicId& id) { return "NIC " + id.Identifier(); }

Status ValidateRate(float rate, const char* what) {
  // A fraction of the NIC's speed: above 1 would offer more bandwidth than the NIC has.
  if (!std::isfinite(rate) || rate <= 0.0f || rate > 1.0f) {
    return InvalidArgument(std::string(what) + " capacity rate " + std::to_string(rate) +
                           " must be a fraction of the NIC's speed, more than 0 and at most 1");
  }
  return Status::Ok();
}

Status NormalizeIps(const NicId& id, std::vector<std::string>& ips) {
  for (std::string& ip : ips) {
    auto printed = NormalizeIp(ip);
    if (!printed.ok()) return printed.status().Wrap(NicLabel(id));
    ip = std::move(printed).value();
  }
  return Status::Ok();
}

std::string PodLabel(const ContainerRequest& req) {
  return "pod " + req.pod_namespace + "/" + req.pod_name + " (" + req.pod_uid + ")";
}

ContainerRequest FromPodRequest(const PodRequest& req) {
  ContainerRequest c;
  c.pod_uid = req.pod_uid;
  c.pod_namespace = req.pod_namespace;
  c.pod_name = req.pod_name;
  c.container_name = kPodLevelContainerName;
  c.container_type = ContainerType::kMain;
  c.pod_role = req.pod_role;
  c.pod_type = req.pod_type;
  c.resource_name = req.resource_name;
  c.hint = req.hint;
  c.resource_requests = req.resource_requests;
  c.labels = req.labels;
  c.annotations = req.annotations;
  return c;
}

Status ValidateIdentity(const ContainerRequest& req, bool pod_level) {
  if (req.pod_uid.empty()) return InvalidArgument("request has an empty pod_uid");
  if (!pod_level && req.container_name.empty()) {
    return InvalidArgument("request for " + PodLabel(req) + " has an empty container_name");
  }
  return Status::Ok();
}

// The pod's kept labels and annotations are written into each of its entries: a pod whose tenant
// made them large is refused before anything is reserved, naming the largest. Only what would
// write a new entry is checked: a pod or container already held (restored from a checkpoint
// written under another limit, asked again after a kubelet restart) keeps being served.
Status CheckPodMetadata(const PolicyConfig& config, const ContainerRequest& req,
                        const FilteredRequest& filtered) {
  const size_t bytes = MetadataBytes(filtered.labels, filtered.annotations);
  if (bytes <= config.max_pod_metadata_bytes) return Status::Ok();
  std::string largest;
  size_t largest_bytes = 0;
  for (const auto& [kind, map] :
       {std::pair{"label", &filtered.labels}, std::pair{"annotation", &filtered.annotations}}) {
    for (const auto& [k, v] : *map) {
      if (size_t n = JsonStringBytes(k) + JsonStringBytes(v); n > largest_bytes) {
        largest_bytes = n;
        largest = std::string(kind) + " " + QuotedValue(k);
      }
    }
  }
  return InvalidArgument(PodLabel(req) + ": its kept labels and annotations take up to " +
                         std::to_string(bytes) + " bytes in the checkpoint, over the limit of " +
                         std::to_string(config.max_pod_metadata_bytes) +
                         " (netqosd --checkpoint-pod-metadata-bytes); the largest is " + largest +
                         " (" + std::to_string(largest_bytes) + " bytes)");
}

struct PreparedRequest {
  FilteredRequest filtered;
  uint32_t mbps = 0;  // what is reserved: 0 for an implicit request
  // The bandwidth an implicit request declares (then mbps is 0); nullopt for an explicit one.
  std::optional<uint32_t> implicit_mbps;
};

Result<PreparedRequest> Prepare(const PolicyConfig& config, const ContainerRequest& req,
                                bool pod_level) {
  NETQOS_RETURN_IF_ERROR(ValidateIdentity(req, pod_level));
  PreparedRequest p;
  auto filtered = FilterRequest(config.qos, req.labels, req.annotations);
  if (!filtered.ok()) return filtered.status().Wrap(PodLabel(req));
  p.filtered = std::move(filtered).value();
  // Only netqos writes the implicit-bandwidth state annotation: a tenant's own value (kept by
  // --pod-annotation-kept-keys) must never pass for a declared bandwidth.
  p.filtered.annotations.erase(kNetBandwidthImplicitKey);
  auto mbps = ParseBandwidthRequest(req.resource_name, req.resource_requests);
  if (!mbps.ok()) return mbps.status().Wrap(PodLabel(req));
  // Read from the pod's own annotations, not the filtered ones (Katalyst HEAD reads the filtered
  // ones for the reservation and the pod's for the report, which then disagree by default).
  auto implicit = IsImplicitRequest(req.annotations);
  if (!implicit.ok()) return implicit.status().Wrap(PodLabel(req));
  // Declaring without reserving is for the namespaces the tenant policy names; any other
  // declaration is reserved like an explicit request (the enforcer reports the refusal).
  if (*implicit && config.implicit_grants.Allows(req.pod_namespace, *mbps)) {
    p.implicit_mbps = *mbps;
  } else {
    p.mbps = *mbps;
  }
  return p;
}

// The bandwidth annotation of a response: none for an implicit request (as Katalyst HEAD), whose
// reservation is 0 and would read as "no bandwidth".
std::optional<uint32_t> ReportedBandwidth(const PreparedRequest& p, uint32_t mbps) {
  if (p.implicit_mbps) return std::nullopt;
  return mbps;
}

std::vector<uint64_t> ToNodes(const NumaSet& set) {
  return std::vector<uint64_t>(set.begin(), set.end());
}

}  // namespace

Result<StaticPolicy> StaticPolicy::Create(PolicyConfig config, Topology topology) {
  NETQOS_RETURN_IF_ERROR(ValidateRate(config.egress_capacity_rate, "egress"));
  NETQOS_RETURN_IF_ERROR(ValidateRate(config.ingress_capacity_rate, "ingress"));
  StaticPolicy policy;
  policy.config_ = std::move(config);
  NETQOS_RETURN_IF_ERROR(policy.SetTopology(std::move(topology), /*at_start=*/true));
  return policy;
}

Status StaticPolicy::SetTopology(Topology topology, bool at_start) {
  NETQOS_ASSIGN_OR_RETURN(NumaTopology numa, NumaTopology::Create(topology.numa_nodes));
  std::set<NicId> seen;
  for (Nic& nic : topology.nics) {
    if (nic.id.name.empty()) {
      return InvalidArgument("NIC with an empty name in netns \"" + nic.id.netns + "\"");
    }
    if (!seen.insert(nic.id).second) {
      return InvalidArgument(NicLabel(nic.id) + " is listed twice");
    }
    if (nic.speed_mbps < -1) {
      return InvalidArgument(NicLabel(nic.id) + ": invalid speed " +
                             std::to_string(nic.speed_mbps) + " Mbps");
    }
    if (nic.numa_node != -1 && !numa.Contains(nic.numa_node)) {
      return InvalidArgument(NicLabel(nic.id) + ": NUMA node " + std::to_string(nic.numa_node) +
                             " is not in the topology");
    }
    NETQOS_RETURN_IF_ERROR(NormalizeIps(nic.id, nic.ipv4));
    NETQOS_RETURN_IF_ERROR(NormalizeIps(nic.id, nic.ipv6));
  }

  std::vector<Nic> managed;
  for (const Nic& nic : topology.nics) {
    bool available = Available(nic, config_.require_ip_address);
    if (!available && FindManagedNic(nic.id) == nullptr) continue;  // never usable: not listed
    Nic m = nic;
    if (available) {
      m.unhealthy_reason.clear();
    } else {
      m.healthy = false;
      m.unhealthy_reason = UnavailableReason(nic);
    }
    managed.push_back(std::move(m));
  }
  std::sort(managed.begin(), managed.end(), NicOrder);

  // Katalyst reserves on the first NIC at start-up; the choice then sticks to that NIC.
  std::optional<NicId> reservation_nic = reservation_nic_;
  if (!reservation_nic && !managed.empty()) reservation_nic = managed.front().id;

  MachineState state;
  for (Nic& nic : managed) {
    uint32_t reservation =
        reservation_nic && *reservation_nic == nic.id ? config_.reserved_bandwidth : 0;
    auto st = InitialNicState(nic, config_.egress_capacity_rate, config_.ingress_capacity_rate,
                              reservation);
    if (!st.ok()) {
      // At start, as Katalyst: the operator fixes the flag. Later, when the reservation NIC's
      // link renegotiated to a lower speed, refusing the update would freeze the topology (no
      // health, NIC or address change taken any more) and keep the old capacity allocatable:
      // the NIC takes nothing new instead, keeps its allocations and says why.
      if (at_start) return st.status();
      NETQOS_ASSIGN_OR_RETURN(NicState bare, InitialNicState(nic, config_.egress_capacity_rate,
                                                             config_.ingress_capacity_rate, 0));
      bare.egress.reservation = reservation;
      bare.ingress.reservation = reservation;
      nic.healthy = false;
      nic.unhealthy_reason = st.status().message();
      st = bare;
    }
    state.emplace(nic.id, *st);
  }

  topology.numa_nodes = numa.nodes();
  topology_ = std::move(topology);
  numa_ = std::move(numa);
  nics_ = std::move(managed);
  reservation_nic_ = reservation_nic;
  machine_state_ = std::move(state);
  RecomputeMachineState();
  return Status::Ok();
}

void StaticPolicy::RecomputeMachineState() {
  for (const Nic& nic : nics_) {
    auto st = machine_state_.find(nic.id);
    if (st == machine_state_.end()) continue;
    auto u = usage_.find(nic.id);
    ApplyUsage(st->second, u == usage_.end() ? BandwidthUsage{} : u->second, nic.healthy);
  }
}

void StaticPolicy::Restore(PodEntries entries) {
  pod_entries_ = std::move(entries);
  usage_.clear();
  state_bytes_ = 0;
  for (const auto& [uid, containers] : pod_entries_) {
    for (const auto& [name, info] : containers) {
      state_bytes_ += 2 * EntryBytes(info);
      BandwidthUsage& u = usage_[info.nic()];
      u.egress += info.egress;
      u.ingress += info.ingress;
    }
  }
  RecomputeMachineState();
}

Status StaticPolicy::UpdateTopology(Topology topology) {
  return SetTopology(std::move(topology), /*at_start=*/false);
}

void StaticPolicy::AccountAllocation(const AllocationInfo& info, int sign) {
  NicId id = info.nic();
  BandwidthUsage& u = usage_[id];
  if (sign > 0) {
    u.egress += info.egress;
    u.ingress += info.ingress;
  } else {
    u.egress -= std::min<uint64_t>(u.egress, info.egress);
    u.ingress -= std::min<uint64_t>(u.ingress, info.ingress);
  }
  BandwidthUsage current = u;
  if (current == BandwidthUsage{}) usage_.erase(id);
  auto st = machine_state_.find(id);
  if (st == machine_state_.end()) return;  // not managed now: counted when it comes back
  const Nic* nic = FindManagedNic(id);
  ApplyUsage(st->second, current, nic != nullptr && nic->healthy);
}

void StaticPolicy::Apply(const StateChange& change) {
  if (const auto* set = std::get_if<SetAllocation>(&change)) {
    ContainerEntries& containers = pod_entries_[set->info.pod_uid];
    auto it = containers.find(set->info.container_name);
    if (it != containers.end()) {
      AccountAllocation(it->second, -1);
      state_bytes_ -= 2 * EntryBytes(it->second);
      it->second = set->info;
    } else {
      containers.emplace(set->info.container_name, set->info);
    }
    AccountAllocation(set->info, +1);
    state_bytes_ += 2 * EntryBytes(set->info);
    return;
  }
  const auto& remove = std::get<RemovePodEntries>(change);
  auto pod = pod_entries_.find(remove.pod_uid);
  if (pod == pod_entries_.end()) return;
  for (const auto& [name, info] : pod->second) {
    AccountAllocation(info, -1);
    state_bytes_ -= 2 * EntryBytes(info);
  }
  pod_entries_.erase(pod);
}

const Nic* StaticPolicy::FindManagedNic(const NicId& id) const {
  for (const Nic& nic : nics_) {
    if (nic.id == id) return &nic;
  }
  return nullptr;
}

const Nic* StaticPolicy::FindTopologyNic(const NicId& id) const {
  for (const Nic& nic : topology_.nics) {
    if (nic.id == id) return &nic;
  }
  return nullptr;
}

const AllocationInfo* StaticPolicy::FindAllocation(std::string_view pod_uid,
                                                   std::string_view container) const {
  auto pod = pod_entries_.find(std::string(pod_uid));
  if (pod == pod_entries_.end()) return nullptr;
  auto it = pod->second.find(std::string(container));
  return it == pod->second.end() ? nullptr : &it->second;
}

std::vector<NicCandidate> StaticPolicy::Candidates(const AllocationInfo* release) const {
  std::vector<NicCandidate> out;
  out.reserve(nics_.size());
  for (const Nic& nic : nics_) {
    NicCandidate c;
    c.nic = &nic;
    if (auto st = machine_state_.find(nic.id); st != machine_state_.end()) {
      NicState state = st->second;
      // Fix for upstream bug 8: a container growing its allocation may reuse what it holds, so
      // its NIC is judged by the state it would have with that allocation released.
      if (release != nullptr && release->nic() == nic.id) {
        auto u = usage_.find(nic.id);
        BandwidthUsage without = u == usage_.end() ? BandwidthUsage{} : u->second;
        without.egress -= std::min<uint64_t>(without.egress, release->egress);
        without.ingress -= std::min<uint64_t>(without.ingress, release->ingress);
        ApplyUsage(state, without, nic.healthy);
      }
      c.free_egress = state.egress.free;
      c.free_ingress = state.ingress.free;
    }
    c.siblings = numa_.SiblingsOf(nic.numa_node);
    if (config_.numa_node_hints && nic.numa_node >= 0 && numa_.SocketOf(nic.numa_node)) {
      c.own_node = nic.numa_node;
    }
    out.push_back(std::move(c));
  }
  return out;
}

Result<HintsResponse> StaticPolicy::ComputeHints(const ContainerRequest& req,
                                                 bool pod_level) const {
  NETQOS_ASSIGN_OR_RETURN(PreparedRequest p, Prepare(config_, req, pod_level));
  if (pod_entries_.count(req.pod_uid) == 0) {
    NETQOS_RETURN_IF_ERROR(CheckPodMetadata(config_, req, p.filtered));
  }
  HintsResponse resp;
  resp.resource_name = kResourceName;
  resp.labels = p.filtered.labels;
  resp.annotations = p.filtered.annotations;
  if (!pod_level && (req.container_type == ContainerType::kInit ||
                     req.container_type == ContainerType::kSidecar)) {
    return resp;  // hints = nullopt: no topology preference
  }
  resp.hints.emplace();
  bool any_healthy =
      std::any_of(nics_.begin(), nics_.end(), [](const Nic& nic) { return nic.healthy; });
  if (!any_healthy) return resp;
  std::vector<NicCandidate> candidates = Candidates(nullptr);
  FilterOutcome outcome = FilterNics(candidates, p.mbps, p.filtered.annotations, req.hint);
  *resp.hints = BuildHints(outcome.selected, p.filtered.annotations, numa_.AllNodes());
  return resp;
}

Result<HintsResponse> StaticPolicy::GetTopologyHints(const ContainerRequest& req) const {
  return ComputeHints(req, /*pod_level=*/false);
}

Result<HintsResponse> StaticPolicy::GetPodTopologyHints(const PodRequest& req) const {
  return ComputeHints(FromPodRequest(req), /*pod_level=*/true);
}

Result<AllocatePlan> StaticPolicy::PlanAllocateImpl(const ContainerRequest& req, bool pod_level,
                                                    NicChooser& chooser) const {
  NETQOS_ASSIGN_OR_RETURN(PreparedRequest p, Prepare(config_, req, pod_level));
  AllocatePlan plan;
  AllocationResponse& resp = plan.response;
  resp.labels = p.filtered.labels;
  resp.annotations = p.filtered.annotations;
  if (!pod_level && req.container_type == ContainerType::kInit) {
    resp.resource_name = kResourceName;
    resp.has_allocation = false;
    return plan;
  }
  resp.resource_name = req.resource_name;
  resp.has_allocation = true;
  if (!pod_level && req.container_type == ContainerType::kSidecar) {
    return plan;  // quantity 0, result "", no annotations, nil hint; nothing stored
  }

  // The class id comes from the unfiltered annotations (the filter drops net_class_id).
  auto class_id = ResolveNetClassId(config_, req.annotations, p.filtered.qos_level);
  if (!class_id.ok()) return class_id.status().Wrap(PodLabel(req));

  auto reuse = [&](const AllocationInfo& held) -> Result<AllocatePlan> {
    resp.allocated_quantity = held.egress;
    resp.allocation_result = FormatNumaList(held.numa_nodes);
    // The NIC may have vanished since (upstream bug 10 crashed here): report what we know.
    resp.allocation_annotations =
        AllocationAnnotations(config_.annotation_keys, FindManagedNic(held.nic()), held.if_name,
                              *class_id, ReportedBandwidth(p, held.egress));
    resp.hint = req.hint;
    return plan;
  };

  const AllocationInfo* existing = nullptr;
  if (auto pod = pod_entries_.find(req.pod_uid); pod != pod_entries_.end()) {
    if (pod_level) {
      for (const auto& [name, info] : pod->second) {
        if (name != kPodLevelContainerName) {
          return FailedPrecondition(PodLabel(req) + " already has container-level allocations (" +
                                    name + "); a pod-level allocation cannot be added");
        }
      }
    } else if (auto held = pod->second.find(kPodLevelContainerName); held != pod->second.end()) {
      return reuse(held->second);  // the pod's own allocation covers its containers
    }
    if (auto it = pod->second.find(req.container_name); it != pod->second.end()) {
      existing = &it->second;
    }
  }
  if (existing != nullptr && existing->egress >= p.mbps && existing->ingress >= p.mbps) {
    return reuse(*existing);
  }
  NETQOS_RETURN_IF_ERROR(CheckPodMetadata(config_, req, p.filtered));

  std::vector<NicCandidate> candidates = Candidates(existing);
  FilterOutcome outcome =
      FilterNics(candidates, p.mbps, p.filtered.annotations, req.hint, HintFit::kAllocate);
  if (outcome.selected.empty()) {
    std::string why;
    for (const std::string& r : outcome.reasons) why += (why.empty() ? "" : "; ") + r;
    if (why.empty()) why = "no NIC is managed on this node";
    return ResourceExhausted("failed to meet the bandwidth requirement of " +
                             std::to_string(p.mbps) + " Mbps for " + PodLabel(req) + ": " + why);
  }
  size_t index = chooser.Choose(outcome.selected.size());
  if (index >= outcome.selected.size()) {
    return Internal("NIC chooser returned index " + std::to_string(index) + " of " +
                    std::to_string(outcome.selected.size()));
  }
  const NicCandidate& chosen = *outcome.selected[index];
  const Nic& nic = *chosen.nic;

  resp.allocated_quantity = p.mbps;
  resp.allocation_result = FormatNumaList(chosen.siblings);
  resp.allocation_annotations = AllocationAnnotations(config_.annotation_keys, &nic, nic.id.name,
                                                      *class_id, ReportedBandwidth(p, p.mbps));
  // The request's hint is the one the kubelet admitted the pod with: echoed (as Katalyst's CPU and
  // memory plugins do), since the kubelet keeps the response's hint and re-admits running pods
  // with it after a restart, when the restricted policy refuses one that is not preferred. Without
  // nodes to echo (no hint, or topology policy none), the chosen NIC's socket and preference.
  if (req.hint && !req.hint->nodes.empty()) {
    resp.hint = req.hint;
  } else {
    resp.hint = TopologyHint{ToNodes(chosen.siblings), NicPreferred(nic, p.filtered.annotations)};
  }

  AllocationInfo info;
  info.pod_uid = req.pod_uid;
  info.pod_namespace = req.pod_namespace;
  info.pod_name = req.pod_name;
  info.container_name = req.container_name;
  info.container_type = pod_level ? kPodLevelContainerType : ContainerTypeName(req.container_type);
  info.container_index = req.container_index;
  info.pod_role = req.pod_role;
  info.pod_type = req.pod_type;
  info.egress = p.mbps;
  info.ingress = p.mbps;
  info.if_name = nic.id.name;
  info.ns_name = nic.id.netns;
  info.numa_nodes = chosen.siblings;
  info.labels = p.filtered.labels;
  info.annotations = p.filtered.annotations;
  if (p.implicit_mbps) {
    info.annotations[kNetBandwidthImplicitKey] = std::to_string(*p.implicit_mbps);
  }
  info.qos_level = p.filtered.qos_level;
  info.net_class_id = std::to_string(*class_id);
  // Entries only grow the state up to its bound; one that stays the size it was (or shrinks) is
  // always taken, so a state restored over the bound keeps working.
  const size_t held = existing != nullptr ? 2 * EntryBytes(*existing) : 0;
  const size_t wanted = 2 * EntryBytes(info);
  if (wanted > held && state_bytes_ - held + wanted > config_.max_state_bytes) {
    return ResourceExhausted("no room in the checkpoint for " + PodLabel(req) +
                             ": the pod entries take up to " + std::to_string(state_bytes_) +
                             " of " + std::to_string(config_.max_state_bytes) +
                             " bytes and this one needs up to " + std::to_string(wanted) +
                             " (pods with large kept labels and annotations fill it)");
  }
  plan.change = SetAllocation{std::move(info)};
  return plan;
}

Result<AllocatePlan> StaticPolicy::PlanAllocate(const ContainerRequest& req,
                                                NicChooser& chooser) const {
  return PlanAllocateImpl(req, /*pod_level=*/false, chooser);
}

Result<AllocatePlan> StaticPolicy::PlanAllocateForPod(const PodRequest& req,
                                                      NicChooser& chooser) const {
  return PlanAllocateImpl(FromPodRequest(req), /*pod_level=*/true, chooser);
}

Result<RemovePlan> StaticPolicy::PlanRemovePod(std::string_view pod_uid) const {
  // The kubelet always names the pod; an empty uid is a broken client, not "nothing to remove".
  if (pod_uid.empty()) return InvalidArgument("RemovePod request has an empty pod_uid");
  RemovePlan plan;
  if (auto pod = pod_entries_.find(std::string(pod_uid));
      pod != pod_entries_.end() && !pod->second.empty()) {
    plan.change = RemovePodEntries{std::string(pod_uid)};
  }
  return plan;
}

uint64_t StaticPolicy::SocketOfNicOrAllocation(const AllocationInfo& info) const {
  std::optional<int> socket;
  if (const Nic* nic = FindTopologyNic(info.nic()); nic != nullptr) {
    socket = numa_.SocketOf(nic->numa_node);
  } else if (!info.numa_nodes.empty()) {
    // The NIC is gone: the NUMA nodes it was allocated on still name a socket.
    socket = numa_.SocketOf(*info.numa_nodes.begin());
  }
  return static_cast<uint64_t>(socket.value_or(0));
}

Result<TopologyAwareResources> StaticPolicy::GetTopologyAwareResources(
    std::string_view pod_uid, std::string_view container) const {
  // An empty container name is the pod-level allocation's key; an empty pod uid names nothing.
  if (pod_uid.empty()) {
    return InvalidArgument("GetTopologyAwareResources request has an empty pod_uid");
  }
  TopologyAwareResources resp;
  const AllocationInfo* info = FindAllocation(pod_uid, container);
  if (info == nullptr) return resp;
  resp.found = true;
  resp.pod_uid = info->pod_uid;
  resp.pod_name = info->pod_name;
  resp.pod_namespace = info->pod_namespace;
  resp.container_name = info->container_name;
  if (info->container_type == ContainerTypeName(ContainerType::kSidecar)) return resp;
  resp.aggregated_quantity = info->egress;
  TopologyAwareQuantity q;
  q.resource_value = info->egress;
  q.node = SocketOfNicOrAllocation(*info);
  q.name = info->if_name;
  q.type = kNicTopologyType;
  q.topology_level = kTopologyLevelSocket;
  q.annotations = {{kResourceIdentifierKey, info->nic().Identifier()},
                   {kNetnsNameKey, info->ns_name}};
  resp.quantities.push_back(std::move(q));
  return resp;
}

Result<AllocatableResources> StaticPolicy::GetTopologyAwareAllocatableResources() const {
  AllocatableResources resp;
  for (const Nic& nic : nics_) {
    auto st = machine_state_.find(nic.id);
    if (st == machine_state_.end()) {
      return Internal("no machine state for managed " + NicLabel(nic.id));
    }
    uint32_t allocatable =
        nic.healthy ? std::min(st->second.egress.allocatable, st->second.ingress.allocatable) : 0;
    uint32_t capacity = std::min(st->second.egress.capacity, st->second.ingress.capacity);
    TopologyAwareQuantity q;
    q.node = static_cast<uint64_t>(numa_.SocketOf(nic.numa_node).value_or(0));
    q.name = nic.id.name;
    q.type = kNicTopologyType;
    q.topology_level = kTopologyLevelSocket;
    q.annotations = {{kResourceIdentifierKey, nic.id.Identifier()}, {kNetnsNameKey, nic.id.netns}};
    q.resource_value = allocatable;
    resp.allocatable.push_back(q);
    q.resource_value = capacity;
    resp.capacity.push_back(std::move(q));
    resp.aggregated_allocatable += allocatable;
    resp.aggregated_capacity += capacity;
  }
  return resp;
}

}  // namespace netqos::core
