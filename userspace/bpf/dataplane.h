// The eBPF dataplane: loads the cgroup programs of bpf/netqos_cgroup.bpf.c (netqos_egress: classify
// and count sent packets; netqos_rx: count received ones; netqos_sockopt: refuse qdisc bypass to
// containers), keeps their maps pinned under one bpffs directory (the NIC programs of
// bpf/netqos_nic.bpf.c, attached per NIC by nic_attach.h, share them), and writes the maps the
// programs read: cgroup -> HTB class, pod address -> cgroup, cgroup -> EDT rate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bpf/cgroup_id.h"  // CgroupIdOf
#include "bpf/libbpf_ptr.h"
#include "bpf/map_migration.h"
#include "bpf/pinned_maps.h"  // map names, ABI checks, the counter readers shared with netqosctl
#include "common/status.h"
#include "netqos_abi.h"

struct netqos_cgroup;

namespace netqos::bpf {

class Dataplane {
 public:
  struct Options {
    std::string pin_dir = kDefaultPinDir;  // must be on a bpffs; created if missing
    std::string cgroup_path;               // cgroup v2 dir the cgroup programs attach to
    // The kubelet's cgroup roots (kubepods, ...): netqos_sockopt_pods is attached to each that
    // exists (GuardPodRoots). One that is cgroup_path itself is left out: the program would
    // refuse qdisc bypass and AF_XDP to the whole host.
    std::vector<std::string> pod_roots;
  };

  // Loads the cgroup object, reusing maps pinned in pin_dir (entries survive restarts), and
  // attaches its three programs to cgroup_path through pinned bpf_links (link_cgroup_egress,
  // link_cgroup_ingress, link_cgroup_setsockopt): an existing link in pin_dir is updated in place
  // (atomic program swap, no unclassified gap), otherwise one is created. Links pinned under
  // their names of before (link_egress, link_ingress) are renamed first.
  // Maps of another layout version pinned in pin_dir (netqos_cls_v0, ...) are first copied into
  // the current ones (see map_migration.h), before the swap, and unpinned after it; if they
  // cannot be migrated, Open fails and leaves them, and the old program, in place.
  static Result<std::unique_ptr<Dataplane>> Open(const Options& options);

  // Detaches and unpins the links, unpins the maps (also those of other layout versions) and,
  // last, the format stamp (format_pin.h), removes pin_dir. Missing pieces are fine.
  static Status Uninstall(const std::string& pin_dir);

  ~Dataplane();
  Dataplane(const Dataplane&) = delete;
  Dataplane& operator=(const Dataplane&) = delete;

  // Attaches netqos_sockopt_pods to each root (pinned link_pods_setsockopt_<cgroup id>, updated
  // in place when it exists) and unpins those of roots no longer listed. A root that does not
  // exist (yet) is skipped and named in the NotFound returned after the others are done.
  Status GuardPodRoots(const std::vector<std::string>& roots);

  Status SetClass(uint64_t cgroup_id, const netqos_class& cls);
  Status ClearClass(uint64_t cgroup_id);  // a missing entry is OK
  // Removes a container's counters, e.g. once its class entry is cleared, so the per-container
  // counter map does not fill up. A missing entry is OK.
  Status DeleteContainerCounters(uint64_t cgroup_id);
  Result<std::vector<std::pair<uint64_t, netqos_class>>> ListClasses() const;

  // The pod address map (NETQOS_MAP_POD_ADDR): a pod's address -> the cgroup id whose class its
  // routed traffic takes.
  Status SetPodAddress(const netqos_addr& addr, uint64_t cgroup_id);
  Status ClearPodAddress(const netqos_addr& addr);  // a missing entry is OK
  Result<std::vector<std::pair<netqos_addr, uint64_t>>> ListPodAddresses() const;

  // The pod veth map (NETQOS_MAP_VETH): the host end of a pod's veth -> the cgroup id whose class
  // the pod's packets take there when their socket names no container.
  Status SetVeth(uint32_t ifindex, uint64_t cgroup_id);
  Status ClearVeth(uint32_t ifindex);  // a missing entry is OK
  Result<std::vector<std::pair<uint32_t, uint64_t>>> ListVeths() const;

  // The carrier slots (NETQOS_MAP_CARRIER, 1..NETQOS_CARRIER_SLOTS-1): slot -> cgroup id. Cleared
  // slots hold 0; List gives the others. Slot 0 holds the class map's generation (moved by
  // SetClass, ClearClass and Open): these never set, clear or list it.
  Status SetCarrier(uint32_t slot, uint64_t cgroup_id);
  Status ClearCarrier(uint32_t slot);
  Result<std::vector<std::pair<uint32_t, uint64_t>>> ListCarriers() const;

  // The EDT pacing map (NETQOS_MAP_EDT): a capped container's rate on NICs in EDT mode, in bytes
  // per second on the wire. Setting a rate restarts the container's pacing clock.
  // EDT pacing, keyed by a leaf's class handle (netqos_class.priority): see bpf/netqos_abi.h.
  Status SetEdtRate(uint64_t leaf_handle, uint64_t bytes_per_second);
  Status ClearEdtRate(uint64_t leaf_handle);                                // a missing entry is OK
  Result<std::vector<std::pair<uint64_t, uint64_t>>> ListEdtRates() const;  // leaf -> bytes/s

  // The aggregate map (NETQOS_MAP_AGG): the namespace aggregate (its class handle, also a key of
  // the EDT map) whose budget also paces a leaf's packets on NICs in EDT mode.
  Status SetAggregate(uint64_t leaf_handle, uint64_t aggregate_handle);
  Status ClearAggregate(uint64_t leaf_handle);  // a missing entry is OK
  Result<std::vector<std::pair<uint64_t, uint64_t>>> ListAggregates() const;  // leaf -> aggregate

  // Counters since the entry was first created; an id never seen yields all zeros.
  Result<TrafficCounters> ContainerCounters(uint64_t cgroup_id) const;
  Result<TrafficCounters> ClassCounters(uint32_t net_class_id) const;

  int EgressProgramFd() const;
  int RxProgramFd() const;
  // The setsockopt program attached: netqos_sockopt, or netqos_sockopt_flat where the kernel
  // lacks the helper to look at a cgroup's ancestors (processes below a container's own cgroup
  // then keep PACKET_QDISC_BYPASS).
  const char* SockoptProgramName() const;

  // What Open migrated from maps of another layout version (empty when there were none); the
  // library does not log, the caller may (MigrationReport::Describe).
  const MigrationReport& migration() const { return migration_; }

 private:
  Dataplane() = default;

  struct SkeletonDeleter {
    void operator()(netqos_cgroup* skel) const;
  };

  std::string pin_dir_;
  // Declared before the links, so the links are closed first. Closing never detaches: the links
  // and maps stay pinned in pin_dir_.
  std::unique_ptr<netqos_cgroup, SkeletonDeleter> skel_;
  BpfLinkPtr egress_link_;
  BpfLinkPtr rx_link_;
  BpfLinkPtr sockopt_link_;
  bool sockopt_flat_ = false;
  uint64_t root_cgroup_id_ = 0;  // the cgroup the three links above are attached to
  MigrationReport migration_;
};

}  // namespace netqos::bpf
