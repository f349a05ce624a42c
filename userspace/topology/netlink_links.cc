#include "topology/netlink_links.h"

#include <arpa/inet.h>
#include <netlink/addr.h>
#include <netlink/cache.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/socket.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "os/nl_error.h"

namespace netqos::topology {
namespace {

using os::NlCachePtr;
using os::NlStatus;

Result<NlSockPtr> ConnectRoute() {
  NlSockPtr sock(nl_socket_alloc());
  if (!sock) return ResourceExhausted("nl_socket_alloc: out of memory");
  int err = nl_connect(sock.get(), NETLINK_ROUTE);
  if (err < 0) return NlStatus(err, "nl_connect(NETLINK_ROUTE)");
  return sock;
}

std::string Format(int family, const uint8_t* bytes) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (!inet_ntop(family, bytes, buf, sizeof(buf))) return "";
  return buf;
}

struct AddrCollector {
  std::map<int, std::pair<std::vector<std::string>, std::vector<std::string>>> by_ifindex;
};

void CollectAddr(nl_object* obj, void* arg) {
  auto* out = static_cast<AddrCollector*>(arg);
  auto* addr = reinterpret_cast<rtnl_addr*>(obj);
  nl_addr* local = rtnl_addr_get_local(addr);
  if (!local) return;
  const auto* bytes = static_cast<const uint8_t*>(nl_addr_get_binary_addr(local));
  const unsigned len = nl_addr_get_len(local);
  if (!bytes || !IsGlobalUnicast(bytes, len)) return;
  auto& lists = out->by_ifindex[rtnl_addr_get_ifindex(addr)];
  if (len == 4) {
    lists.first.push_back(Format(AF_INET, bytes));
  } else if (len == 16) {
    static constexpr uint8_t kV4Mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(bytes, kV4Mapped, sizeof(kV4Mapped)) == 0) {
      lists.first.push_back(Format(AF_INET, bytes + 12));
    } else {
      lists.second.push_back(Format(AF_INET6, bytes));
    }
  }
}

void CollectLink(nl_object* obj, void* arg) {
  auto* out = static_cast<std::vector<NlLink>*>(arg);
  auto* link = reinterpret_cast<rtnl_link*>(obj);
  NlLink l;
  l.ifindex = rtnl_link_get_ifindex(link);
  if (const char* name = rtnl_link_get_name(link)) l.name = name;
  l.flags = rtnl_link_get_flags(link);
  l.operstate = rtnl_link_get_operstate(link);
  if (const char* kind = rtnl_link_get_type(link)) l.kind = kind;
  out->push_back(std::move(l));
}

}  // namespace

bool IsGlobalUnicast(const uint8_t* b, size_t len) {
  if (len == 16) {
    static constexpr uint8_t kV4Mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(b, kV4Mapped, sizeof(kV4Mapped)) == 0) return IsGlobalUnicast(b + 12, 4);
    static constexpr uint8_t kZero[16] = {};
    if (std::memcmp(b, kZero, 16) == 0) return false;                // ::
    if (std::memcmp(b, kZero, 15) == 0 && b[15] == 1) return false;  // ::1
    if (b[0] == 0xff) return false;                                  // ff00::/8
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return false;         // fe80::/10
    return true;
  }
  if (len == 4) {
    if (b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] == 0) return false;          // 0.0.0.0
    if (b[0] == 255 && b[1] == 255 && b[2] == 255 && b[3] == 255) return false;  // broadcast
    if (b[0] == 127) return false;                                               // 127/8
    if ((b[0] & 0xf0) == 224) return false;                                      // 224/4
    if (b[0] == 169 && b[1] == 254) return false;                                // 169.254/16
    return true;
  }
  return false;
}

Result<std::vector<NlLink>> DumpLinks() {
  NETQOS_ASSIGN_OR_RETURN(NlSockPtr sock, ConnectRoute());
  nl_cache* raw = nullptr;
  int err = rtnl_link_alloc_cache(sock.get(), AF_UNSPEC, &raw);
  if (err < 0) return NlStatus(err, "rtnl_link_alloc_cache");
  NlCachePtr links(raw);
  raw = nullptr;
  err = rtnl_addr_alloc_cache(sock.get(), &raw);
  if (err < 0) return NlStatus(err, "rtnl_addr_alloc_cache");
  NlCachePtr addrs(raw);

  std::vector<NlLink> out;
  nl_cache_foreach(links.get(), CollectLink, &out);
  AddrCollector collected;
  nl_cache_foreach(addrs.get(), CollectAddr, &collected);
  for (auto& l : out) {
    auto it = collected.by_ifindex.find(l.ifindex);
    if (it == collected.by_ifindex.end()) continue;
    l.ipv4 = std::move(it->second.first);
    l.ipv6 = std::move(it->second.second);
  }
  std::sort(out.begin(), out.end(),
            [](const NlLink& a, const NlLink& b) { return a.name < b.name; });
  return out;
}

Result<NlSockPtr> OpenLinkMonitor() {
  NlSockPtr sock(nl_socket_alloc());
  if (!sock) return ResourceExhausted("nl_socket_alloc: out of memory");
  nl_socket_disable_seq_check(sock.get());
  int err = nl_connect(sock.get(), NETLINK_ROUTE);
  if (err < 0) return NlStatus(err, "nl_connect(NETLINK_ROUTE)");
  err = nl_socket_add_memberships(sock.get(), RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR,
                                  RTNLGRP_IPV6_IFADDR, 0);
  if (err < 0) return NlStatus(err, "nl_socket_add_memberships(link, ipv4/ipv6 addr)");
  err = nl_socket_set_nonblocking(sock.get());
  if (err < 0) return NlStatus(err, "nl_socket_set_nonblocking");
  return sock;
}

int NlSocketFd(const NlSockPtr& sock) { return sock ? nl_socket_get_fd(sock.get()) : -1; }

bool DrainLinkMonitor(const NlSockPtr& sock) {
  const int fd = NlSocketFd(sock);
  if (fd < 0) return false;
  alignas(8) char buf[8192];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) continue;
    if (n == 0) return false;
    if (errno == EINTR || errno == ENOBUFS) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

}  // namespace netqos::topology
