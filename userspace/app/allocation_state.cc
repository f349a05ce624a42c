#include "app/allocation_state.h"

#include <spdlog/spdlog.h>

#include <string>
#include <utility>

#include "app/allocatable_namespaces.h"
#include "app/random_nic_chooser.h"
#include "app/topology_setup.h"
#include "checkpoint/file_state_store.h"
#include "checkpoint/katalyst_checksum.h"
#include "checkpoint/state_dir_migration.h"

namespace netqos::app {
namespace {

std::unique_ptr<core::NicChooser> MakeChooser(NicSelection selection) {
  switch (selection) {
    case NicSelection::kFirst:
      return std::make_unique<core::FirstNicChooser>();
    case NicSelection::kLast:
      return std::make_unique<core::LastNicChooser>();
    case NicSelection::kRandom:
      break;
  }
  return std::make_unique<RandomNicChooser>();
}

}  // namespace

Result<core::StaticPolicy> MakePolicy(const DaemonConfig& config, core::Topology topology) {
  return core::StaticPolicy::Create(
      config.policy,
      FilterAllocatableNamespaces(std::move(topology), config.machine_net_allocatable_ns));
}

Result<std::unique_ptr<service::AllocationService>> OpenAllocationState(const DaemonConfig& config,
                                                                        core::StaticPolicy policy) {
  // --qrm-enable-in-memory-state turned on or off since the last start (or a reboot emptied the
  // tmpfs): one checkpoint, in the directory the mode uses (checkpoint/state_dir_migration.h).
  if (!config.qrm_state_dir_in_memory.empty()) {
    const std::string other =
        config.qrm_enable_in_memory_state ? config.qrm_state_dir : config.qrm_state_dir_in_memory;
    NETQOS_RETURN_IF_ERROR(checkpoint::SettleCheckpointDirs(config.EffectiveStateDir(), other));
  }
  checkpoint::FileStateStore::Options store_opts;
  store_opts.dir = config.EffectiveStateDir();
  store_opts.skip_corruption = config.skip_network_state_corruption;
  store_opts.snapshot_every_records = config.checkpoint_snapshot_every;
  store_opts.katalyst_layout = config.katalyst_checkpoint_layout;
  auto store = checkpoint::FileStateStore::Create(store_opts);
  if (!store.ok()) return store.status();

  auto svc =
      service::AllocationService::Create(std::move(policy), std::move(*store),
                                         MakeChooser(config.nic_selection), config.checkpoint_mode);
  if (!svc.ok()) {
    // Only a damaged file may be moved aside; an I/O error says nothing about the file, and
    // deleting it would drop every allocation on the node.
    const bool damaged = svc.status().code() == StatusCode::kDataLoss;
    return svc.status().Wrap(
        damaged ? "the checkpoint is damaged; fix or move the file aside (after draining the "
                  "node) before restarting"
                : "could not read the checkpoint; the files are not known to be damaged, so keep "
                  "them: fix what the error names (disk, mount, permissions) and restart");
  }
  return svc;
}

Status FoldCheckpointForRollback(const DaemonConfig& config) {
  // Nothing to fold where netqos never ran (and no state directory to create on such a node).
  bool found = false;
  for (const std::string& dir : {config.qrm_state_dir, config.qrm_state_dir_in_memory}) {
    if (dir.empty()) continue;
    NETQOS_ASSIGN_OR_RETURN(bool here, checkpoint::FileStateStore::HasCheckpointFiles(dir));
    found = found || here;
  }
  if (!found) {
    spdlog::info("uninstall: no checkpoint to fold dir={}", config.EffectiveStateDir());
    return Status::Ok();
  }
  NETQOS_ASSIGN_OR_RETURN(SourceChoice choice, MakeTopologySource(config));
  NETQOS_ASSIGN_OR_RETURN(core::Topology topology, choice.source->Read());
  NETQOS_ASSIGN_OR_RETURN(core::StaticPolicy policy, MakePolicy(config, std::move(topology)));
  NETQOS_ASSIGN_OR_RETURN(auto svc, OpenAllocationState(config, std::move(policy)));
  // Create already wrote one but only logs a failure; here the failure is the answer.
  NETQOS_RETURN_IF_ERROR(svc->Flush());
  spdlog::info("uninstall: checkpoint folded for a rollback dir={} katalyst_layout={}",
               config.EffectiveStateDir(),
               checkpoint::KatalystLayoutFlagValue(config.katalyst_checkpoint_layout));
  return Status::Ok();
}

}  // namespace netqos::app
