// ResidualSweeper: Katalyst HEAD's residual state cleanup when netqos does not enforce
// (--enforcement=none, or enforcement failed to start). Every interval (30 s) it reads the pod
// source and removes from the state the allocations of pods the source has not listed for 5
// minutes. With enforcement running, the enforcer does the same on its full passes; without it,
// a pod whose RemovePod the kubelet never sent would hold its bandwidth forever.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "enforce/residual_pods.h"
#include "pods/pod_list.h"

namespace netqos::app {

class ResidualSweeper {
 public:
  using Clock = enforce::ResidualPods::Clock;
  struct Ports {
    // The node's pods (pods::PodSource::Read with force).
    std::function<Result<std::optional<std::vector<pods::PodInfo>>>(bool force)> read_pods;
    std::function<std::set<std::string>()> allocated;  // uids of the pods holding allocations
    std::function<Status(const std::string& uid)> remove_pod;
  };
  struct Options {
    std::chrono::milliseconds interval{std::chrono::seconds(30)};
    std::chrono::milliseconds after{std::chrono::minutes(5)};
  };

  ResidualSweeper(Options options, Ports ports);
  ~ResidualSweeper();  // stops the thread
  ResidualSweeper(const ResidualSweeper&) = delete;
  ResidualSweeper& operator=(const ResidualSweeper&) = delete;

  // Runs SweepOnce now and then every interval on a thread of its own.
  void Start();
  // One pass: the uids removed from the state. A pod list that cannot be read judges nothing
  // residual (logged when its error changes). Called by the thread; public for tests.
  std::vector<std::string> SweepOnce(Clock::time_point now);

 private:
  Options options_;
  Ports ports_;
  enforce::ResidualPods residual_;
  std::string last_error_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace netqos::app
