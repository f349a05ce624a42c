// Owners for libnl objects: each frees (or drops its reference to) the object with the call
// libnl pairs with its allocation. The one definition for every netlink user in netqos (topology
// discovery, the shaping installers, the IFB redirect filter).
#pragma once

#include <memory>

struct nl_cache;
struct nl_sock;
struct rtnl_act;
struct rtnl_class;
struct rtnl_cls;
struct rtnl_link;
struct rtnl_qdisc;

namespace netqos::os {

struct NlDeleter {
  void operator()(nl_sock* s) const;     // nl_socket_free
  void operator()(nl_cache* c) const;    // nl_cache_free
  void operator()(rtnl_link* l) const;   // rtnl_link_put
  void operator()(rtnl_qdisc* q) const;  // rtnl_qdisc_put
  void operator()(rtnl_class* c) const;  // rtnl_class_put
  void operator()(rtnl_cls* c) const;    // rtnl_cls_put
  void operator()(rtnl_act* a) const;    // rtnl_act_put
};

using NlSockPtr = std::unique_ptr<nl_sock, NlDeleter>;
using NlCachePtr = std::unique_ptr<nl_cache, NlDeleter>;
using LinkPtr = std::unique_ptr<rtnl_link, NlDeleter>;
using QdiscPtr = std::unique_ptr<rtnl_qdisc, NlDeleter>;
using ClassPtr = std::unique_ptr<rtnl_class, NlDeleter>;
using ClsPtr = std::unique_ptr<rtnl_cls, NlDeleter>;
using ActPtr = std::unique_ptr<rtnl_act, NlDeleter>;

}  // namespace netqos::os
