// Links and their global unicast addresses as rtnetlink reports them, in the calling thread's
// current network namespace (a netlink socket is bound to the namespace it was created in), plus
// the change-notification socket the kernel topology source watches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "os/libnl_ptr.h"

struct nl_sock;  // libnl

namespace netqos::topology {

using os::NlSockPtr;

struct NlLink {
  int ifindex = 0;
  std::string name;
  unsigned flags = 0;             // IFF_* (net/if.h)
  uint8_t operstate = 0;          // IF_OPER_* (linux/if.h)
  std::string kind;               // IFLA_INFO_KIND ("veth", "bond", ...); "" for plain devices
  std::vector<std::string> ipv4;  // global unicast only, dotted quad, kernel order
  std::vector<std::string> ipv6;  // global unicast only, inet_ntop form
};

// Go's net.IP.IsGlobalUnicast on raw bytes (4 or 16; an IPv4-mapped IPv6 address is judged as
// IPv4): false for unspecified, loopback, multicast, link-local (169.254/16, fe80::/10) and
// 255.255.255.255.
bool IsGlobalUnicast(const uint8_t* bytes, size_t len);

// All links of the current namespace, sorted by name, each with its global unicast addresses.
// An IPv4-mapped IPv6 address goes to ipv4, as Go's To4() does.
Result<std::vector<NlLink>> DumpLinks();

// A non-blocking rtnetlink socket in the current namespace, subscribed to link and IPv4/IPv6
// address notifications. Its fd becomes readable on any change; the content is not needed.
Result<NlSockPtr> OpenLinkMonitor();
int NlSocketFd(const NlSockPtr& sock);

// Reads and discards everything queued on a monitor socket. Returns false when the socket is
// broken (anything but EAGAIN/ENOBUFS); ENOBUFS (lost notifications) counts as a change anyway.
bool DrainLinkMonitor(const NlSockPtr& sock);

}  // namespace netqos::topology
