// RpcObserver: how the RPC adapters report each call they handled (method, gRPC status code name,
// duration) to whoever measures them. The app sets one (the metrics layer implements it), so the
// adapters never depend on metrics.
#pragma once

#include <string_view>

namespace netqos::service {

class RpcObserver {
 public:
  virtual ~RpcObserver() = default;
  // Called once per RPC, after the handler returned, on the RPC's thread. Must not block for
  // long and must not throw.
  // `code` is the gRPC code name ("OK", "INVALID_ARGUMENT", ...); `seconds` the handler's time.
  virtual void Observe(std::string_view method, std::string_view code, double seconds) noexcept = 0;
  // Also called, before Observe, for an RPC that failed: its status message, and for Allocate and
  // AllocateForPod the pod's reallocation tag ("true" or "false" when the pod carries Katalyst's
  // resource-reallocation annotation, else empty). Katalyst HEAD tags its failure metrics with
  // both. Same rules as Observe.
  virtual void ObserveFailure(std::string_view /*method*/, std::string_view /*message*/,
                              std::string_view /*reallocation*/) noexcept {}
};

}  // namespace netqos::service
