// The composition root: the only place that names concrete adapters. Restores the state before
// serving, serves the kubelet, and runs until SIGTERM/SIGINT (SIGHUP re-reads the topology).
#pragma once

#include "app/daemon_config.h"

namespace netqos::app {

// Returns the process exit code.
int RunDaemon(const DaemonConfig& config);

// --print-topology: discovers once with the same flags, prints what the daemon would see, exits.
int PrintTopology(const DaemonConfig& config);

}  // namespace netqos::app
