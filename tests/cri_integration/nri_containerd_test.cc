// The NRI session against a real containerd with NRI (1.7 or later; a private instance, see
// support/private_containerd.h): registration, and the events of a pod made through CRI with
// the ids, the cgroup path and the order the port relies on. Hidden ([.]) because the
// containerd this suite runs by default (Debian 12's 1.6) has no NRI; run it with a newer one
// first on PATH:
//
//   PATH=/path/to/containerd-1.7/bin:$PATH build/bin/netqos_cri_integration_tests '[nri]'
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nri_plugin/nri_events.h"
#include "nri_plugin/nri_session.h"
#include "support/private_containerd.h"

namespace {

using netqos::nri_plugin::ContainerEvent;
using netqos::nri_plugin::NriContainer;
using netqos::nri_plugin::NriPod;
using netqos::nri_plugin::PodEvent;
using netqos::testing::PrivateContainerd;

// Whether the container's cgroup exists in any hierarchy (unified or a v1 controller's).
bool CgroupExists(const std::string& relative) {
  if (relative.empty()) return false;
  for (const char* root : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/pids",
                           "/sys/fs/cgroup/memory"}) {
    struct stat st {};
    if (::stat((std::string(root) + relative).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      return true;
    }
  }
  return false;
}

class RecordingEvents : public netqos::nri_plugin::NriEvents {
 public:
  void OnSynchronize(const std::vector<NriPod>&, const std::vector<NriContainer>&) override {
    Record("Synchronize");
  }
  void OnPodEvent(PodEvent event, const NriPod& pod) override {
    Record(std::string(netqos::nri_plugin::PodEventName(event)) + " " + pod.uid);
  }
  void OnContainerEvent(ContainerEvent event, const NriPod& pod,
                        const NriContainer& container) override {
    Record(std::string(netqos::nri_plugin::ContainerEventName(event)) + " " + pod.uid + " " +
           container.name + " cgroup " +
           (CgroupExists(container.cgroups_path) ? "exists" : "missing"));
    std::lock_guard lock(mu_);
    ids_.push_back(container.id);
  }

  std::vector<std::string> log() const {
    std::lock_guard lock(mu_);
    return log_;
  }
  std::vector<std::string> ids() const {
    std::lock_guard lock(mu_);
    return ids_;
  }

 private:
  void Record(std::string line) {
    std::lock_guard lock(mu_);
    log_.push_back(std::move(line));
  }
  mutable std::mutex mu_;
  std::vector<std::string> log_;
  std::vector<std::string> ids_;
};

template <typename Pred>
bool Eventually(Pred pred, std::chrono::seconds bound = std::chrono::seconds(15)) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace

TEST_CASE("nri session: a real containerd's pod and container events, cgroup there at start",
          "[.][nri][containerd]") {
  PrivateContainerd ctrd(/*with_nri=*/true);
  INFO("containerd's log:\n" << ctrd.Log());
  REQUIRE(Eventually([&] { return std::filesystem::exists(ctrd.nri_socket()); },
                     std::chrono::seconds(5)));  // none: this containerd has no NRI (1.7+)
  RecordingEvents events;
  netqos::nri_plugin::NriSessionOptions options;
  options.socket_path = ctrd.nri_socket();
  netqos::nri_plugin::NriSession session(options, events);
  std::thread runner([&session] { session.Run(); });
  struct Join {
    netqos::nri_plugin::NriSession& s;
    std::thread& t;
    ~Join() {
      s.Stop();
      t.join();
    }
  } join{session, runner};
  REQUIRE(Eventually([&] { return !events.log().empty(); }));  // Synchronize

  PrivateContainerd::Pod pod{
      "7c3e4f50-6172-4c8d-9e0f-1a2b3c4d5e6f", "default", "nri-web", "", true, {}, ""};
  const std::string sandbox = ctrd.RunSandbox(pod);
  const std::string container = ctrd.StartContainer(sandbox, "app");
  const std::vector<std::string> want = {
      "Synchronize",
      "RunPodSandbox " + pod.uid,
      // At CreateContainer the runtime has not created the container's cgroup yet; at
      // StartContainer it has (runc create ran), and the process has not started.
      "CreateContainer " + pod.uid + " app cgroup missing",
      "StartContainer " + pod.uid + " app cgroup exists",
  };
  CHECK(Eventually([&] { return events.log().size() >= want.size(); }));
  CHECK(events.log() == want);
  CHECK(events.ids() == std::vector<std::string>{container, container});
  INFO("last error: " << session.last_error());
  CHECK(session.stats().configured == 1);
  CHECK(session.stats().invalid_events == 0);
  CHECK(session.stats().late_replies == 0);
  CHECK(session.stats().dropped_connections == 0);
}
