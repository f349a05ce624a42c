// The NRI session against a real containerd with NRI (1.7 or later; a private instance, see
// support/private_containerd.h): registration, and the events of a pod made through CRI with
// the ids, the cgroup path and the order the port relies on. Hidden ([.]) from the discovery of
// this executable's tests because the containerd they use (Debian 12's 1.6) has no NRI; CTest
// runs the [nri] cases through nri_real_runtime.sh with Debian 13's first on PATH. By hand:
//
//   PATH=$(scripts/lib/fetch-containerd.sh):$PATH build/bin/netqos_cri_integration_tests '[nri]'
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "cri_integration/nri_recording_events.h"
#include "support/private_containerd.h"

using netqos::testing::Eventually;
using netqos::testing::PrivateContainerd;
using netqos::testing::RecordingEvents;
using netqos::testing::RunningSession;

TEST_CASE("nri session: a real containerd's pod and container events, cgroup there at start",
          "[.][nri][containerd]") {
  PrivateContainerd ctrd(/*with_nri=*/true);
  INFO("containerd's log:\n" << ctrd.Log());
  REQUIRE(Eventually([&] { return std::filesystem::exists(ctrd.nri_socket()); },
                     std::chrono::seconds(5)));  // none: this containerd has no NRI (1.7+)
  RecordingEvents events;
  netqos::nri_plugin::NriSessionOptions options;
  options.socket_path = ctrd.nri_socket();
  RunningSession running(options, events);
  netqos::nri_plugin::NriSession& session = running.session();
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
