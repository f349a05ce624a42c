#include "shaping/netlink/htb_class_stats_reader.h"

#include <linux/pkt_sched.h>
#include <netlink/cache.h>
#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/route/class.h>
#include <netlink/route/link.h>
#include <netlink/route/tc.h>
#include <netlink/socket.h>

#include "os/nl_error.h"
#include "shaping/htb_plan.h"

namespace netqos::shaping {
namespace {

using os::NlStatus;

void CollectStats(nl_object* obj, void* arg) {
  auto* out = static_cast<HtbClassStatsMap*>(arg);
  auto* tc = TC_CAST(reinterpret_cast<rtnl_class*>(obj));
  const uint32_t handle = rtnl_tc_get_handle(tc);
  if (HandleMajor(handle) != kQdiscMajor) return;
  HtbClassStats s;
  s.handle = handle;
  s.parent = rtnl_tc_get_parent(tc);
  s.bytes = rtnl_tc_get_stat(tc, RTNL_TC_BYTES);
  s.packets = rtnl_tc_get_stat(tc, RTNL_TC_PACKETS);
  s.drops = rtnl_tc_get_stat(tc, RTNL_TC_DROPS);
  s.overlimits = rtnl_tc_get_stat(tc, RTNL_TC_OVERLIMITS);
  s.backlog_bytes = rtnl_tc_get_stat(tc, RTNL_TC_BACKLOG);
  s.backlog_packets = rtnl_tc_get_stat(tc, RTNL_TC_QLEN);
  (*out)[handle] = s;
}

}  // namespace

HtbClassStatsReader::HtbClassStatsReader(os::NlSockPtr sock) : sock_(std::move(sock)) {}
HtbClassStatsReader::HtbClassStatsReader(HtbClassStatsReader&&) noexcept = default;
HtbClassStatsReader& HtbClassStatsReader::operator=(HtbClassStatsReader&&) noexcept = default;
HtbClassStatsReader::~HtbClassStatsReader() = default;

Result<HtbClassStatsReader> HtbClassStatsReader::Create() {
  os::NlSockPtr sock(nl_socket_alloc());
  if (!sock) return ResourceExhausted("nl_socket_alloc: out of memory");
  const int err = nl_connect(sock.get(), NETLINK_ROUTE);
  if (err < 0) return NlStatus(err, "nl_connect(NETLINK_ROUTE)");
  return HtbClassStatsReader(std::move(sock));
}

Result<HtbClassStatsMap> HtbClassStatsReader::Read(int ifindex) {
  nl_cache* raw = nullptr;
  const int err = rtnl_class_alloc_cache(sock_.get(), ifindex, &raw);
  if (err < 0) {
    return NlStatus(err, "rtnl_class_alloc_cache(ifindex " + std::to_string(ifindex) + ")");
  }
  os::NlCachePtr cache(raw);
  HtbClassStatsMap out;
  nl_cache_foreach(cache.get(), CollectStats, &out);
  return out;
}

Result<HtbClassStatsMap> HtbClassStatsReader::ReadByName(const std::string& name) {
  rtnl_link* raw = nullptr;
  const int err = rtnl_link_get_kernel(sock_.get(), 0, name.c_str(), &raw);
  os::LinkPtr link(raw);
  if (err < 0 || !link) {
    // The kernel answers ENODEV, which libnl reports as NLE_OBJ_NOTFOUND or NLE_NODEV.
    return NlStatus(err < 0 ? err : -NLE_OBJ_NOTFOUND, "rtnl_link_get_kernel(" + name + ")");
  }
  auto stats = Read(rtnl_link_get_ifindex(link.get()));
  if (!stats.ok()) return stats.status().Wrap(name);
  return stats;
}

}  // namespace netqos::shaping
