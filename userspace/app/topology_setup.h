// Chooses and builds the topology source the flags ask for: the JSON file (--topology-file) or
// kernel discovery (netlink + sysfs, optionally every named network namespace).
#pragma once

#include <memory>
#include <string>

#include "app/daemon_config.h"
#include "common/status.h"
#include "core/topology_source.h"
#include "topology/kernel_topology_source.h"

namespace netqos::app {

struct SourceChoice {
  std::unique_ptr<core::TopologySource> source;
  topology::KernelTopologySource* kernel = nullptr;  // set when discovering from the kernel
  std::string description;                           // "kernel (...)" or "file <path>"
};

Result<SourceChoice> MakeTopologySource(const DaemonConfig& config);

}  // namespace netqos::app
