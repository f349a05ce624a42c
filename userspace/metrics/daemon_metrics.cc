#include "metrics/daemon_metrics.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>

#include "core/constants.h"
#include "metrics/health_families.h"
#include "metrics/process_families.h"
#include "metrics/qos_level_families.h"

namespace netqos::metrics {
namespace {

// The plugin's Mbps (10^6 bits per second) in the base unit, bytes per second.
constexpr double kBytesPerSecondPerMbps = 1e6 / 8;

Family MakeFamily(std::string name, std::string help, MetricType type) {
  Family f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

double BytesPerSecond(uint64_t mbps) { return static_cast<double>(mbps) * kBytesPerSecondPerMbps; }

// The allocation of a container in the books: its own entry, else its pod's pod-level one
// (AllocateForPod), as the enforcer resolves it.
const core::AllocationInfo* FindAllocation(const service::AllocationService::View& view,
                                           const std::string& pod_uid,
                                           const std::string& container) {
  auto pod = view.pod_entries.find(pod_uid);
  if (pod == view.pod_entries.end()) return nullptr;
  auto it = pod->second.find(container);
  if (it == pod->second.end()) it = pod->second.find(core::kPodLevelContainerName);
  return it == pod->second.end() ? nullptr : &it->second;
}

// The counter families, one line each: which member of the shared counters (common/counters.h)
// feeds it, under which name and help. Not every counter is a metric; a new one becomes one by
// a line here. A traffic family takes egress from one member and ingress from another.
struct TrafficFamily {
  const char* name;
  const char* help;
  uint64_t TrafficCounters::*egress;
  uint64_t TrafficCounters::*ingress;
};
// A queue family: one member of the HTB leaf (or the class's sum over its leaves) per direction.
struct QueueFamily {
  const char* name;
  const char* help;
  MetricType type;
  uint64_t QueueCounters::*member;
};

constexpr TrafficFamily kContainerTraffic[] = {
    {"netqos_container_bytes_total",
     "Bytes a container sent (egress) or received (ingress), counted by the cgroup programs at "
     "its sockets, IP headers included, since its class map entry was created.",
     &TrafficCounters::tx_bytes, &TrafficCounters::rx_bytes},
    {"netqos_container_packets_total", "Packets a container sent (egress) or received (ingress).",
     &TrafficCounters::tx_packets, &TrafficCounters::rx_packets},
};
constexpr QueueFamily kContainerQueue[] = {
    {"netqos_container_drops_total",
     "Packets of a container its own HTB leaf dropped (queue full), egress on the NIC and "
     "ingress on its IFB; 0 without a leaf of its own (the BPF programs never drop).",
     MetricType::kCounter, &QueueCounters::drops},
    {"netqos_container_overlimits_total",
     "Times a container's own HTB leaf was over its rate when asked to send (throttled).",
     MetricType::kCounter, &QueueCounters::overlimits},
    {"netqos_container_backlog_bytes", "Bytes queued in a container's own HTB leaf now.",
     MetricType::kGauge, &QueueCounters::backlog_bytes},
};
constexpr TrafficFamily kClassTraffic[] = {
    {"netqos_class_bytes_total", "Bytes of all containers of a net class id, by direction.",
     &TrafficCounters::tx_bytes, &TrafficCounters::rx_bytes},
    {"netqos_class_packets_total", "Packets of all containers of a net class id, by direction.",
     &TrafficCounters::tx_packets, &TrafficCounters::rx_packets},
};
constexpr QueueFamily kClassQueue[] = {
    {"netqos_class_drops_total",
     "Packets the own HTB leaves of a net class id's containers dropped, by direction.",
     MetricType::kCounter, &QueueCounters::drops},
    {"netqos_class_overlimits_total",
     "Overlimits of the own HTB leaves of a net class id's containers, by direction.",
     MetricType::kCounter, &QueueCounters::overlimits},
};

template <size_t N>
std::vector<Family> MakeFamilies(const TrafficFamily (&specs)[N]) {
  std::vector<Family> out;
  for (const auto& s : specs) out.push_back(MakeFamily(s.name, s.help, MetricType::kCounter));
  return out;
}

template <size_t N>
std::vector<Family> MakeFamilies(const QueueFamily (&specs)[N]) {
  std::vector<Family> out;
  for (const auto& s : specs) out.push_back(MakeFamily(s.name, s.help, s.type));
  return out;
}

// `families[i]` is made from `specs[i]`; `labels(direction)` gives a sample's labels.
template <size_t N, typename LabelsFn>
void AddTrafficSamples(const TrafficFamily (&specs)[N], const TrafficCounters& c,
                       const LabelsFn& labels, std::vector<Family>* families) {
  for (size_t i = 0; i < N; ++i) {
    (*families)[i].samples.push_back({labels("egress"), static_cast<double>(c.*specs[i].egress)});
    (*families)[i].samples.push_back({labels("ingress"), static_cast<double>(c.*specs[i].ingress)});
  }
}

template <size_t N>
void AddQueueSamples(const QueueFamily (&specs)[N], const QueueCounters& q, const Labels& labels,
                     std::vector<Family>* families) {
  for (size_t i = 0; i < N; ++i) {
    (*families)[i].samples.push_back({labels, static_cast<double>(q.*specs[i].member)});
  }
}

}  // namespace

const std::vector<std::string>& ResourcePluginMethods() {
  static const std::vector<std::string> kMethods = {"GetTopologyHints",
                                                    "GetPodTopologyHints",
                                                    "Allocate",
                                                    "AllocateForPod",
                                                    "RemovePod",
                                                    "GetResourcesAllocation",
                                                    "GetTopologyAwareResources",
                                                    "GetTopologyAwareAllocatableResources",
                                                    "GetResourcePluginOptions",
                                                    "PreStartContainer"};
  return kMethods;
}

const std::vector<double>& RpcDurationBounds() { return LatencyBounds(); }

void CollectAllocations(const service::AllocationService::View& view, std::vector<Family>* out) {
  Family containers = MakeFamily(
      "netqos_nic_allocations",
      "Containers (and pod-level entries) holding an allocation on a NIC.", MetricType::kGauge);
  Family healthy =
      MakeFamily("netqos_nic_healthy",
                 "1 when the NIC is usable for new allocations (up, with an address), else 0.",
                 MetricType::kGauge);
  // One family per quantity, the direction a label (as on every other family).
  Family capacity =
      MakeFamily("netqos_nic_capacity_bytes_per_second",
                 "NIC capacity by direction: link speed x that direction's capacity rate.",
                 MetricType::kGauge);
  Family reserved = MakeFamily(
      "netqos_nic_reserved_bytes_per_second",
      "NIC bandwidth withheld from allocation by direction (system plus configured reservation).",
      MetricType::kGauge);
  Family allocatable =
      MakeFamily("netqos_nic_allocatable_bytes_per_second",
                 "NIC bandwidth that can be allocated by direction (0 while the NIC is unhealthy).",
                 MetricType::kGauge);
  Family allocated =
      MakeFamily("netqos_nic_allocated_bytes_per_second",
                 "NIC bandwidth allocated to containers, by direction.", MetricType::kGauge);
  struct Direction {
    const char* name;
    const core::BandwidthInfo core::NicState::*field;
  };
  const Direction directions[] = {{"egress", &core::NicState::egress},
                                  {"ingress", &core::NicState::ingress}};

  for (const auto& nic : view.nics) {
    const Labels labels = {{"nic", nic.id.Identifier()}};
    healthy.samples.push_back({labels, nic.healthy ? 1.0 : 0.0});
    double count = 0;
    for (const auto& [uid, entries] : view.pod_entries) {
      for (const auto& [name, info] : entries) {
        if (info.nic() == nic.id) ++count;
      }
    }
    containers.samples.push_back({labels, count});
    auto st = view.machine_state.find(nic.id);
    if (st == view.machine_state.end()) continue;
    for (const auto& d : directions) {
      const core::BandwidthInfo& bw = st->second.*(d.field);
      const Labels l = {{"direction", d.name}, {"nic", nic.id.Identifier()}};
      capacity.samples.push_back({l, BytesPerSecond(bw.capacity)});
      reserved.samples.push_back(
          {l, BytesPerSecond(uint64_t{bw.sys_reservation} + bw.reservation)});
      allocatable.samples.push_back({l, BytesPerSecond(bw.allocatable)});
      allocated.samples.push_back({l, BytesPerSecond(bw.allocated)});
    }
  }
  for (Family* f : {&containers, &healthy, &capacity, &reserved, &allocatable, &allocated}) {
    out->push_back(std::move(*f));
  }
}

void CollectEnforcement(const service::EnforcementReport& report,
                        const service::AllocationService::View* allocations,
                        std::vector<Family>* out) {
  Family mode = MakeFamily("netqos_enforcement_mode",
                           "1 for the enforcement mode in effect: bpf, none, or disabled (bpf "
                           "was asked for and failed to start).",
                           MetricType::kGauge);
  mode.samples.push_back({{{"mode", report.mode}}, 1});
  Family passes = MakeFamily("netqos_enforcement_passes_total",
                             "Reconciliation passes of the enforcer.", MetricType::kCounter);
  passes.samples.push_back({{}, static_cast<double>(report.passes)});
  Family pod_failures = MakeFamily("netqos_enforcement_pod_list_failures_total",
                                   "Failed reads of the kubelet's pod list.", MetricType::kCounter);
  pod_failures.samples.push_back({{}, static_cast<double>(report.pod_list_failures)});
  Family reports = MakeFamily("netqos_enforcement_problem_reports_total",
                              "Enforcement problems seen, counted on every pass they last.",
                              MetricType::kCounter);
  reports.samples.push_back({{}, static_cast<double>(report.problem_reports_total)});
  Family problems = MakeFamily(
      "netqos_enforcement_problems",
      "Enforcement problems active now, by kind (netqosctl status and the log name each object).",
      MetricType::kGauge);
  // Every kind's series, at 0 when none is active: the kinds the enforcer can report are the
  // enum's (common/problem_kind.h), so the label set is closed.
  std::map<ProblemKind, double> by_kind;
  for (const auto& k : kProblemKinds) by_kind[k.value] = 0;
  for (const auto& p : report.problems) ++by_kind[p.kind];
  for (const auto& [kind, n] : by_kind) {
    problems.samples.push_back({{{"kind", std::string(ProblemKindName(kind))}}, n});
  }
  Family refused = MakeFamily(
      "netqos_tenant_refused_annotations",
      "Pods whose annotation the tenant policy refuses or bounds now, by namespace and annotation "
      "key (docs/tenant-policy.md).",
      MetricType::kGauge);
  for (const auto& [key, pods] : report.refused_annotations) {
    refused.samples.push_back(
        {{{"namespace", key.first}, {"annotation", key.second}}, static_cast<double>(pods)});
  }
  Family pods_known =
      MakeFamily("netqos_enforcement_pods_known",
                 "1 once the kubelet's pod list has been read, else 0.", MetricType::kGauge);
  pods_known.samples.push_back({{}, report.pods_known ? 1.0 : 0.0});
  Family pod_veths =
      MakeFamily("netqos_enforcement_pod_veths",
                 "Pods behind a CNI classified at the host end of their veths (--pod-veths).",
                 MetricType::kGauge);
  pod_veths.samples.push_back({{}, static_cast<double>(report.pod_veths)});
  Family shaped = MakeFamily("netqos_enforcement_shaped_nic",
                             "1 for each NIC carrying netqos's shaping.", MetricType::kGauge);
  for (const auto& nic : report.shaped_nics) shaped.samples.push_back({{{"nic", nic}}, 1});
  Family shaping_mode = MakeFamily(
      "netqos_enforcement_shaping_mode",
      "1 for the egress shaping mode (htb, edt) of each shaped NIC, with why it was chosen.",
      MetricType::kGauge);
  for (const auto& [nic, m] : report.shaping_modes) {
    shaping_mode.samples.push_back({{{"nic", nic}, {"mode", m.mode}, {"reason", m.why}}, 1});
  }
  Family inactive = MakeFamily(
      "netqos_enforcement_inactive_feature",
      "1 for each feature the flags ask for that a shaped NIC's mode does not do (only htb does "
      "it; the NIC is in edt mode), by the flag that asks for it.",
      MetricType::kGauge);
  for (const auto& [nic, m] : report.shaping_modes) {
    for (const auto& f : m.inactive)
      inactive.samples.push_back({{{"nic", nic}, {"feature", f}}, 1});
  }

  std::vector<Family> c_traffic = MakeFamilies(kContainerTraffic);
  std::vector<Family> c_queue = MakeFamilies(kContainerQueue);
  Family c_alloc = MakeFamily(
      "netqos_container_allocated_bytes_per_second",
      "A classified container's allocation, by direction (its pod's for a pod-level one).",
      MetricType::kGauge);
  Family c_leaf = MakeFamily(
      "netqos_container_leaf_bytes_per_second",
      "A container's leaf by direction: bound=rate is what it is guaranteed, bound=ceil the most "
      "it gets (absent when it borrows up to its QoS level's ceiling).",
      MetricType::kGauge);
  std::vector<Family> k_traffic = MakeFamilies(kClassTraffic);
  std::vector<Family> k_queue = MakeFamilies(kClassQueue);
  Family c_info = MakeFamily(
      "netqos_container_info",
      "1 per classified container, labelled with what it is enforced as: its QoS level, the NIC "
      "of its allocation (\"\" without one) and its HTB class; joined on cgroup_id.",
      MetricType::kGauge);

  for (const auto& c : report.containers) {
    const Labels base = {{"namespace", c.pod_namespace},
                         {"pod", c.pod_name},
                         {"container", c.container},
                         {"cgroup_id", std::to_string(c.cgroup_id)},
                         {"class_id", std::to_string(c.net_class_id)}};
    auto with_direction = [&](const char* direction) {
      Labels l = {{"direction", direction}};
      l.insert(l.end(), base.begin(), base.end());
      return l;
    };
    Labels info = base;
    info.insert(info.end(),
                {{"qos_level", c.qos_level}, {"nic", c.nic}, {"htb_class", c.htb_class}});
    c_info.samples.push_back({std::move(info), 1});
    AddTrafficSamples(kContainerTraffic, c.counters, with_direction, &c_traffic);
    // A leaf whose counters could not be read has no sample (rather than a false 0); a
    // container without a leaf of its own has no drops of its own.
    for (const auto& [direction, leaf] :
         {std::pair{"egress", &c.egress_queue}, std::pair{"ingress", &c.ingress_queue}}) {
      if (*leaf && !(*leaf)->error.empty()) continue;
      const QueueCounters q = *leaf ? (*leaf)->counters : QueueCounters{};
      AddQueueSamples(kContainerQueue, q, with_direction(direction), &c_queue);
    }
    for (const auto& [direction, cap] :
         {std::pair{"egress", &c.egress_cap}, std::pair{"ingress", &c.ingress_cap}}) {
      if (!*cap) continue;
      const auto with_bound = [&, dir = direction](const char* bound) {
        Labels l = with_direction(dir);
        l.insert(l.begin() + 1, {"bound", bound});
        return l;
      };
      c_leaf.samples.push_back(
          {with_bound("rate"), static_cast<double>((*cap)->rate_bps) / kBitsPerByte});
      if (!(*cap)->borrows) {
        c_leaf.samples.push_back(
            {with_bound("ceil"), static_cast<double>((*cap)->ceil_bps) / kBitsPerByte});
      }
    }
    if (c.nic.empty()) continue;  // no allocation: the QoS level's default class
    c_alloc.samples.push_back({with_direction("egress"), BytesPerSecond(c.allocated_mbps)});
    if (allocations != nullptr) {
      if (const auto* a = FindAllocation(*allocations, c.pod_uid, c.container); a != nullptr) {
        c_alloc.samples.push_back({with_direction("ingress"), BytesPerSecond(a->ingress)});
      }
    }
  }
  for (const auto& k : report.classes) {
    const std::string id = std::to_string(k.net_class_id);
    auto with_direction = [&](const char* direction) {
      return Labels{{"direction", direction}, {"class_id", id}};
    };
    AddTrafficSamples(kClassTraffic, k.counters, with_direction, &k_traffic);
    for (const auto& [direction, q] :
         {std::pair{"egress", &k.egress_queue}, std::pair{"ingress", &k.ingress_queue}}) {
      AddQueueSamples(kClassQueue, *q, with_direction(direction), &k_queue);
    }
  }
  for (Family* f : {&mode, &passes, &pod_failures, &reports, &problems, &refused, &pods_known,
                    &pod_veths, &shaped, &shaping_mode, &inactive, &c_alloc, &c_leaf, &c_info}) {
    out->push_back(std::move(*f));
  }
  for (auto* families : {&c_traffic, &c_queue, &k_traffic, &k_queue}) {
    for (auto& f : *families) out->push_back(std::move(f));
  }
  CollectPasses(report, out);
  CollectQosLevels(report, out);
}

DaemonMetrics::DaemonMetrics(BuildInfo build, service::AllocationService* allocations,
                             const service::EnforcementView* enforcement)
    : rpc_requests_(registry_.AddCounter(
          "netqos_rpc_requests_total",
          "Resource plugin RPCs handled, by method and gRPC status code.", {"method", "code"})),
      rpc_duration_(registry_.AddHistogram("netqos_rpc_duration_seconds",
                                           "Time to handle a resource plugin RPC.", {"method"},
                                           RpcDurationBounds())),
      heartbeat_(registry_.AddGauge(
          "netqos_heartbeat_timestamp_seconds",
          "Unix time of the last heartbeat: a ticker that takes the allocation service's and "
          "the enforcer's locks every second.")),
      allocation_failures_(registry_.AddCounter(
          "netqos_allocation_failures_total",
          "Failed Allocate and AllocateForPod calls, by whether the pod carries Katalyst's "
          "resource-reallocation annotation (true, false, or none).",
          {"method", "reallocation"})),
      scrapes_(registry_.AddCounter(
          "netqos_metrics_scrapes_total",
          "Answers to /metrics by HTTP status: 200, 500 (collecting failed), 503 (not computed "
          "within 10 s).",
          {"code"})) {
  // Every status an alert counts exists at 0 from the start: a series that first appears at 1
  // shows no increase, so the first failure would go unseen.
  for (const char* code : {"200", "500", "503"}) scrapes_.Inc({code}, 0);
  registry_
      .AddGauge("netqos_start_time_seconds",
                "Unix time netqosd started (when its metrics were set up, after the checkpoint "
                "was loaded).")
      .Set({}, std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                   .count());
  for (const auto& m : ResourcePluginMethods()) {
    rpc_requests_.Inc({m, "OK"}, 0);
    rpc_duration_.Touch({m});
  }
  // A refusal for lack of bandwidth is what NetqosAllocationsRefused counts (see above).
  for (const char* m : {"Allocate", "AllocateForPod"})
    rpc_requests_.Inc({m, "RESOURCE_EXHAUSTED"}, 0);
  for (const char* m : {"Allocate", "AllocateForPod"}) {
    for (const char* r : {"none", "true", "false"}) allocation_failures_.Inc({m, r}, 0);
  }
  registry_.AddCollector([this](std::vector<Family>* out) {
    Family f = MakeFamily("netqos_rpc_last_error_info",
                          "1 per method that has failed, labelled with the gRPC status code of "
                          "its latest failure (the message is in the log).",
                          MetricType::kGauge);
    std::lock_guard lk(last_error_mu_);
    for (const auto& [method, code] : last_error_) {
      f.samples.push_back({{{"method", method}, {"code", code}}, 1.0});
    }
    out->push_back(std::move(f));
  });
  registry_
      .AddGauge("netqos_build_info",
                "1, labelled with the netqosd version, its git commit and its build date (UTC).",
                {"version", "commit", "build_date"})
      .Set({std::move(build.version), std::move(build.commit), std::move(build.date)}, 1);
  AddProcessCollector(&registry_);
  registry_.AddGauge("netqos_up", "1 while netqosd serves metrics.").Set({}, 1);

  if (allocations != nullptr) {
    registry_.AddCollector([allocations, enforcement](std::vector<Family>* out) {
      const service::AllocationService::View view = allocations->Snapshot();
      CollectAllocations(view, out);
      CollectCheckpoint(allocations->CheckpointFlushes(), !allocations->PersistenceStatus().ok(),
                        out);
      if (enforcement != nullptr) CollectEnforcement(enforcement->Report(true), &view, out);
    });
  } else if (enforcement != nullptr) {
    registry_.AddCollector([enforcement](std::vector<Family>* out) {
      CollectEnforcement(enforcement->Report(true), nullptr, out);
    });
  }
}

void DaemonMetrics::Observe(std::string_view method, std::string_view code,
                            double seconds) noexcept {
  try {
    const std::string m(method);
    rpc_requests_.Inc({m, std::string(code)});
    rpc_duration_.Observe({m}, seconds);
    // The code, a closed set, rather than the message, which quotes tenant input and would mint
    // a series per distinct text.
    if (code != "OK") {
      std::lock_guard lk(last_error_mu_);
      last_error_[m] = std::string(code);
    }
  } catch (...) {  // out of memory: the call is simply not counted
  }
}

void DaemonMetrics::ObserveScrape(int http_status) noexcept {
  try {
    scrapes_.Inc({std::to_string(http_status)});
  } catch (...) {  // out of memory: the answer is simply not counted
  }
}

void DaemonMetrics::ObserveFailure(std::string_view method, std::string_view /*message*/,
                                   std::string_view reallocation) noexcept {
  try {
    if (method == "Allocate" || method == "AllocateForPod") {
      allocation_failures_.Inc(
          {std::string(method), reallocation.empty() ? "none" : std::string(reallocation)});
    }
  } catch (...) {  // out of memory: the failure is simply not recorded
  }
}

}  // namespace netqos::metrics
