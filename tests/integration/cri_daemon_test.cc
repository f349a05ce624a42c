// netqosd with --pod-source=cri against a private containerd (support/private_containerd.h): the
// pod list comes from the runtime's socket alone, and the container runc started is classified.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "integration/fixture_pod.h"
#include "support/daemon_fixture.h"
#include "support/private_containerd.h"

using namespace netqos::testing;
using namespace std::chrono_literals;

TEST_CASE("daemon with --pod-source=cri classifies a container that containerd started",
          "[enforcement][cri]") {
  DaemonFixture env({.tag = "cri", .subnet = 242, .shape_nics = false});
  PrivateContainerd ctrd;
  const std::string uid = FakePodUid(1);
  const PrivateContainerd::Pod pod = FixtureHostPod(env, uid, "web-0");
  const std::string sandbox = ctrd.RunSandbox(pod);
  const std::string app = ctrd.StartContainer(sandbox, "app");
  const std::string cg = env.CgroupRoot() + "/pod" + uid + "/" + app;
  REQUIRE(std::filesystem::is_directory(cg));

  env.StartDaemon({"--pod-source=cri", "--cri-socket=" + ctrd.endpoint()});
  FakePod p;
  p.uid = uid;
  p.name = "web-0";
  p.ns = "shop";
  p.containers = {{"app", app}};
  env.Allocate(p, 100);
  // No NIC is shaped (.shape_nics = false), so the entry has no leaf: wait for the entry itself,
  // bounded (the pod source is read at least every 5 s).
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  while (!env.ClassOf(cg) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  INFO(env.Log());
  REQUIRE(env.ClassOf(cg).has_value());
  CHECK(env.Log().find("pods=cri:" + ctrd.endpoint()) != std::string::npos);
}
