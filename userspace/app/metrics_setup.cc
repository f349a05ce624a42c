#include "app/metrics_setup.h"

#include <sys/stat.h>

#include <utility>

#include "common/version.h"

namespace netqos::app {

std::unique_ptr<metrics::DaemonMetrics> MakeDaemonMetrics(const DaemonConfig& config,
                                                          service::AllocationService& service,
                                                          const service::EnforcementView& view) {
  if (!config.metrics_bind_address) return nullptr;
  return std::make_unique<metrics::DaemonMetrics>(
      metrics::BuildInfo{Version(), Commit(), BuildDate()}, &service, &view);
}

metrics::ProbeResult CheckReadiness(const std::vector<std::string>& socket_paths,
                                    const service::EnforcementReport& enforcement) {
  for (const auto& path : socket_paths) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
      return {false, "not ready: plugin socket " + path +
                         " is not served (a deleted socket is re-served within a second)"};
    }
  }
  if (enforcement.mode == "disabled") {
    return {false, "not ready: enforcement was asked for and is disabled: " + enforcement.error};
  }
  if (enforcement.mode == "bpf" && enforcement.starting) {
    return {false,
            "not ready: enforcement is starting (opening the eBPF dataplane, adopting the pinned "
            "state); what was pinned keeps enforcing"};
  }
  if (enforcement.mode == "bpf" && enforcement.passes == 0) {
    return {false, "not ready: the first enforcement pass has not finished"};
  }
  return {true, "ready: " + std::to_string(socket_paths.size()) +
                    " plugin socket(s) served, enforcement=" + enforcement.mode};
}

Result<std::unique_ptr<metrics::MetricsServer>> StartMetricsServer(
    const DaemonConfig& config, metrics::DaemonMetrics& daemon_metrics,
    service::AllocationService& service, const service::EnforcementView& view,
    std::vector<std::string> socket_paths) {
  if (!config.metrics_bind_address)
    return FailedPrecondition("metrics: no --metrics-bind-address to serve on");
  // /readyz's verdict as a gauge too, so that an alert sees it where the probe is only the
  // kubelet's.
  daemon_metrics.registry().AddCollector([&view,
                                          paths = socket_paths](std::vector<metrics::Family>* out) {
    out->push_back({"netqos_ready",
                    "1 when /readyz answers 200 (every plugin socket served, enforcement's first "
                    "pass done), else 0.",
                    metrics::MetricType::kGauge,
                    {{{}, CheckReadiness(paths, view.Report(false)).ok ? 1.0 : 0.0}},
                    {},
                    {}});
  });
  metrics::MetricsServer::Options o;
  o.bind_address = *config.metrics_bind_address;
  o.render = [&daemon_metrics] { return daemon_metrics.RenderText(); };
  o.ready = [&view, paths = std::move(socket_paths)] {
    return CheckReadiness(paths, view.Report(false));
  };
  o.on_scrape = [&daemon_metrics](int http_status) { daemon_metrics.ObserveScrape(http_status); };
  // Both take the lock their component's work runs under: if either deadlocks, the heartbeat
  // stops and /healthz turns 503, so the kubelet restarts the daemon.
  // A failed journal flush also stops the beat: the daemon refuses every call until a restart
  // reloads the checkpoint (AllocationService::PersistenceStatus).
  o.liveness_probe = [&service, &view] {
    (void)service.Options();
    (void)view.Report(false);
    if (Status st = service.PersistenceStatus(); !st.ok()) throw std::runtime_error(st.message());
  };
  o.on_heartbeat = [&daemon_metrics](double unix_seconds) {
    daemon_metrics.SetHeartbeat(unix_seconds);
  };
  return metrics::MetricsServer::Start(std::move(o));
}

}  // namespace netqos::app
