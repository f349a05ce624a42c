// DaemonMetrics: netqosd's metric families (docs/metrics.md) in one Registry. RPC counts and
// latencies are recorded as calls happen (it is the resource plugin's service::RpcObserver); NIC
// capacity and allocations come from an AllocationService snapshot and enforcement from a
// service::EnforcementView, both read at scrape time, so no gauge is ever stale.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/registry.h"
#include "service/allocation_service.h"
#include "service/enforcement_view.h"
#include "service/rpc_observer.h"

namespace netqos::metrics {

// The resource plugin's RPC names, whose series exist from the start (at zero).
const std::vector<std::string>& ResourcePluginMethods();

// What netqos_build_info is labelled with (common/version.h in the daemon).
struct BuildInfo {
  std::string version;
  std::string commit;  // "" when unknown
  std::string date;    // UTC ISO 8601, "" when unknown
};

// Upper bounds of netqos_rpc_duration_seconds (an Allocate is one fsync'd journal line).
const std::vector<double>& RpcDurationBounds();

// Scrape-time families, exposed for tests.
// NIC capacity, reservation, allocatable, allocated (bytes/s, by direction), health and
// allocations per NIC.
void CollectAllocations(const service::AllocationService::View& view, std::vector<Family>* out);
// Per-container and per-class counters, allocated rates, mode, passes, problems. `allocations`
// (may be null) supplies ingress allocations, which the enforcement report does not carry.
void CollectEnforcement(const service::EnforcementReport& report,
                        const service::AllocationService::View* allocations,
                        std::vector<Family>* out);

class DaemonMetrics final : public service::RpcObserver {
 public:
  // Sources are not owned and may be null (their families are then absent); they must outlive
  // every scrape (stop the MetricsServer first).
  DaemonMetrics(BuildInfo build, service::AllocationService* allocations,
                const service::EnforcementView* enforcement);

  void Observe(std::string_view method, std::string_view code, double seconds) noexcept override;
  // netqos_allocation_failures_total (Allocate, AllocateForPod); the message is not a label.
  void ObserveFailure(std::string_view method, std::string_view message,
                      std::string_view reallocation) noexcept override;
  // netqos_metrics_scrapes_total: the HTTP status of an answer to /metrics (MetricsServer's
  // on_scrape).
  void ObserveScrape(int http_status) noexcept;
  // netqos_heartbeat_timestamp_seconds.
  void SetHeartbeat(double unix_seconds) { heartbeat_.Set({}, unix_seconds); }

  Registry& registry() { return registry_; }
  std::string RenderText() const { return registry_.RenderText(); }

 private:
  Registry registry_;
  CounterVec& rpc_requests_;
  HistogramVec& rpc_duration_;
  GaugeVec& heartbeat_;
  CounterVec& allocation_failures_;
  CounterVec& scrapes_;
  mutable std::mutex last_error_mu_;
  std::map<std::string, std::string> last_error_;  // method -> gRPC code of its latest failure
};

}  // namespace netqos::metrics
