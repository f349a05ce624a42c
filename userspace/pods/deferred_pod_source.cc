#include "pods/deferred_pod_source.h"

#include <utility>

namespace netqos::pods {

DeferredPodSource::DeferredPodSource(Factory factory, std::string pending)
    : factory_(std::move(factory)), description_(std::move(pending)) {}

Result<std::optional<std::vector<PodInfo>>> DeferredPodSource::Read(bool force) {
  if (!source_) {
    auto made = factory_();
    if (!made.ok()) return made.status().Wrap("pod source not available yet");
    source_ = std::move(made).value();
    std::lock_guard lk(mu_);
    description_ = source_->Describe();
  }
  return source_->Read(force);
}

std::string DeferredPodSource::Describe() const {
  std::lock_guard lk(mu_);
  return description_;
}

}  // namespace netqos::pods
