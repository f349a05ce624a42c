// TopologySource: where the NUMA layout and the NICs come from (a JSON file for tests and
// hardware-less nodes; the kernel through netlink and sysfs on real nodes).
#pragma once

#include <functional>

#include "common/status.h"
#include "core/types.h"

namespace netqos::core {

class TopologySource {
 public:
  virtual ~TopologySource() = default;
  // Reads the current topology once.
  virtual Result<Topology> Read() = 0;
  // Starts delivering topology changes to `on_change` from a background thread until the source
  // is destroyed. Sources that never change may do nothing.
  virtual Status Watch(std::function<void(Topology)> on_change) = 0;
};

}  // namespace netqos::core
