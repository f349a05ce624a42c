// Reads the kernel's counters of netqos's HTB classes (what `tc -s class show` prints) through
// libnl-route, in the network namespace of the calling thread. The BPF programs never drop: the
// drops and overlimits of a container's traffic happen in its HTB leaf, so they are read here.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "common/counters.h"
#include "common/status.h"
#include "os/libnl_ptr.h"

struct nl_sock;

namespace netqos::shaping {

// One class's counters, with the class they belong to. QueueCounters is a base rather than a
// member: an HtbClassStats goes wherever QueueCounters are wanted, and the reader fills `drops`.
struct HtbClassStats : QueueCounters {
  uint32_t handle = 0;
  uint32_t parent = 0;

  bool operator==(const HtbClassStats&) const = default;
};

// By class handle (TC_H_MAKE(major, minor)); only the classes of netqos's qdisc major (10:).
using HtbClassStatsMap = std::map<uint32_t, HtbClassStats>;

// Not thread-safe: one reader per thread (its socket belongs to the namespace it was opened in).
class HtbClassStatsReader {
 public:
  // Opens a NETLINK_ROUTE socket in the calling thread's current network namespace.
  static Result<HtbClassStatsReader> Create();

  HtbClassStatsReader(HtbClassStatsReader&&) noexcept;
  HtbClassStatsReader& operator=(HtbClassStatsReader&&) noexcept;
  ~HtbClassStatsReader();

  // The 10:x classes on the link (one RTM_GETTCLASS dump). A link without netqos's qdisc gives
  // an empty map; a missing link is NotFound.
  Result<HtbClassStatsMap> Read(int ifindex);
  // The same for a link named `name` (the IFB "nqifb<ifindex>"): NotFound when it does not exist.
  Result<HtbClassStatsMap> ReadByName(const std::string& name);

 private:
  explicit HtbClassStatsReader(os::NlSockPtr sock);

  os::NlSockPtr sock_;
};

}  // namespace netqos::shaping
