// Reads the kernel's counters of netqos's HTB classes (htb_class_stats.h) through libnl-route, in
// the network namespace of the calling thread.
#pragma once

#include <string>

#include "common/status.h"
#include "os/libnl_ptr.h"
#include "shaping/htb_class_stats.h"

namespace netqos::shaping {

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
