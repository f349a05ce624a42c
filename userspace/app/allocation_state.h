// Opening the node's allocation state, shared by the daemon and by --uninstall (which folds the
// journal into a snapshot Katalyst can load, for a rollback).
#pragma once

#include <memory>

#include "app/daemon_config.h"
#include "common/status.h"
#include "core/policy.h"
#include "core/types.h"
#include "service/allocation_service.h"

namespace netqos::app {

// The policy over `topology` (after --machine-net-allocatable-ns) and the flags' configuration.
Result<core::StaticPolicy> MakePolicy(const DaemonConfig& config, core::Topology topology);

// Settles the checkpoint directory (--qrm-enable-in-memory-state), opens the store and loads
// the checkpoint into `policy`. Creating the service has a fresh snapshot written, which folds the
// journal in (in the background, unless the load needs it first: LoadedState). Errors say whether
// the files are damaged or just unreadable.
Result<std::unique_ptr<service::AllocationService>> OpenAllocationState(const DaemonConfig& config,
                                                                        core::StaticPolicy policy);

// --uninstall: reads the topology and the checkpoint as the daemon would and writes the snapshot
// with every journaled change folded in, in the --katalyst-checkpoint-layout Katalyst loads.
// Refused while a daemon holds the state directory.
Status FoldCheckpointForRollback(const DaemonConfig& config);

}  // namespace netqos::app
