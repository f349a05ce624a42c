// --network-resource-plugin-nic-health-checkers, as Katalyst HEAD reads it: each checker of the
// registry is on when the list names it, off when it names "-<name>", on under "*" otherwise,
// and off when the list names none of these (an empty list turns every checker off). netqos's
// registry is Katalyst's: "ip", a NIC without an IP address takes no new allocations.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace netqos::app {

struct NicHealthCheckers {
  bool ip = true;
};

// InvalidArgument for a name that is not a checker (with or without "-") or "*".
Result<NicHealthCheckers> ParseNicHealthCheckers(const std::vector<std::string>& list);

}  // namespace netqos::app
