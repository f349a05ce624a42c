// Pods behind a CNI as the pure planners of their routed traffic see them (pod_addresses.h,
// pod_veths.h): a listed pod with its addresses, and a classified container of it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/types.h"
#include "enforce/desired_state.h"
#include "pods/pod_list.h"
#include "support/observed_container.h"

namespace netqos::testing {

// Pod "ns/pod-<uid>", running, with `ips` (the node's when `host`).
inline pods::PodInfo RoutedPod(const std::string& uid, std::vector<std::string> ips,
                               bool host = false) {
  pods::PodInfo p;
  p.uid = uid;
  p.ns = "ns";
  p.name = "pod-" + uid;
  p.phase = "Running";
  p.ips = std::move(ips);
  p.host_network = host;
  return p;
}

// Container `name` of pod-<uid>, with a leaf of its own (on `leaf_nics`) when `leaf` is given.
inline enforce::DesiredContainer ClassifiedIn(const std::string& uid, const std::string& name,
                                              std::optional<uint64_t> leaf = std::nullopt,
                                              std::vector<core::NicId> leaf_nics = {}) {
  enforce::DesiredContainer d;
  d.pod = PodMetaOf(uid, "ns", "pod-" + uid);
  d.container_name = name;
  d.leaf_key = leaf;
  d.leaf_nics = std::make_shared<const std::vector<core::NicId>>(std::move(leaf_nics));
  return d;
}

}  // namespace netqos::testing
