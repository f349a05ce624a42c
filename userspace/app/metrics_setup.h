// Wires --metrics-bind-address for the composition root: netqosd's metric families over the
// allocation service and the enforcement view, the heartbeat (a liveness probe through their
// locks) and the readiness check, served by metrics::MetricsServer. See docs/metrics.md.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "app/daemon_config.h"
#include "common/status.h"
#include "metrics/daemon_metrics.h"
#include "metrics/http_server.h"
#include "service/allocation_service.h"
#include "service/enforcement_view.h"

namespace netqos::app {

// Null when --metrics-bind-address is empty (metrics off): nothing is counted.
std::unique_ptr<metrics::DaemonMetrics> MakeDaemonMetrics(const DaemonConfig& config,
                                                          service::AllocationService& service,
                                                          const service::EnforcementView& view);

// /readyz: every plugin socket is there, and enforcement (when asked for) has made its first pass.
metrics::ProbeResult CheckReadiness(const std::vector<std::string>& socket_paths,
                                    const service::EnforcementReport& enforcement);

// Binds the listener on --metrics-bind-address (FailedPrecondition without one); everything
// referenced must outlive the returned server.
Result<std::unique_ptr<metrics::MetricsServer>> StartMetricsServer(
    const DaemonConfig& config, metrics::DaemonMetrics& daemon_metrics,
    service::AllocationService& service, const service::EnforcementView& view,
    std::vector<std::string> socket_paths);

}  // namespace netqos::app
