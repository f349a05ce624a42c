// The maps and link netqosd pins under --bpf-pin-dir, read without loading any program: their
// names and value layouts (from bpf/netqos_abi.h), readers shared with Dataplane, and PinnedMaps,
// a read-only view of the pins for netqosctl (which works while the daemon is down).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/counters.h"
#include "common/fd.h"
#include "common/status.h"
#include "netqos_abi.h"

namespace netqos::bpf {

static_assert(sizeof(netqos_class) == 16, "netqos_class layout is ABI (bpf/netqos_abi.h)");
static_assert(offsetof(netqos_class, qos_level) == 8 && offsetof(netqos_class, dscp) == 9 &&
              offsetof(netqos_class, slot) == 10 && offsetof(netqos_class, flags) == 12);
static_assert(sizeof(netqos_veth) == 8, "netqos_veth layout is ABI");
static_assert(sizeof(netqos_flow_key) == 32, "netqos_flow_key layout is ABI");
static_assert(sizeof(netqos_counters) == 40, "netqos_counters layout is ABI");
static_assert(sizeof(netqos_sock_tag) == 40 && offsetof(netqos_sock_tag, lock) == 0 &&
                  offsetof(netqos_sock_tag, cls) == 24,
              "netqos_sock_tag layout is ABI");
static_assert(sizeof(netqos_addr) == 16, "netqos_addr layout is ABI");
static_assert(sizeof(netqos_frag_key) == 40, "netqos_frag_key layout is ABI");
static_assert(sizeof(netqos_edt) == 24 && offsetof(netqos_edt, lock) == 16,
              "netqos_edt layout is ABI");

// Where netqosd pins its maps and links unless --bpf-pin-dir says otherwise.
inline constexpr char kDefaultPinDir[] = "/sys/fs/bpf/netqos";

// Map and pin names, from the ABI header.
inline constexpr const char* kClassMapName = NETQOS_STR(NETQOS_MAP_CLASS);
inline constexpr const char* kCgroupStatsMapName = NETQOS_STR(NETQOS_MAP_CG_STATS);
inline constexpr const char* kClassStatsMapName = NETQOS_STR(NETQOS_MAP_CLASS_STATS);
inline constexpr const char* kSockTagMapName = NETQOS_STR(NETQOS_MAP_SOCK_TAG);
inline constexpr const char* kPodAddrMapName = NETQOS_STR(NETQOS_MAP_POD_ADDR);
inline constexpr const char* kFragMapName = NETQOS_STR(NETQOS_MAP_FRAG);
inline constexpr const char* kEdtMapName = NETQOS_STR(NETQOS_MAP_EDT);
inline constexpr const char* kAggregateMapName = NETQOS_STR(NETQOS_MAP_AGG);
inline constexpr const char* kVethMapName = NETQOS_STR(NETQOS_MAP_VETH);
inline constexpr const char* kCarrierMapName = NETQOS_STR(NETQOS_MAP_CARRIER);
inline constexpr const char* kRxOwnerMapName = NETQOS_STR(NETQOS_MAP_RX_OWNER);
inline constexpr const char* kFormatPinName = NETQOS_STR(NETQOS_PIN_FORMAT);
// The links of the cgroup programs (bpf/netqos_cgroup.bpf.c), named for the hook they hold.
inline constexpr const char* kEgressLinkPin = "link_cgroup_egress";       // netqos_egress
inline constexpr const char* kRxLinkPin = "link_cgroup_ingress";          // netqos_rx
inline constexpr const char* kSockoptLinkPin = "link_cgroup_setsockopt";  // netqos_sockopt
// netqos_sockopt_pods on each kubelet cgroup root: this prefix + the root's cgroup id.
inline constexpr const char* kPodSockoptLinkPinPrefix = "link_pods_setsockopt_";
// What netqosd before 0.x called the first two; Dataplane::Open renames them in place.
inline constexpr const char* kLegacyEgressLinkPin = "link_egress";
inline constexpr const char* kLegacyRxLinkPin = "link_ingress";

// FailedPrecondition naming pin_dir and the map when one of `maps` is not pinned there: a BPF
// object opened against pin_dir would get fresh, empty maps instead, which the daemon never writes.
// `object` names what was about to be loaded.
Status RequirePinned(const std::string& pin_dir, std::initializer_list<const char*> maps,
                     const char* object);

// --- readers over a map fd (the daemon's own maps or pins opened here) ---

// Every entry of a class map (cgroup id -> netqos_class). Entries deleted while iterating are
// skipped.
Result<std::vector<std::pair<uint64_t, netqos_class>>> ReadClassMap(int fd, const char* map_name);
// One per-CPU counters value, summed over CPUs; a missing key yields zeros.
Result<TrafficCounters> ReadSummedCounters(int fd, const char* map_name, const void* key);
// Every entry of a per-CPU counters map, summed per key. Key types: uint64_t (cgroup id) for
// netqos_cgst, uint32_t (class id) for netqos_clst.
Result<std::vector<std::pair<uint64_t, TrafficCounters>>> ReadAllContainerCounters(
    int fd, const char* map_name);
Result<std::vector<std::pair<uint32_t, TrafficCounters>>> ReadAllClassCounters(
    int fd, const char* map_name);

// --- what is pinned, for `netqosctl status` ---

struct PinnedMapState {
  std::string name;
  std::string path;
  bool present = false;
  bool counted = false;  // entries is meaningful (sk storage maps cannot be iterated)
  uint32_t entries = 0;
  uint32_t max_entries = 0;
  uint32_t id = 0;    // kernel map id (bpftool map show id N)
  std::string error;  // why it could not be read ("" when it could)
};

struct PinnedLinkState {
  std::string path;
  bool present = false;
  uint32_t id = 0;  // kernel link id (bpftool link show id N)
  uint32_t prog_id = 0;
  std::string prog_name;    // "netqos_egress", "netqos_rx"
  uint64_t cgroup_id = 0;   // 0: the cgroup it was attached to is gone (defunct link)
  bool egress = false;      // attach type BPF_CGROUP_INET_EGRESS
  bool ingress = false;     // attach type BPF_CGROUP_INET_INGRESS
  bool setsockopt = false;  // attach type BPF_CGROUP_SETSOCKOPT
  std::string error;
};

struct PinDirState {
  std::string pin_dir;
  bool exists = false;
  bool on_bpffs = false;
  std::string error;                 // pin dir unreadable (EACCES, ...)
  std::vector<PinnedMapState> maps;  // the four current maps, in ABI order
  PinnedLinkState egress_link;
  PinnedLinkState rx_link;
  PinnedLinkState sockopt_link;
  std::vector<std::string> other_versions;  // pins of another layout version (netqos_cls_v0)
};

// Never fails: each problem is recorded on the object it concerns. Permission problems carry
// "permission denied" in their error text.
PinDirState InspectPinDir(const std::string& pin_dir);

// --- read-only view of the pinned maps ---

class PinnedMaps {
 public:
  // Opens the class map and both counter maps read-only (BPF_F_RDONLY), checking their key and
  // value sizes against the ABI. NotFound when pin_dir or a map is missing; PermissionDenied
  // without CAP_BPF/CAP_SYS_ADMIN; FailedPrecondition for a map of another layout.
  static Result<std::unique_ptr<PinnedMaps>> Open(const std::string& pin_dir);
  PinnedMaps(const PinnedMaps&) = delete;
  PinnedMaps& operator=(const PinnedMaps&) = delete;

  const std::string& pin_dir() const { return pin_dir_; }

  Result<std::vector<std::pair<uint64_t, netqos_class>>> Classes() const;
  // nullopt when the cgroup has no entry.
  Result<std::optional<netqos_class>> Class(uint64_t cgroup_id) const;
  Result<TrafficCounters> ContainerCounters(uint64_t cgroup_id) const;
  Result<std::vector<std::pair<uint64_t, TrafficCounters>>> AllContainerCounters() const;
  Result<std::vector<std::pair<uint32_t, TrafficCounters>>> AllClassCounters() const;

 private:
  PinnedMaps() = default;
  std::string pin_dir_;
  Fd class_fd_;
  Fd cg_stats_fd_;
  Fd class_stats_fd_;
};

}  // namespace netqos::bpf
