#include "enforce/kernel/netlink_veth_source.h"

#include <linux/if_addr.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netlink/addr.h>
#include <netlink/cache.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/route/nexthop.h>
#include <netlink/route/route.h>
#include <netlink/socket.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <string>

#include "common/errno_status.h"
#include "os/libnl_ptr.h"
#include "os/nl_error.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif
#ifndef NETLINK_GET_STRICT_CHK
#define NETLINK_GET_STRICT_CHK 12
#endif

namespace netqos::enforce {
namespace {

using os::NlStatus;

Result<os::NlSockPtr> Connect() {
  os::NlSockPtr sock(nl_socket_alloc());
  if (!sock) return ResourceExhausted("nl_socket_alloc: out of memory");
  NETQOS_RETURN_IF_ERROR(
      NlStatus(nl_connect(sock.get(), NETLINK_ROUTE), "nl_connect(NETLINK_ROUTE)"));
  return sock;
}

// IPv4 as ::ffff:a.b.c.d, IPv6 as it is; false for another family or length.
bool ToPodAddress(int family, const void* data, size_t len, PodAddress* out) {
  *out = {};
  if (family == AF_INET && len == 4) {
    (*out)[10] = 0xff;
    (*out)[11] = 0xff;
    std::memcpy(out->data() + 12, data, 4);
    return true;
  }
  if (family == AF_INET6 && len == 16) {
    std::memcpy(out->data(), data, 16);
    return true;
  }
  return false;
}

struct AddressDump {
  int ifindex = 0;  // only this device's (the veth's other end), 0 = every device
  std::vector<PodAddress> addresses;
};

int CollectAddress(nl_msg* msg, void* arg) {
  auto* dump = static_cast<AddressDump*>(arg);
  nlmsghdr* hdr = nlmsg_hdr(msg);
  if (hdr->nlmsg_type != RTM_NEWADDR) return NL_OK;
  const auto* ifa = static_cast<const ifaddrmsg*>(nlmsg_data(hdr));
  if (dump->ifindex != 0 && static_cast<int>(ifa->ifa_index) != dump->ifindex) return NL_OK;
  nlattr* tb[IFA_MAX + 1] = {};
  if (nlmsg_parse(hdr, sizeof(ifaddrmsg), tb, IFA_MAX, nullptr) < 0) return NL_OK;
  nlattr* a = tb[IFA_LOCAL] != nullptr ? tb[IFA_LOCAL] : tb[IFA_ADDRESS];
  if (a == nullptr) return NL_OK;
  PodAddress address;
  if (ToPodAddress(ifa->ifa_family, nla_data(a), static_cast<size_t>(nla_len(a)), &address)) {
    dump->addresses.push_back(address);
  }
  return NL_OK;
}

// The addresses on device `peer_ifindex` of the namespace the host numbers `netnsid`. The
// kernel honours IFA_TARGET_NETNSID only on a socket that asked for strict checking.
Result<std::vector<PodAddress>> PeerAddresses(int netnsid, int peer_ifindex) {
  NETQOS_ASSIGN_OR_RETURN(os::NlSockPtr sock, Connect());
  const int one = 1;
  if (::setsockopt(nl_socket_get_fd(sock.get()), SOL_NETLINK, NETLINK_GET_STRICT_CHK, &one,
                   sizeof(one)) != 0) {
    return ErrnoStatus("setsockopt(NETLINK_GET_STRICT_CHK)", errno);
  }
  nl_msg* raw = nlmsg_alloc_simple(RTM_GETADDR, NLM_F_DUMP);
  if (raw == nullptr) return ResourceExhausted("nlmsg_alloc_simple: out of memory");
  std::unique_ptr<nl_msg, void (*)(nl_msg*)> msg(raw, nlmsg_free);
  ifaddrmsg ifa{};
  ifa.ifa_family = AF_UNSPEC;
  const std::string what = "RTM_GETADDR in netnsid " + std::to_string(netnsid);
  int err = nlmsg_append(msg.get(), &ifa, sizeof(ifa), NLMSG_ALIGNTO);
  if (err >= 0) err = nla_put_s32(msg.get(), IFA_TARGET_NETNSID, netnsid);
  NETQOS_RETURN_IF_ERROR(NlStatus(err, "building " + what));
  AddressDump dump{peer_ifindex, {}};
  NETQOS_RETURN_IF_ERROR(NlStatus(
      nl_socket_modify_cb(sock.get(), NL_CB_VALID, NL_CB_CUSTOM, CollectAddress, &dump), what));
  NETQOS_RETURN_IF_ERROR(NlStatus(nl_send_auto(sock.get(), msg.get()), what));
  NETQOS_RETURN_IF_ERROR(NlStatus(nl_recvmsgs_default(sock.get()), what));
  return dump.addresses;
}

struct FoundVeth {
  int ifindex;
  std::string name;
  int peer_ifindex;
  int netnsid;
};

void CollectVeth(nl_object* obj, void* arg) {
  auto* link = reinterpret_cast<rtnl_link*>(obj);
  const char* type = rtnl_link_get_type(link);
  if (type == nullptr || std::strcmp(type, "veth") != 0) return;
  int32_t nsid = -1;
  // No link netnsid: both ends are in this namespace (not a pod's).
  if (rtnl_link_get_link_netnsid(link, &nsid) != 0 || nsid < 0) return;
  const char* name = rtnl_link_get_name(link);
  static_cast<std::vector<FoundVeth>*>(arg)->push_back(
      {rtnl_link_get_ifindex(link), name != nullptr ? name : "", rtnl_link_get_link(link), nsid});
}

struct RouteDump {
  std::vector<NodeRoute> routes;
};

void CollectRoute(nl_object* obj, void* arg) {
  auto* route = reinterpret_cast<rtnl_route*>(obj);
  if (rtnl_route_get_table(route) != RT_TABLE_MAIN || rtnl_route_get_type(route) != RTN_UNICAST ||
      rtnl_route_get_nnexthops(route) != 1) {
    return;
  }
  rtnl_nexthop* nh = rtnl_route_nexthop_n(route, 0);
  nl_addr* dst = rtnl_route_get_dst(route);
  if (nh == nullptr || dst == nullptr) return;
  NodeRoute r;
  r.ifindex = rtnl_route_nh_get_ifindex(nh);
  const int family = nl_addr_get_family(dst);
  const auto prefix = static_cast<int>(nl_addr_get_prefixlen(dst));
  if (nl_addr_get_len(dst) == 0) {  // a default route: every address of its family
    static constexpr uint8_t kV4[4] = {};
    static constexpr uint8_t kV6[16] = {};
    if (!ToPodAddress(family, family == AF_INET ? static_cast<const void*>(kV4) : kV6,
                      family == AF_INET ? 4 : 16, &r.prefix)) {
      return;
    }
  } else if (!ToPodAddress(family, nl_addr_get_binary_addr(dst), nl_addr_get_len(dst), &r.prefix)) {
    return;
  }
  r.length = family == AF_INET ? prefix + 96 : prefix;
  static_cast<RouteDump*>(arg)->routes.push_back(r);
}

}  // namespace

Result<std::vector<VethLink>> NetlinkVethSource::Veths() {
  NETQOS_ASSIGN_OR_RETURN(os::NlSockPtr sock, Connect());
  nl_cache* raw = nullptr;
  NETQOS_RETURN_IF_ERROR(
      NlStatus(rtnl_link_alloc_cache(sock.get(), AF_UNSPEC, &raw), "rtnl_link_alloc_cache"));
  os::NlCachePtr cache(raw);
  std::vector<FoundVeth> found;
  nl_cache_foreach(cache.get(), CollectVeth, &found);

  std::vector<VethLink> out;
  std::set<std::pair<int, int>> present;
  for (const auto& f : found) {
    VethLink v;
    v.ifindex = f.ifindex;
    v.name = f.name;
    v.peer_netnsid = f.netnsid;
    const std::pair<int, int> key{f.ifindex, f.netnsid};
    present.insert(key);
    if (auto c = peer_addresses_.find(key); c != peer_addresses_.end()) {
      v.peer_addresses = c->second;
    } else if (auto a = PeerAddresses(f.netnsid, f.peer_ifindex); a.ok()) {
      v.peer_addresses = std::move(*a);
      if (!v.peer_addresses.empty()) peer_addresses_[key] = v.peer_addresses;
    }
    // A namespace that cannot be read (gone meanwhile) leaves the veth to the routes.
    out.push_back(std::move(v));
  }
  for (auto it = peer_addresses_.begin(); it != peer_addresses_.end();) {
    it = present.count(it->first) != 0 ? std::next(it) : peer_addresses_.erase(it);
  }
  return out;
}

Result<std::vector<NodeRoute>> NetlinkVethSource::Routes() {
  NETQOS_ASSIGN_OR_RETURN(os::NlSockPtr sock, Connect());
  nl_cache* raw = nullptr;
  NETQOS_RETURN_IF_ERROR(
      NlStatus(rtnl_route_alloc_cache(sock.get(), AF_UNSPEC, 0, &raw), "rtnl_route_alloc_cache"));
  os::NlCachePtr cache(raw);
  RouteDump dump;
  nl_cache_foreach(cache.get(), CollectRoute, &dump);
  return dump.routes;
}

}  // namespace netqos::enforce
