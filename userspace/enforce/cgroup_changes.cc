#include "enforce/cgroup_changes.h"

#include "enforce/container_resolver.h"

namespace netqos::enforce {

void CgroupChanges::Record(const std::string& path) {
  // Parsed outside the lock: the worker's Take never waits for it.
  std::optional<std::string> uid = PodUidOfCgroupPath(path);
  std::lock_guard<std::mutex> lock(mu_);
  if (pending_.all) return;
  if (uid) {
    pending_.pods.insert(std::move(*uid));
  } else {
    pending_.all = true;
    pending_.pods.clear();
  }
}

void CgroupChanges::Lost() {
  std::lock_guard<std::mutex> lock(mu_);
  lost_ = true;
  pending_.all = true;
  pending_.pods.clear();
}

CgroupChangeSet CgroupChanges::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  CgroupChangeSet out = std::move(pending_);
  pending_ = CgroupChangeSet{};
  out.all = out.all || lost_;
  return out;
}

}  // namespace netqos::enforce
