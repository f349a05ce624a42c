#include "os/libnl_ptr.h"

#include <netlink/cache.h>
#include <netlink/netlink.h>
#include <netlink/route/act/mirred.h>
#include <netlink/route/action.h>
#include <netlink/route/class.h>
#include <netlink/route/classifier.h>
#include <netlink/route/link.h>
#include <netlink/route/qdisc.h>
#include <netlink/socket.h>

namespace netqos::os {

void NlDeleter::operator()(nl_sock* s) const { nl_socket_free(s); }
void NlDeleter::operator()(nl_cache* c) const { nl_cache_free(c); }
void NlDeleter::operator()(rtnl_link* l) const { rtnl_link_put(l); }
void NlDeleter::operator()(rtnl_qdisc* q) const { rtnl_qdisc_put(q); }
void NlDeleter::operator()(rtnl_class* c) const { rtnl_class_put(c); }
void NlDeleter::operator()(rtnl_cls* c) const { rtnl_cls_put(c); }
void NlDeleter::operator()(rtnl_act* a) const { rtnl_act_put(a); }

}  // namespace netqos::os
