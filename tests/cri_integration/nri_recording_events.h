// An NRI events port for the real-runtime tests: records each call as a line the tests compare
// ("Synchronize pod <uid> container <name>", "StartContainer <uid> <name> cgroup exists"), and
// can hold one event type for a while, as a slow netqos would.
#pragma once

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "nri_plugin/nri_events.h"
#include "nri_plugin/nri_session.h"

namespace netqos::testing {

inline const char* const kCgroupRoots[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified",
                                           "/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory"};

// Whether the container's cgroup exists in any hierarchy (unified or a v1 controller's).
inline bool CgroupExists(const std::string& relative) {
  if (relative.empty()) return false;
  for (const char* root : kCgroupRoots) {
    struct stat st {};
    if (::stat((std::string(root) + relative).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      return true;
    }
  }
  return false;
}

// Whether a process runs in the cgroup (in any hierarchy): the container started.
inline bool CgroupHasProcess(const std::string& relative) {
  if (relative.empty()) return false;
  for (const char* root : kCgroupRoots) {
    std::ifstream procs(std::string(root) + relative + "/cgroup.procs");
    std::string pid;
    if (procs >> pid) return true;
  }
  return false;
}

template <typename Pred>
bool Eventually(Pred pred, std::chrono::milliseconds bound = std::chrono::seconds(15)) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

class RecordingEvents : public nri_plugin::NriEvents {
 public:
  ~RecordingEvents() override { Release(); }

  void OnSynchronize(const std::vector<nri_plugin::NriPod>& pods,
                     const std::vector<nri_plugin::NriContainer>& containers) override {
    std::string line = "Synchronize";
    for (const auto& p : pods) line += " pod " + p.uid;
    for (const auto& c : containers) {
      line += " container " + c.name + " cgroup " +
              (CgroupExists(c.cgroups_path) ? "exists" : "missing");
    }
    std::lock_guard lock(mu_);
    log_.push_back(std::move(line));
    for (const auto& c : containers) ids_.push_back(c.id);
  }
  void OnPodEvent(nri_plugin::PodEvent event, const nri_plugin::NriPod& pod) override {
    std::lock_guard lock(mu_);
    log_.push_back(std::string(nri_plugin::PodEventName(event)) + " " + pod.uid);
  }
  void OnContainerEvent(nri_plugin::ContainerEvent event, const nri_plugin::NriPod& pod,
                        const nri_plugin::NriContainer& container) override {
    std::unique_lock lock(mu_);
    log_.push_back(std::string(nri_plugin::ContainerEventName(event)) + " " + pod.uid + " " +
                   container.name + " cgroup " +
                   (CgroupExists(container.cgroups_path) ? "exists" : "missing"));
    ids_.push_back(container.id);
    cgroups_path_ = container.cgroups_path;
    if (hold_ && *hold_ == event) {
      hold_.reset();
      cv_.wait_for(lock, hold_for_, [this] { return released_; });
      ++held_;
    }
  }

  // The next `event` makes its handler take `duration` (or until Release()).
  void HoldNext(nri_plugin::ContainerEvent event, std::chrono::milliseconds duration) {
    std::lock_guard lock(mu_);
    hold_ = event;
    hold_for_ = duration;
  }
  void Release() {
    {
      std::lock_guard lock(mu_);
      released_ = true;
    }
    cv_.notify_all();
  }

  std::vector<std::string> log() const {
    std::lock_guard lock(mu_);
    return log_;
  }
  std::vector<std::string> ids() const {
    std::lock_guard lock(mu_);
    return ids_;
  }
  // The cgroup of the last container event's container.
  std::string cgroups_path() const {
    std::lock_guard lock(mu_);
    return cgroups_path_;
  }
  int held() const {
    std::lock_guard lock(mu_);
    return held_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> log_;
  std::vector<std::string> ids_;
  std::string cgroups_path_;
  std::optional<nri_plugin::ContainerEvent> hold_;
  std::chrono::milliseconds hold_for_{0};
  bool released_ = false;
  int held_ = 0;
};

// An NriSession running on a thread of its own for the scope: stopped and joined on exit.
class RunningSession {
 public:
  RunningSession(nri_plugin::NriSessionOptions options, nri_plugin::NriEvents& events)
      : session_(std::move(options), events), runner_([this] { session_.Run(); }) {}
  ~RunningSession() {
    session_.Stop();
    runner_.join();
  }
  RunningSession(const RunningSession&) = delete;
  RunningSession& operator=(const RunningSession&) = delete;

  nri_plugin::NriSession& session() { return session_; }
  const nri_plugin::NriSessionStats& stats() const { return session_.stats(); }

 private:
  nri_plugin::NriSession session_;
  std::thread runner_;
};

}  // namespace netqos::testing
