// A pod for the private containerd (support/private_containerd.h) that the daemon fixture's
// netqosd finds: host network, shared_cores, and its cgroup under the fixture's own cgroup root
// (one of the daemon's --addition-cgroup-paths roots), relative to the cgroup mount as CRI's
// cgroup parent wants it.
#pragma once

#include <string>

#include "support/daemon_fixture.h"
#include "support/private_containerd.h"

namespace netqos::testing {

inline PrivateContainerd::Pod FixtureHostPod(const DaemonFixture& env, const std::string& uid,
                                             const std::string& name) {
  const std::string mount = env.CgroupRoot().substr(0, env.CgroupRoot().rfind('/'));
  const std::string root = env.CgroupRoot().substr(mount.size());
  return {uid,
          "shop",
          name,
          "",
          /*host_network=*/true,
          {{"katalyst.kubewharf.io/qos_level", "shared_cores"}},
          root + "/pod" + uid};
}

// The same pod as the kubelet would list it (for Allocate), with one container not started yet.
inline FakePod FakePodOf(const PrivateContainerd::Pod& pod, const std::string& container) {
  FakePod p;
  p.uid = pod.uid;
  p.name = pod.name;
  p.ns = pod.ns;
  p.containers = {{container, ""}};
  return p;
}

}  // namespace netqos::testing
