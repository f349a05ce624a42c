// The enforcer's cgroup-events port over inotify, on a plain directory tree in a temp dir (inotify
// works on any directory; no cgroupfs, no privilege): what it reports, and nothing after Stop.
#include "enforce/kernel/inotify_cgroup_watch.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/temp_dir.h"

namespace {

using namespace std::chrono_literals;

struct Seen {
  std::vector<std::string> Created() const {
    std::lock_guard<std::mutex> l(mu);
    return created;
  }
  std::vector<std::string> Removed() const {
    std::lock_guard<std::mutex> l(mu);
    return removed;
  }
  netqos::enforce::CgroupEventHandlers Handlers() {
    netqos::enforce::CgroupEventHandlers h;
    h.on_created = [this](const std::string& path) {
      std::lock_guard<std::mutex> l(mu);
      created.push_back(path);
    };
    h.on_removed = [this](const std::string& path) {
      std::lock_guard<std::mutex> l(mu);
      removed.push_back(path);
    };
    return h;
  }
  mutable std::mutex mu;
  std::vector<std::string> created;
  std::vector<std::string> removed;
};

// The inotify thread reports on its own time: polled, bounded.
template <typename Pred>
bool Eventually(Pred pred) {
  for (int i = 0; i < 500; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

}  // namespace

TEST_CASE("inotify cgroup watch: directories made and removed under the root are reported") {
  netqos::testing::TempDir dir;
  const std::string root = dir.file("kubepods");
  REQUIRE(::mkdir(root.c_str(), 0755) == 0);
  REQUIRE(::mkdir((root + "/existing").c_str(), 0755) == 0);
  Seen seen;
  auto watch = netqos::enforce::WatchCgroupsWithInotify(root, seen.Handlers());
  REQUIRE(watch.ok());
  const std::string pod = root + "/pod1";
  REQUIRE(::mkdir(pod.c_str(), 0755) == 0);
  REQUIRE(::mkdir((pod + "/c1").c_str(), 0755) == 0);
  CHECK(Eventually([&] { return seen.Created().size() >= 2; }));
  // Parents first; what existed before the watch is not reported (the first pass lists it).
  CHECK(seen.Created() == std::vector<std::string>{pod, pod + "/c1"});
  REQUIRE(::rmdir((pod + "/c1").c_str()) == 0);
  CHECK(Eventually([&] { return seen.Removed() == std::vector<std::string>{pod + "/c1"}; }));

  (*watch)->Stop();
  REQUIRE(::mkdir((root + "/pod2").c_str(), 0755) == 0);
  std::this_thread::sleep_for(100ms);  // what a running watch takes to report, with margin
  CHECK(seen.Created().size() == 2);
}
