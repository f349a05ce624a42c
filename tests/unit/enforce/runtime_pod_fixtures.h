// Pods and containers as the container runtime reports them (NRI), for the tests of what the
// enforcer keeps of them (runtime_pods.h, enforcer_inbox.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "pods/pod_list.h"

namespace netqos::enforce::testing {

// Pod `uid` of namespace "team", named "pod-<uid>", with `ips`.
inline pods::PodInfo RuntimePodOf(const std::string& uid, std::vector<std::string> ips = {}) {
  pods::PodInfo p;
  p.uid = uid;
  p.ns = "team";
  p.name = "pod-" + uid;
  p.ips = std::move(ips);
  return p;
}

inline pods::ContainerInfo RuntimeContainerOf(const std::string& name, const std::string& id) {
  pods::ContainerInfo c;
  c.name = name;
  c.id = id;
  return c;
}

}  // namespace netqos::enforce::testing
