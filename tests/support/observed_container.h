// A started container as the enforcer observes it (pod "ns/pod-<uid>"), for the pure tests of
// ComputeDesiredState and the rules around it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "core/types.h"
#include "enforce/desired_state.h"

namespace netqos::testing {

// A pod's shared metadata (desired_state.h).
inline enforce::PodMetaPtr PodMetaOf(std::string uid, std::string ns, std::string name) {
  return std::make_shared<const enforce::PodMeta>(
      enforce::PodMeta{std::move(uid), std::move(ns), std::move(name)});
}

// Points `c` at an edited copy of its pod's metadata or annotations: the objects themselves are
// const, shared by every container of the pod.
inline void EditPod(enforce::PodMetaPtr& pod, const std::function<void(enforce::PodMeta&)>& edit) {
  enforce::PodMeta copy = *pod;
  edit(copy);
  pod = std::make_shared<const enforce::PodMeta>(std::move(copy));
}
inline void EditAnnotations(enforce::ObservedContainer& c,
                            const std::function<void(core::StringMap&)>& edit) {
  core::StringMap copy = *c.annotations;
  edit(copy);
  c.annotations = std::make_shared<const core::StringMap>(std::move(copy));
}

// A pass result's NIC as a value (nullopt: not allocated), to compare across passes.
inline std::optional<core::NicId> NicOf(const enforce::DesiredContainer& d) {
  return d.nic ? std::optional<core::NicId>(*d.nic) : std::nullopt;
}

inline enforce::ObservedContainer ObservedIn(const std::string& pod_uid, const std::string& name,
                                             uint64_t cgroup_id, core::StringMap annotations = {},
                                             uint64_t pod_cgroup_id = 0) {
  enforce::ObservedContainer c;
  c.pod = PodMetaOf(pod_uid, "ns", "pod-" + pod_uid);
  c.annotations = std::make_shared<const core::StringMap>(std::move(annotations));
  c.container_name = name;
  c.cgroup_id = cgroup_id;
  c.pod_cgroup_id = pod_cgroup_id;
  return c;
}

}  // namespace netqos::testing
