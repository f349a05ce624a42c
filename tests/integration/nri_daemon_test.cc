// netqosd with --nri-socket against a private containerd with NRI (support/private_containerd.h):
// when containerd's StartContainer returns, the container's class is in the pinned map already,
// and that still holds after containerd restarts and after netqosd restarts. Hidden ([.]):
// Debian 12's containerd (1.6) has no NRI; CTest runs it with Debian 13's
// (tests/cri_integration/nri_real_runtime.sh).
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "support/daemon_fixture.h"
#include "support/private_containerd.h"

using namespace netqos::testing;
using namespace std::chrono_literals;

namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

template <typename Pred>
bool WaitFor(Pred pred, std::chrono::seconds bound = 30s) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

}  // namespace

TEST_CASE("daemon with --nri-socket has a container's class in place when containerd starts it",
          "[.][nri][enforcement][cri]") {
  DaemonFixture env({.tag = "nri", .subnet = 243, .shape_nics = false});
  PrivateContainerd ctrd(/*with_nri=*/true);
  REQUIRE(WaitFor([&] { return std::filesystem::exists(ctrd.nri_socket()); }, 5s));
  const std::vector<std::string> flags = {"--pod-source=cri", "--cri-socket=" + ctrd.endpoint(),
                                          "--nri-socket=" + ctrd.nri_socket(), "--log-level=debug"};
  env.StartDaemon(flags);
  const std::string registered = "nri: registered with containerd";
  REQUIRE(WaitFor([&] { return Count(env.Log(), registered) == 1; }));

  const std::string uid = FakePodUid(1);
  // The pod under the fixture's cgroup root (an --addition-cgroup-paths root of the daemon).
  const std::string mount = env.CgroupRoot().substr(0, env.CgroupRoot().rfind('/'));
  const std::string root = env.CgroupRoot().substr(mount.size());
  PrivateContainerd::Pod pod{uid,
                             "shop",
                             "web-0",
                             "",
                             true,
                             {{"katalyst.kubewharf.io/qos_level", "shared_cores"}},
                             root + "/pod" + uid};
  const std::string sandbox = ctrd.RunSandbox(pod);
  FakePod p;
  p.uid = uid;
  p.name = "web-0";
  p.ns = "shop";
  p.containers = {{"app", ""}};

  // As the kubelet: Allocate, then the runtime creates and starts the container. No wait after
  // StartContainer: the runtime waited for netqosd's reply, which came once the class was in.
  auto start = [&](const std::string& name) {
    env.Allocate(p, 100, name);
    const std::string id = ctrd.StartContainer(sandbox, name);
    const std::string cg = env.CgroupRoot() + "/pod" + uid + "/" + id;
    INFO(name << " " << id);
    REQUIRE(std::filesystem::is_directory(cg));
    CHECK(env.ClassOf(cg).has_value());
    CHECK(env.Log().find("nri: class in place before start container=" + id) != std::string::npos);
    CHECK(env.Log().find("nri: container starts before its class was confirmed container=" + id) ==
          std::string::npos);
    return cg;
  };
  const std::string app = start("app");
  INFO(env.Log());

  // containerd restarts: netqosd registers again, and the next container is held as well.
  ctrd.Restart();
  REQUIRE(WaitFor([&] { return Count(env.Log(), registered) == 2; }));
  start("sidecar");

  // netqosd restarts: its new session is told what runs, and holds the next container too.
  REQUIRE(env.StopDaemon(SIGTERM) == 0);
  env.StartDaemon(flags);
  REQUIRE(WaitFor([&] { return Count(env.Log(), registered) == 3; }));
  CHECK(WaitFor([&] {
    return env.Log().find("nri: the runtime has pods=1 containers=2") != std::string::npos;
  }));
  CHECK(env.ClassOf(app).has_value());
  start("late");
}
