// Pods and containers as the container runtime reports them (NRI), for the tests of what the
// enforcer keeps of them (runtime_pods.h, enforcer_inbox.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cgroup/pod_list.h"

namespace netqos::enforce::testing {

// Pod `uid` of namespace "team", named "pod-<uid>", with `ips`.
inline cgroup::PodInfo RuntimePodOf(const std::string& uid, std::vector<std::string> ips = {}) {
  cgroup::PodInfo p;
  p.uid = uid;
  p.ns = "team";
  p.name = "pod-" + uid;
  p.ips = std::move(ips);
  return p;
}

inline cgroup::ContainerInfo RuntimeContainerOf(const std::string& name, const std::string& id) {
  cgroup::ContainerInfo c;
  c.name = name;
  c.id = id;
  return c;
}

}  // namespace netqos::enforce::testing
