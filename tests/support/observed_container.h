// A started container as the enforcer observes it (pod "ns/pod-<uid>"), for the pure tests of
// ComputeDesiredState and the rules around it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "core/types.h"
#include "enforce/desired_state.h"

namespace netqos::testing {

inline enforce::ObservedContainer ObservedIn(const std::string& pod_uid, const std::string& name,
                                             uint64_t cgroup_id, core::StringMap annotations = {},
                                             uint64_t pod_cgroup_id = 0) {
  enforce::ObservedContainer c;
  c.pod_uid = pod_uid;
  c.pod_namespace = "ns";
  c.pod_name = "pod-" + pod_uid;
  c.container_name = name;
  c.pod_annotations = std::move(annotations);
  c.cgroup_id = cgroup_id;
  c.pod_cgroup_id = pod_cgroup_id;
  return c;
}

}  // namespace netqos::testing
