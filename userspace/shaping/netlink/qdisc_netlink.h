// libnl-route pieces shared by the shaping installers (HTB and EDT): the owners of libnl objects
// (os/libnl_ptr.h) under short names, a link's name for messages, and what sits at a link's
// root. All work in the calling thread's network namespace, on the socket they are given.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "os/libnl_ptr.h"

struct nl_cache;
struct nl_sock;
struct rtnl_class;
struct rtnl_link;
struct rtnl_qdisc;

namespace netqos::shaping {

using os::ClassPtr;
using os::LinkPtr;
using os::NlCachePtr;
using os::QdiscPtr;

// The link's name, or "ifindex N" if it cannot be read.
std::string LinkName(nl_sock* sock, int ifindex);

// What sits at the root of a link right now.
struct RootQdisc {
  bool present = false;
  std::string kind;
  uint32_t handle = 0;
  uint32_t defcls = 0;  // htb only
};
Result<RootQdisc> ReadRoot(nl_sock* sock, int ifindex, const std::string& nic);

// The kernel's own choice for a fresh device: no qdisc, handle 0: (noqueue, pfifo_fast on
// single-queue devices) or an automatically numbered default kind (mq and its children).
bool IsKernelDefault(const RootQdisc& r);

// Deletes the qdisc (parent, handle) of a link.
Status DeleteQdisc(nl_sock* sock, int ifindex, uint32_t parent, uint32_t handle,
                   const std::string& what);

}  // namespace netqos::shaping
