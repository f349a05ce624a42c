// Whether the kernel can make a qdisc of some kind (sch_fq for EDT mode), found by making one: on
// the loopback device of a network namespace created for the probe and gone with it, so no NIC of
// the node is touched. The kernel loads the module on demand as it would for the real qdisc.
#pragma once

#include <string>

namespace netqos::shaping {

struct QdiscSupport {
  bool available = false;
  std::string reason;  // the kernel's answer when not available
};

QdiscSupport ProbeQdiscKind(const std::string& kind);

}  // namespace netqos::shaping
