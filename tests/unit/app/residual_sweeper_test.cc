// ResidualSweeper: without enforcement, allocations of pods the pod source stopped listing are
// still removed from the state after 5 minutes (as Katalyst HEAD's residual state cleanup).
#include "app/residual_sweeper.h"

#include <catch2/catch.hpp>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace netqos::app {
namespace {

using std::chrono::minutes;

struct FakeNode {
  std::set<std::string> allocated;
  std::vector<std::string> listed;
  std::optional<Status> pod_list_error;
  std::vector<std::string> removed;

  ResidualSweeper::Ports Ports() {
    ResidualSweeper::Ports p;
    p.read_pods = [this](bool force) -> Result<std::optional<std::vector<pods::PodInfo>>> {
      CHECK(force);
      if (pod_list_error) return *pod_list_error;
      std::vector<pods::PodInfo> pods;
      for (const auto& uid : listed) {
        pods::PodInfo pod;
        pod.uid = uid;
        pods.push_back(std::move(pod));
      }
      return std::optional<std::vector<pods::PodInfo>>(std::move(pods));
    };
    p.allocated = [this] { return allocated; };
    p.remove_pod = [this](const std::string& uid) {
      removed.push_back(uid);
      allocated.erase(uid);
      return Status::Ok();
    };
    return p;
  }
};

TEST_CASE("residual sweeper: an unlisted pod's allocations are removed after 5 minutes") {
  FakeNode node;
  node.allocated = {"gone", "alive"};
  node.listed = {"alive"};
  ResidualSweeper sweeper({}, node.Ports());
  const auto t0 = ResidualSweeper::Clock::time_point{} + minutes(100);
  CHECK(sweeper.SweepOnce(t0).empty());
  CHECK(sweeper.SweepOnce(t0 + std::chrono::seconds(270)).empty());
  CHECK(sweeper.SweepOnce(t0 + minutes(5)) == std::vector<std::string>{"gone"});
  CHECK(node.removed == std::vector<std::string>{"gone"});
  CHECK(sweeper.SweepOnce(t0 + minutes(10)).empty());
  CHECK(node.allocated == std::set<std::string>{"alive"});
}

TEST_CASE("residual sweeper: a pod list that cannot be read judges nothing residual") {
  FakeNode node;
  node.allocated = {"a"};
  node.pod_list_error = Unavailable("kubelet down");
  ResidualSweeper sweeper({}, node.Ports());
  const auto t0 = ResidualSweeper::Clock::time_point{} + minutes(100);
  for (int i = 0; i <= 20; ++i) CHECK(sweeper.SweepOnce(t0 + minutes(i)).empty());
  // Readable again (without the pod): the grace period starts only now.
  node.pod_list_error.reset();
  CHECK(sweeper.SweepOnce(t0 + minutes(21)).empty());
  CHECK(sweeper.SweepOnce(t0 + minutes(25)).empty());
  CHECK(sweeper.SweepOnce(t0 + minutes(26)) == std::vector<std::string>{"a"});
}

TEST_CASE("residual sweeper: started, it sweeps at once and stops when destroyed") {
  std::mutex mu;
  std::set<std::string> allocated = {"a"};
  ResidualSweeper::Ports p;
  p.read_pods = [](bool) -> Result<std::optional<std::vector<pods::PodInfo>>> {
    return std::optional<std::vector<pods::PodInfo>>(std::vector<pods::PodInfo>{});
  };
  p.allocated = [&] {
    std::lock_guard lk(mu);
    return allocated;
  };
  p.remove_pod = [&](const std::string& uid) {
    std::lock_guard lk(mu);
    allocated.erase(uid);
    return Status::Ok();
  };
  ResidualSweeper::Options o;
  o.after = std::chrono::milliseconds(0);
  o.interval = std::chrono::milliseconds(10);
  {
    ResidualSweeper sweeper(o, p);
    sweeper.Start();
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard lk(mu);
        if (allocated.empty()) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }  // joins the thread
  std::lock_guard lk(mu);
  CHECK(allocated.empty());
}

}  // namespace
}  // namespace netqos::app
