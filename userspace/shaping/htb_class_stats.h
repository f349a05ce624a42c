// Reads the kernel's counters of netqos's HTB classes (what `tc -s class show` prints) through
// libnl-route, in the network namespace of the calling thread. The BPF programs never drop: the
// drops and overlimits of a container's traffic happen in its HTB leaf, so they are read here.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "common/status.h"
#include "os/libnl_ptr.h"

struct nl_sock;

namespace netqos::shaping {

// One class's counters since the class was created (a re-created class starts from zero).
struct HtbClassStats {
  uint32_t handle = 0;
  uint32_t parent = 0;
  uint64_t bytes = 0;            // dequeued towards the device: frames without preamble and FCS
  uint64_t packets = 0;          // dequeued packets (a GSO packet counts as its segments)
  uint64_t drops = 0;            // packets the leaf's queue refused (full): the shaping's losses
  uint64_t overlimits = 0;       // times the class was over its rate and ceil when asked to send
  uint64_t backlog_bytes = 0;    // queued now (leaves only)
  uint64_t backlog_packets = 0;  // queued now (leaves only)

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
