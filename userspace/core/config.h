// Policy configuration: the values Katalyst's flags set (docs/operations.md). Filled by the app
// from the command line; the core only reads it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/constants.h"
#include "core/state_size.h"
#include "core/types.h"

namespace netqos::core {

struct QosConfig {
  // Extra selector pairs per QoS level (--pod-annotation-qos-level-<level>-selector k=v,...).
  // The default selector {katalyst.kubewharf.io/qos_level: <level>} is always present.
  std::map<std::string, StringMap> extra_selectors;
  // --pod-annotation-qos-enhancements default=expanded: expanded keys accepted for an
  // enhancement annotation; the default key wins when both are present.
  StringMap enhancement_aliases;
  // --qos-enhancement-default-values: flattened keys filled in when absent.
  StringMap enhancement_defaults;
  // --pod-annotation-kept-keys / --pod-label-kept-keys (Katalyst HEAD): kept verbatim. The
  // annotation flag adds to HEAD's defaults, as Katalyst's does.
  std::vector<std::string> annotation_kept_keys = {kPodAggregatedRequestsKey,
                                                   kInplaceUpdateResizingKey};
  std::vector<std::string> label_kept_keys;
};

struct AllocationAnnotationKeys {
  std::string ipv4 = kDefaultIpv4AnnotationKey;
  std::string ipv6 = kDefaultIpv6AnnotationKey;
  std::string netns_path = kDefaultNetnsPathAnnotationKey;
  std::string nic_name = kDefaultNicNameAnnotationKey;
  std::string net_class_id = kDefaultNetClassIdAnnotationKey;
  std::string bandwidth = kDefaultBandwidthAnnotationKey;
};

// Which namespaces may declare implicit bandwidth (Katalyst HEAD's quantity-from-qrm-declaration:
// the declared bandwidth is recorded, nothing is reserved), and up to how many Mbit/s: the tenant
// policy's (--tenant-policy-file). A declaration it does not allow is reserved as an explicit
// request. By default no namespace may declare.
struct ImplicitBandwidthGrants {
  uint32_t default_max_mbps = 0;
  std::map<std::string, uint32_t> max_mbps_by_namespace;
  // Whether a pod of `pod_namespace` may declare `mbps` without reserving them.
  bool Allows(const std::string& pod_namespace, uint32_t mbps) const {
    auto it = max_mbps_by_namespace.find(pod_namespace);
    const uint32_t max = it == max_mbps_by_namespace.end() ? default_max_mbps : it->second;
    return max != 0 && mbps <= max;
  }
  bool operator==(const ImplicitBandwidthGrants&) const = default;
};

struct PolicyConfig {
  float egress_capacity_rate = 0.94f;
  float ingress_capacity_rate = 0.9f;
  uint32_t reserved_bandwidth = 0;  // Mbps, on the first NIC (sorted by name, then netns)
  // QoS level -> net class id. Katalyst's flags default every level to 0.
  std::map<std::string, uint32_t> qos_class_ids = {
      {kReclaimedCores, 0}, {kSharedCores, 0}, {kDedicatedCores, 0}, {kSystemCores, 0}};
  std::string pod_net_class_annotation_key = kDefaultNetClassAnnotationKey;
  AllocationAnnotationKeys annotation_keys;
  QosConfig qos;
  // The "ip" NIC health checker: a NIC without an IP address takes no new allocations.
  bool require_ip_address = true;
  // Also offer each NIC's own NUMA node as a hint, and take a NIC whose own node is the hint as
  // an exact match: the kubelet's single-numa-node topology policy admits single-node hints
  // only, and Katalyst's are whole sockets. Off by default: under the other policies a narrower
  // network hint narrows where the kubelet places CPUs and memory.
  bool numa_node_hints = false;
  ImplicitBandwidthGrants implicit_grants;
  // Bounds on what the tenant-written pod metadata may make the checkpoint hold (state_size.h):
  // a request whose kept labels and annotations pass the first is refused, and so is a new or
  // grown entry that would take the pod entries past the second.
  size_t max_pod_metadata_bytes = kDefaultPodMetadataBytes;
  size_t max_state_bytes = kMaxStateBytes;
};

}  // namespace netqos::core
