// The allocation core's data model: NICs and CPU topology in, requests in, responses and state
// changes out. Plain values; no I/O, no proto types.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

namespace netqos::core {

using StringMap = std::map<std::string, std::string>;
using NumaSet = std::set<int>;

// A NIC is identified by (network namespace, name), never by name alone: two namespaces may each
// have an eth0. The host namespace is "".
struct NicId {
  std::string netns;
  std::string name;
  auto operator<=>(const NicId&) const = default;
  bool operator==(const NicId&) const = default;
  // Katalyst's resource identifier: "<netns>-<name>", or "<name>" in the host namespace.
  std::string Identifier() const { return netns.empty() ? name : netns + "-" + name; }
};

struct Nic {
  NicId id;
  int ifindex = 0;
  int64_t speed_mbps = -1;        // -1: unknown (capacity 0)
  int numa_node = -1;             // -1: unknown (treated as NUMA 0, as Katalyst v0.5.3 does)
  bool enabled = false;           // link administratively/operationally usable
  std::vector<std::string> ipv4;  // printed form (Go net.IP.String()), see ip_format.h
  std::vector<std::string> ipv6;
  std::string netns_path;  // absolute path of the namespace bind mount; "" for the host
  std::string pci_address;
  // Live health (kernel topology source): a NIC that goes down or loses its IPs stays listed
  // with allocatable 0, keeps its allocations, and takes no new ones.
  bool healthy = true;
  std::string unhealthy_reason;
};

// The socket of a NUMA node without CPUs (memory only: CXL, PMEM, or every CPU offline).
inline constexpr int kNoSocket = -1;

struct NumaNode {
  int id = 0;
  int socket = 0;  // or kNoSocket
};

struct Topology {
  std::vector<NumaNode> numa_nodes;
  std::vector<Nic> nics;
};

enum class ContainerType : int { kInit = 0, kMain = 1, kSidecar = 2, kEphemeral = 3 };
const char* ContainerTypeName(ContainerType type);  // "INIT", "MAIN", "SIDECAR", "EPHEMERAL"

struct TopologyHint {
  std::vector<uint64_t> nodes;
  bool preferred = false;
  bool operator==(const TopologyHint&) const = default;
};

// A kubelet container-level request (ResourceRequest), after translation from proto.
struct ContainerRequest {
  std::string pod_uid;
  std::string pod_namespace;
  std::string pod_name;
  std::string container_name;
  ContainerType container_type = ContainerType::kMain;
  uint64_t container_index = 0;
  std::string pod_role;
  std::string pod_type;
  std::string resource_name;
  std::optional<TopologyHint> hint;
  std::map<std::string, double> resource_requests;
  StringMap labels;
  StringMap annotations;
  std::string native_qos_class;
};

// A kubelet pod-level request (PodResourceRequest): resource_requests is the pod's total.
struct PodRequest {
  std::string pod_uid;
  std::string pod_namespace;
  std::string pod_name;
  std::string pod_role;
  std::string pod_type;
  std::string resource_name;
  std::optional<TopologyHint> hint;
  std::map<std::string, double> resource_requests;
  StringMap labels;
  StringMap annotations;
};

struct HintsResponse {
  std::string resource_name;
  // nullopt: "no topology preference" (nil on the wire, INIT/SIDECAR);
  // empty vector: "no NIC can satisfy the request".
  std::optional<std::vector<TopologyHint>> hints;
  StringMap labels;       // filtered request labels
  StringMap annotations;  // filtered (flattened) request annotations
};

struct AllocationResponse {
  std::string resource_name;
  bool has_allocation = false;  // false: INIT container, AllocationResult left unset
  double allocated_quantity = 0;
  std::string allocation_result;  // NUMA nodes in Linux list format ("0-1"), "" when none
  std::optional<StringMap> allocation_annotations;  // nullopt for a SIDECAR
  std::optional<TopologyHint> hint;  // nullopt: a nil hint element (encoded as an empty hint)
  StringMap labels;
  StringMap annotations;
};

// One container's (or one pod's, for AllocateForPod) reservation. JSON field names in the
// checkpoint follow Katalyst's AllocationInfo.
struct AllocationInfo {
  std::string pod_uid;
  std::string pod_namespace;
  std::string pod_name;
  std::string container_name;
  std::string container_type;  // "MAIN", "EPHEMERAL", "POD"
  uint64_t container_index = 0;
  std::string pod_role;
  std::string pod_type;
  uint32_t egress = 0;   // Mbps
  uint32_t ingress = 0;  // Mbps
  std::string if_name;
  std::string ns_name;
  NumaSet numa_nodes;
  StringMap labels;
  StringMap annotations;
  std::string qos_level;
  std::string net_class_id;  // decimal, informational (what the annotations reported)

  NicId nic() const { return NicId{ns_name, if_name}; }
  bool operator==(const AllocationInfo&) const = default;
};

using ContainerEntries = std::map<std::string, AllocationInfo>;  // container name -> info
using PodEntries = std::map<std::string, ContainerEntries>;      // pod uid -> containers

struct BandwidthInfo {
  uint32_t capacity = 0;
  uint32_t sys_reservation = 0;
  uint32_t reservation = 0;
  uint32_t allocatable = 0;
  uint32_t allocated = 0;
  uint32_t free = 0;
  bool operator==(const BandwidthInfo&) const = default;
};

struct NicState {
  BandwidthInfo egress;
  BandwidthInfo ingress;
  bool operator==(const NicState&) const = default;
};

using MachineState = std::map<NicId, NicState>;

// State changes: what the store journals and what Apply() performs. Planning is const; a change
// is applied only after it is durable.
struct SetAllocation {
  AllocationInfo info;
  bool operator==(const SetAllocation&) const = default;
};
struct RemovePodEntries {
  std::string pod_uid;
  bool operator==(const RemovePodEntries&) const = default;
};
using StateChange = std::variant<SetAllocation, RemovePodEntries>;

struct TopologyAwareQuantity {
  double resource_value = 0;
  uint64_t node = 0;
  std::string name;
  std::string type;
  int topology_level = 1;
  StringMap annotations;
  bool operator==(const TopologyAwareQuantity&) const = default;
};

struct TopologyAwareResources {
  bool found = false;  // false: empty response (no allocation for the container)
  std::string pod_uid;
  std::string pod_name;
  std::string pod_namespace;
  std::string container_name;
  double aggregated_quantity = 0;
  std::vector<TopologyAwareQuantity> quantities;  // empty for a quantity-0 sidecar-style entry
};

struct AllocatableResources {
  double aggregated_allocatable = 0;
  double aggregated_capacity = 0;
  std::vector<TopologyAwareQuantity> allocatable;
  std::vector<TopologyAwareQuantity> capacity;
};

struct PluginOptions {
  bool pre_start_required = false;
  bool with_topology_alignment = true;
  bool need_reconcile = false;
};

}  // namespace netqos::core
