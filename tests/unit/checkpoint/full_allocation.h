// One allocation with every field set (a container index, a role, NUMA nodes, labels and
// annotations that need escaping), for the checkpoint's tests of what is written and read back.
#pragma once

#include "core/types.h"

namespace netqos::checkpoint::testing {

inline core::AllocationInfo FullInfo() {
  core::AllocationInfo info;
  info.pod_uid = "uid-1";
  info.pod_namespace = "ns";
  info.pod_name = "pod";
  info.container_name = "main";
  info.container_type = "MAIN";
  info.container_index = 3;
  info.pod_role = "role";
  info.pod_type = "type";
  info.egress = 5000;
  info.ingress = 4000;
  info.if_name = "eth0";
  info.ns_name = "ns2";
  info.numa_nodes = {0, 1, 3, 5, 6, 7};
  info.labels = {{"katalyst.kubewharf.io/qos_level", "shared_cores"}};
  info.annotations = {{"namespace_type", "host_ns_preferred"}, {"<html>", "a&b"}};
  info.qos_level = "shared_cores";
  info.net_class_id = "42";
  return info;
}

}  // namespace netqos::checkpoint::testing
