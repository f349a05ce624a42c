// The session against a real container runtime, by hand: hidden from the suite ([.]) because it
// needs a runtime with NRI enabled, whose NRI socket NETQOS_NRI_SOCKET names. docs/nri.md says
// how to run a private containerd 1.7 for it.
//
//   NETQOS_NRI_SOCKET=/tmp/ctd/nri.sock build/bin/netqos_nri_tests '[real_runtime]'
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nri_plugin/nri_events.h"
#include "nri_plugin/nri_session.h"

namespace {

using netqos::nri_plugin::NriContainer;
using netqos::nri_plugin::NriPod;

class CountingEvents : public netqos::nri_plugin::NriEvents {
 public:
  void OnSynchronize(const std::vector<NriPod>& pods,
                     const std::vector<NriContainer>& containers) override {
    std::lock_guard lock(mu);
    ++synchronized;
    pods_seen = pods.size();
    containers_seen = containers.size();
  }
  void OnPodEvent(netqos::nri_plugin::PodEvent, const NriPod&) override {}
  void OnContainerEvent(netqos::nri_plugin::ContainerEvent, const NriPod&,
                        const NriContainer&) override {}

  std::mutex mu;
  int synchronized = 0;
  size_t pods_seen = 0;
  size_t containers_seen = 0;
};

}  // namespace

TEST_CASE("nri session: registers with the real runtime at NETQOS_NRI_SOCKET", "[.real_runtime]") {
  const char* socket = std::getenv("NETQOS_NRI_SOCKET");
  INFO("NETQOS_NRI_SOCKET names the runtime's NRI socket");
  REQUIRE(socket != nullptr);
  CountingEvents events;
  netqos::nri_plugin::NriSessionOptions options;
  options.socket_path = socket;
  netqos::nri_plugin::NriSession session(options, events);
  std::thread runner([&session] { session.Run(); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    {
      std::lock_guard lock(events.mu);
      if (events.synchronized > 0) break;
    }
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  session.Stop();
  runner.join();
  INFO("last error: " << session.last_error());
  CHECK(session.stats().configured == 1);
  CHECK(events.synchronized == 1);
  CHECK(session.stats().dropped_connections == 0);
  CHECK(session.stats().invalid_events == 0);
}
