#include "shaping/netlink/qdisc_probe.h"

#include <linux/pkt_sched.h>
#include <netlink/netlink.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/tc.h>
#include <netlink/socket.h>
#include <sched.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <thread>

#include "os/libnl_ptr.h"
#include "os/nl_error.h"
#include "shaping/netlink/qdisc_netlink.h"

namespace netqos::shaping {
namespace {

// Runs on a thread of its own: unshare(CLONE_NEWNET) moves only the calling thread, and the
// namespace goes away with it.
QdiscSupport ProbeInPrivateNetns(const std::string& kind) {
  if (::unshare(CLONE_NEWNET) != 0) {
    return {false, std::string("unshare(CLONE_NEWNET) for the probe: ") + std::strerror(errno)};
  }
  os::NlSockPtr sock(nl_socket_alloc());
  if (!sock) return {false, "nl_socket_alloc: out of memory"};
  if (int err = nl_connect(sock.get(), NETLINK_ROUTE); err < 0) {
    return {false, os::NlStatus(err, "nl_connect(NETLINK_ROUTE)").message()};
  }
  QdiscPtr q(rtnl_qdisc_alloc());
  if (!q) return {false, "rtnl_qdisc_alloc: out of memory"};
  constexpr int kLoopbackIfindex = 1;  // lo is ifindex 1 in every new namespace
  rtnl_tc_set_ifindex(TC_CAST(q.get()), kLoopbackIfindex);
  rtnl_tc_set_parent(TC_CAST(q.get()), TC_H_ROOT);
  if (int err = rtnl_tc_set_kind(TC_CAST(q.get()), kind.c_str()); err < 0) {
    return {false, os::NlStatus(err, "rtnl_tc_set_kind(" + kind + ")").message()};
  }
  if (int err = rtnl_qdisc_add(sock.get(), q.get(), NLM_F_CREATE | NLM_F_EXCL); err < 0) {
    // The kernel answers ENOENT for a kind it has no module for.
    if (err == -NLE_OBJ_NOTFOUND) return {false, "sch_" + kind + " is not in this kernel"};
    return {false, os::NlStatus(err, "making a " + kind + " qdisc").message()};
  }
  return {true, ""};
}

}  // namespace

QdiscSupport ProbeQdiscKind(const std::string& kind) {
  QdiscSupport out;
  std::thread probe([&] { out = ProbeInPrivateNetns(kind); });
  probe.join();
  return out;
}

}  // namespace netqos::shaping
