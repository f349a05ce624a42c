// Names shared with Katalyst and the kubelet: resource name, annotation keys, QoS levels.
// Changing any of these breaks drop-in compatibility (see docs/compatibility.md).
// "Katalyst HEAD", here and in every comment and page of this repository, is katalyst-core at
// commit d8c28ea1549b (2026-04-29); "v0.5.3" is the baseline release.
#pragma once

namespace netqos::core {

inline constexpr char kResourceName[] = "resource.katalyst.kubewharf.io/net_bandwidth";
inline constexpr char kPluginName[] = "qrm_network_plugin_static";
inline constexpr char kPolicyName[] = "static";
inline constexpr char kSocketFileName[] = "qrm_network_plugin_static.sock";
inline constexpr char kCheckpointFileName[] = "network_plugin_state";

// QoS levels and the annotation that selects them.
inline constexpr char kQosLevelKey[] = "katalyst.kubewharf.io/qos_level";
inline constexpr char kReclaimedCores[] = "reclaimed_cores";
inline constexpr char kSharedCores[] = "shared_cores";
inline constexpr char kDedicatedCores[] = "dedicated_cores";
inline constexpr char kSystemCores[] = "system_cores";

// QoS enhancement annotations (JSON objects of string -> string), flattened into the request.
inline constexpr char kCpuEnhancementKey[] = "katalyst.kubewharf.io/cpu_enhancement";
inline constexpr char kMemoryEnhancementKey[] = "katalyst.kubewharf.io/memory_enhancement";
inline constexpr char kNetworkEnhancementKey[] = "katalyst.kubewharf.io/network_enhancement";

// Flattened network enhancement keys and their values.
inline constexpr char kNamespaceTypeKey[] = "namespace_type";
inline constexpr char kTopologyAffinityRestrictedKey[] = "topology_affinity_restricted";
inline constexpr char kHostNs[] = "host_ns";
inline constexpr char kHostNsPreferred[] = "host_ns_preferred";
inline constexpr char kAntiHostNs[] = "anti_host_ns";
inline constexpr char kAntiHostNsPreferred[] = "anti_host_ns_preferred";

// Pod-level net class id (default of --network-resource-plugin-net-class-annotation-key).
inline constexpr char kDefaultNetClassAnnotationKey[] = "katalyst.kubewharf.io/net_class_id";

// TopologyAwareQuantity annotations and type.
inline constexpr char kResourceIdentifierKey[] = "katalyst.kubewharf.io/resource_identifier";
inline constexpr char kNetnsNameKey[] = "katalyst.kubewharf.io/netns_name";
inline constexpr char kNicTopologyType[] = "NIC";
inline constexpr int kTopologyLevelSocket = 1;

// Default allocation annotation keys (their flags: docs/operations.md).
inline constexpr char kDefaultIpv4AnnotationKey[] = "qrm.katalyst.kubewharf.io/inet_addr";
inline constexpr char kDefaultIpv6AnnotationKey[] = "qrm.katalyst.kubewharf.io/inet_addr_ipv6";
inline constexpr char kDefaultNetnsPathAnnotationKey[] = "qrm.katalyst.kubewharf.io/netns_path";
inline constexpr char kDefaultNicNameAnnotationKey[] = "qrm.katalyst.kubewharf.io/nic_name";
inline constexpr char kDefaultNetClassIdAnnotationKey[] = "qrm.katalyst.kubewharf.io/netcls_id";
inline constexpr char kDefaultBandwidthAnnotationKey[] = "qrm.katalyst.kubewharf.io/net_bandwidth";

// Pod annotations Katalyst HEAD keeps in every request and its state without any
// --pod-annotation-kept-keys (the flag adds to them): the pod's aggregated requests and the
// in-place resize marker.
inline constexpr char kPodAggregatedRequestsKey[] = "pod.kubernetes.io/pod-aggregated-requests";
inline constexpr char kInplaceUpdateResizingKey[] = "pod.kubernetes.io/inplace-update-resizing";

// Implicit bandwidth (Katalyst HEAD): a pod annotated kQuantityFromQrmDeclarationKey="true"
// declares its bandwidth without reserving it; the declared Mbps are recorded in the allocation's
// state annotations under kNetBandwidthImplicitKey (and only netqos writes that key).
inline constexpr char kQuantityFromQrmDeclarationKey[] =
    "qrm.katalyst.kubewharf.io/quantity-from-qrm-declaration";
inline constexpr char kNetBandwidthImplicitKey[] =
    "resource.katalyst.kubewharf.io/net_bandwidth_implicit";

// Pod annotation Katalyst HEAD reads only to tag its allocation failure metric (whether the
// request re-allocates a running pod); netqos does the same (docs/metrics.md).
inline constexpr char kResourceReallocationKey[] =
    "qrm.katalyst.kubewharf.io/resource-reallocation";

// Container name under which a pod-level (AllocateForPod) allocation is stored. Kubernetes
// container names are DNS labels and are never empty, so this cannot collide with a container.
inline constexpr char kPodLevelContainerName[] = "";
inline constexpr char kPodLevelContainerType[] = "POD";

}  // namespace netqos::core
