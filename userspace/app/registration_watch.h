// Watches the kubelet's registration of the plugin socket: polled by the daemon's main loop, it
// logs one warning per registration round that the kubelet opened (GetInfo) and never closed
// (no NotifyRegistrationStatus within the timeout), and a note if the verdict arrives later. The
// current phase is read on demand by netqosctl status and the metrics.
#pragma once

#include <chrono>
#include <optional>

#include "grpc/registration_health.h"
#include "grpc/registration_service.h"
#include "metrics/registry.h"

namespace netqos::app {

class RegistrationWatch {
 public:
  RegistrationWatch(const grpcadapter::RegistrationService& registration,
                    std::chrono::steady_clock::duration timeout)
      : registration_(registration), timeout_(timeout) {}

  grpcadapter::RegistrationHealth Health() const;
  void Poll();

  // netqos_kubelet_registration{state}: 1 for the current phase, 0 for the others (scrape time).
  void AddMetrics(metrics::Registry& registry) const;

 private:
  const grpcadapter::RegistrationService& registration_;
  const std::chrono::steady_clock::duration timeout_;
  // The GetInfo of the round last warned about (touched by Poll's thread only).
  std::optional<std::chrono::steady_clock::time_point> warned_round_;
};

}  // namespace netqos::app
