// A pod source made on first use and tried again on every read until it can be made. The
// container runtime's socket may not exist yet when netqosd starts (a node booting, containerd
// restarting while `--cri-socket=auto` looks for it): enforcement and the residual cleanup then
// start anyway and pick the runtime up when it appears, instead of running without pods for the
// daemon's whole life.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "pods/pod_source.h"

namespace netqos::pods {

class DeferredPodSource final : public PodSource {
 public:
  using Factory = std::function<Result<std::unique_ptr<PodSource>>()>;
  // `pending` is what Describe says until the factory succeeds.
  DeferredPodSource(Factory factory, std::string pending);

  // Makes the source if it is not made yet (a failure to make it is this read's error), then
  // reads it.
  Result<std::optional<std::vector<PodInfo>>> Read(bool force) override;
  // Safe from any thread (status and metrics ask while the enforcer reads).
  std::string Describe() const override;

 private:
  Factory factory_;
  std::unique_ptr<PodSource> source_;  // only the reading thread touches it
  mutable std::mutex mu_;
  std::string description_;  // guarded by mu_
};

}  // namespace netqos::pods
