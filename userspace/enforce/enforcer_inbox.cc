#include "enforce/enforcer_inbox.h"

#include <algorithm>
#include <utility>

namespace netqos::enforce {

void EnforcerInbox::RecordGeneral() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    dirty_ = true;
    general_ = true;
  }
  work_cv_.notify_all();
}

void EnforcerInbox::RecordAllocated(const std::string& pod_uid) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tombstones_.erase(pod_uid);
    if (allocated_uids_.size() < kMaxQueued || allocated_uids_.count(pod_uid) != 0) {
      allocated_uids_.insert(pod_uid);
    } else {
      general_ = true;  // a whole pass reads every allocation
    }
    dirty_ = true;
  }
  work_cv_.notify_all();
}

void EnforcerInbox::RecordPodRemoved(const std::string& pod_uid, Clock::time_point now) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tombstones_[pod_uid] = now;
    runtime_pods_.ForgetPod(pod_uid);
    dirty_ = true;
    general_ = true;
  }
  work_cv_.notify_all();
}

void EnforcerInbox::RecordContainerCreatedLocked(const std::string& container_id) {
  dirty_ = true;
  if (index_->count(container_id) != 0 || runtime_pods_.HasContainer(container_id)) {
    if (created_ids_.size() < kMaxQueued) {
      created_ids_.push_back(container_id);
    } else {
      general_ = true;  // a whole pass finds every listed container
    }
    return;
  }
  refresh_pods_ = true;
  if (pending_ids_.size() < kMaxQueued || pending_ids_.count(container_id) != 0) {
    pending_ids_[container_id] = 0;
  }
  // Past the bound the id is not kept for retries: the periodic pod-list refresh and resync
  // still find the container once it is listed.
}

void EnforcerInbox::RecordContainerCreated(const std::string& container_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    RecordContainerCreatedLocked(container_id);
  }
  work_cv_.notify_all();
}

uint64_t EnforcerInbox::RecordContainerStarting(const std::string& container_id) {
  uint64_t ticket = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    RecordContainerCreatedLocked(container_id);
    ticket = RequestWakeupLocked();
  }
  work_cv_.notify_all();
  return ticket;
}

uint64_t EnforcerInbox::RequestWakeupLocked() {
  dirty_ = true;
  return ++wakeups_requested_;
}

uint64_t EnforcerInbox::RequestWakeup() {
  uint64_t ticket = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ticket = RequestWakeupLocked();
  }
  work_cv_.notify_all();
  return ticket;
}

bool EnforcerInbox::Idle() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !dirty_;
}

bool EnforcerInbox::AwaitWakeup(uint64_t ticket, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  const bool woke =
      done_cv_.wait_for(lock, timeout, [&] { return stopping_ || wakeups_done_ >= ticket; });
  return woke && !stopping_;
}

void EnforcerInbox::RuntimePod(pods::PodInfo pod) {
  std::lock_guard<std::mutex> lock(mu_);
  runtime_pods_.PutPod(std::move(pod));
}

void EnforcerInbox::RuntimeContainer(const pods::PodInfo& pod, pods::ContainerInfo container) {
  std::lock_guard<std::mutex> lock(mu_);
  runtime_pods_.PutContainer(pod, std::move(container));
}

void EnforcerInbox::RuntimePodRemoved(const std::string& pod_uid) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    runtime_pods_.ForgetPod(pod_uid);
    refresh_pods_ = true;
    dirty_ = true;
  }
  work_cv_.notify_all();
}

void EnforcerInbox::RuntimeContainerRemoved(const std::string& pod_uid,
                                            const std::string& container_id) {
  std::lock_guard<std::mutex> lock(mu_);
  runtime_pods_.ForgetContainer(pod_uid, container_id);
}

void EnforcerInbox::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  done_cv_.notify_all();
}

bool EnforcerInbox::stopping() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stopping_;
}

InboxWaiting EnforcerInbox::WaitForWork(Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  work_cv_.wait_until(lock, deadline, [this] { return stopping_ || dirty_; });
  return {stopping_, refresh_pods_, general_};
}

void EnforcerInbox::RequestPodRefresh() {
  std::lock_guard<std::mutex> lock(mu_);
  refresh_pods_ = true;
}

InboxEvents EnforcerInbox::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  InboxEvents e;
  e.created.swap(created_ids_);
  e.allocated.swap(allocated_uids_);
  e.refresh_pods = refresh_pods_;
  e.general = general_;
  e.wakeup = wakeups_requested_;
  refresh_pods_ = false;
  general_ = false;
  dirty_ = false;
  return e;
}

void EnforcerInbox::MarkDone(uint64_t wakeup) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    wakeups_done_ = std::max(wakeups_done_, wakeup);
  }
  done_cv_.notify_all();
}

void EnforcerInbox::PublishIndex(std::shared_ptr<const ContainerIndex> index) {
  if (!index) index = std::make_shared<const ContainerIndex>();
  std::lock_guard<std::mutex> lock(mu_);
  index_ = std::move(index);
}

RuntimePods::Merged EnforcerInbox::MergeRuntimePodsInto(std::vector<pods::PodInfo>& pods,
                                                        bool force) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!force && !runtime_pods_.dirty()) return {};
  std::set<std::string> skip;
  for (const auto& [uid, when] : tombstones_) skip.insert(uid);
  return runtime_pods_.MergeInto(pods, skip, force);
}

size_t EnforcerInbox::RetryPending() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = pending_ids_.begin(); it != pending_ids_.end();) {
    if (index_->count(it->first) != 0 || ++it->second > kPendingRetries) {
      it = pending_ids_.erase(it);
    } else {
      ++it;
    }
  }
  return pending_ids_.size();
}

std::set<std::string> EnforcerInbox::Tombstoned() const {
  std::set<std::string> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [uid, when] : tombstones_) out.insert(uid);
  return out;
}

std::set<std::string> EnforcerInbox::ExpireTombstones(const std::set<std::string>& listed,
                                                      bool pods_known, Clock::time_point now) {
  std::set<std::string> live;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = tombstones_.begin(); it != tombstones_.end();) {
    const bool gone = pods_known && listed.count(it->first) == 0;
    if (gone || now - it->second > kTombstoneTtl) {
      it = tombstones_.erase(it);
    } else {
      live.insert(it->first);
      ++it;
    }
  }
  return live;
}

}  // namespace netqos::enforce
