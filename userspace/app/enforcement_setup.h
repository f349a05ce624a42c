// Wires enforcement for the composition root: mounts bpffs if needed, opens the pinned dataplane
// on the cgroup v2 root, and starts the reconciler over the allocation service and the pod source
// (the container runtime's CRI socket, or the kubelet's pod list). Also `netqosd --uninstall`.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "app/daemon_config.h"
#include "app/residual_sweeper.h"
#include "bpf/dataplane.h"
#include "common/status.h"
#include "enforce/enforcer.h"
#include "enforce/kernel/bpf_class_table.h"
#include "enforce/kernel/bpf_edt_rate_table.h"
#include "enforce/kernel/bpf_pod_address_table.h"
#include "enforce/kernel/bpf_veth_table.h"
#include "enforce/kernel/kernel_link_shaper.h"
#include "enforce/kernel/kernel_veth_attacher.h"
#include "enforce/kernel/netlink_veth_source.h"
#include "pods/pod_list.h"
#include "pods/pod_source.h"
#include "service/allocation_service.h"

namespace netqos::app {

// Members are destroyed bottom-up: the enforcer stops before what it uses goes away. Nothing is
// detached on destruction: the pinned programs, maps and qdiscs keep enforcing until the next
// start adopts them (or --uninstall removes them).
struct EnforcementStack {
  std::string cgroup_root;
  std::unique_ptr<bpf::Dataplane> dataplane;
  std::unique_ptr<enforce::BpfClassTable> table;
  std::unique_ptr<enforce::BpfPodAddressTable> addresses;
  std::unique_ptr<enforce::BpfEdtRateTable> edt;
  std::unique_ptr<enforce::BpfEdtAggregateTable> edt_aggregates;
  std::unique_ptr<enforce::KernelLinkShaper> shaper;
  // --pod-veths: null when off (the other two then take away what an earlier run placed).
  std::unique_ptr<enforce::NetlinkVethSource> veth_source;
  std::unique_ptr<enforce::BpfVethTable> veth_table;
  std::unique_ptr<enforce::KernelVethAttacher> veth_attacher;
  std::unique_ptr<pods::PodSource> pods;
  std::unique_ptr<enforce::Enforcer> enforcer;
};

// What either pod source keeps of the pods it lists: only the annotations the enforcer reads
// (enforce::PodAnnotationKeys), since a node's pods carry many more.
pods::PodListOptions PodSourceOptionsOf(const DaemonConfig& config);

// The pod source --pod-source names (pods/pod_source.h), keeping what PodSourceOptionsOf says. A
// flag that is wrong fails here; a source that cannot be made yet (no runtime socket found) is made
// on a later read (cgroup/deferred_pod_source.h).
Result<std::unique_ptr<pods::PodSource>> MakePodSource(const DaemonConfig& config);

// Opens the dataplane, adopts the pinned class map and starts the enforcer (its first pass runs
// on its worker). Allocation changes reach the enforcer only once the caller forwards them
// (ForwardChange): app/enforcement_start.h relays those made while this runs.
// `tenant_policy` gives the tenant policy in force at each pass (null: the built-in default).
Result<std::unique_ptr<EnforcementStack>> StartEnforcement(
    const DaemonConfig& config, service::AllocationService& service,
    std::function<std::shared_ptr<const enforce::TenantPolicy>()> tenant_policy = nullptr);

// Hands one allocation change to the enforcer (it only wakes its worker).
void ForwardChange(enforce::Enforcer& enforcer, const service::AllocationService::ChangeEvent& ev);

// Residual state cleanup without enforcement (residual_sweeper.h). Destroyed bottom-up: the
// sweeper stops before its pod source goes away.
struct ResidualCleanup {
  std::unique_ptr<pods::PodSource> pods;
  std::unique_ptr<ResidualSweeper> sweeper;
};

// Starts the sweeper over --pod-source and `service` (which must outlive it). For
// --enforcement=none, and when enforcement failed to start.
Result<std::unique_ptr<ResidualCleanup>> StartResidualCleanup(const DaemonConfig& config,
                                                              service::AllocationService& service);

// Where the list of NICs carrying netqos qdiscs is kept (in --qrm-state-dir, which persists).
std::string InstalledLinksRecordPath(const DaemonConfig& config);

// --uninstall: removes the qdiscs, IFBs and ingress filters of every recorded (and every
// --enforce-nics) NIC, then the pinned links and maps. Returns the exit code.
int Uninstall(const DaemonConfig& config);

}  // namespace netqos::app
