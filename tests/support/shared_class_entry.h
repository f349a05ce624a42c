// A class map entry as the BPF tests write it: a shared_cores container's leaf priority and its
// Katalyst class id, nothing else set (no caps in either direction, no DSCP, no carrier slot).
#pragma once

#include <cstdint>

#include "netqos_abi.h"

namespace netqos::testing {

inline netqos_class SharedClassEntry(uint32_t priority, uint32_t net_class_id) {
  netqos_class c{};
  c.priority = priority;
  c.net_class_id = net_class_id;
  c.qos_level = NETQOS_QOS_SHARED;
  return c;
}

}  // namespace netqos::testing
