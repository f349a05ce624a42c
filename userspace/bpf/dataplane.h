// The eBPF dataplane: loads the cgroup programs (netqos_egress: classify and count sent packets;
// netqos_rx: count received ones) and the tc ingress program, keeps their maps pinned under one
// bpffs directory, and writes the cgroup -> HTB class map the programs read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bpf/cgroup_id.h"  // CgroupIdOf
#include "bpf/map_migration.h"
#include "bpf/pinned_maps.h"  // map names, ABI checks, Counters, the readers shared with netqosctl
#include "common/status.h"
#include "netqos_abi.h"

struct bpf_link;
struct netqos_egress;
struct netqos_ingress;

namespace netqos::bpf {

class Dataplane {
 public:
  struct Options {
    std::string pin_dir = "/sys/fs/bpf/netqos";  // must be on a bpffs; created if missing
    std::string cgroup_path;                     // cgroup v2 dir the cgroup programs attach to
    uint32_t ifb_ifindex = 0;                    // ingress redirect target; 0 = no redirect
    bool redirect_unclassified = false;  // also redirect packets of no class (see netqos_ingress)
  };

  // Loads both objects, reusing maps pinned in pin_dir (entries survive restarts), and attaches
  // netqos_egress and netqos_rx to cgroup_path through pinned bpf_links (link_egress,
  // link_ingress): an existing link in pin_dir is updated in place (atomic program swap, no
  // unclassified gap), otherwise one is created.
  // Maps of another layout version pinned in pin_dir (netqos_cls_v0, ...) are first copied into
  // the current ones (see map_migration.h), before the swap, and unpinned after it; if they
  // cannot be migrated, Open fails and leaves them, and the old program, in place.
  static Result<std::unique_ptr<Dataplane>> Open(const Options& options);

  // Detaches and unpins the links, unpins the maps (also those of other layout versions),
  // removes pin_dir. Missing pieces are fine.
  static Status Uninstall(const std::string& pin_dir);

  ~Dataplane();
  Dataplane(const Dataplane&) = delete;
  Dataplane& operator=(const Dataplane&) = delete;

  Status SetClass(uint64_t cgroup_id, const netqos_class& cls);
  Status ClearClass(uint64_t cgroup_id);  // a missing entry is OK
  // Removes a container's counters, e.g. once its class entry is cleared, so the per-container
  // counter map does not fill up. A missing entry is OK.
  Status DeleteContainerCounters(uint64_t cgroup_id);
  Result<std::vector<std::pair<uint64_t, netqos_class>>> ListClasses() const;

  // Counters since the entry was first created; an id never seen yields all zeros.
  Result<Counters> ContainerCounters(uint64_t cgroup_id) const;
  Result<Counters> ClassCounters(uint32_t net_class_id) const;

  // For the shaper, which attaches it at tc ingress (clsact) of the NICs it owns.
  int IngressProgramFd() const;
  int EgressProgramFd() const;
  int RxProgramFd() const;

  // What Open migrated from maps of another layout version (empty when there were none); the
  // library does not log, the caller may (MigrationReport::Describe).
  const MigrationReport& migration() const { return migration_; }

 private:
  Dataplane() = default;

  std::string pin_dir_;
  netqos_egress* egress_ = nullptr;
  netqos_ingress* ingress_ = nullptr;
  bpf_link* egress_link_ = nullptr;
  bpf_link* rx_link_ = nullptr;
  MigrationReport migration_;
};

}  // namespace netqos::bpf
