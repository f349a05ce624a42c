#include "pods/cri/cri_pod_source.h"

#include <spdlog/spdlog.h>

#include <set>

namespace netqos::cri {

Result<std::vector<pods::PodInfo>> CriPodSource::ReadAll() {
  if (!runtime_name_) {
    auto version = runtime_->Version();
    if (!version.ok()) return version.status();
    runtime_name_ = version->runtime_name();
  }
  auto sandboxes = runtime_->ListPodSandbox();
  if (!sandboxes.ok()) return sandboxes.status();

  std::set<std::string> listed;
  for (const auto& sb : sandboxes->items()) {
    listed.insert(sb.id());
    if (sb.state() != runtime::v1::SANDBOX_READY || !IsRuntimeId(sb.id())) continue;
    auto known = details_.find(sb.id());
    if (known != details_.end() && (known->second.host_network || !known->second.ips.empty())) {
      continue;
    }
    ++status_calls_;
    auto status = runtime_->PodSandboxStatus(sb.id());
    // Gone since the list (NotFound) or a passing failure: the pod is listed without its
    // addresses this time and asked again next time.
    if (!status.ok()) continue;
    auto uid = sb.labels().find(kPodUidLabel);
    details_[sb.id()] =
        DetailsFromStatus(*status, uid == sb.labels().end() ? std::string() : uid->second);
  }
  std::erase_if(details_, [&](const auto& kv) { return !listed.contains(kv.first); });

  auto containers = runtime_->ListContainers();
  if (!containers.ok()) return containers.status();
  CriPodList list = TranslatePods(*sandboxes, details_, *containers, *runtime_name_, options_);
  // Logged when they first appear, not on every read of an unchanged runtime.
  const std::set<std::string> before(rejected_.begin(), rejected_.end());
  for (const auto& why : list.rejected) {
    if (!before.contains(why)) spdlog::warn("cri pod source ignores runtime={} {}", endpoint_, why);
  }
  rejected_ = std::move(list.rejected);
  return std::move(list.pods);
}

Result<std::optional<std::vector<pods::PodInfo>>> CriPodSource::Read(bool force) {
  auto pods = ReadAll();
  if (!pods.ok()) {
    last_.reset();
    return pods.status();
  }
  if (!force && last_ && *last_ == *pods) return std::optional<std::vector<pods::PodInfo>>();
  last_ = *pods;
  return std::optional<std::vector<pods::PodInfo>>(std::move(*pods));
}

}  // namespace netqos::cri
