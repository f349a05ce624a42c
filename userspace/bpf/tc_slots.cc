// The tc slots netqos keeps on a device's clsact qdisc: programs through libbpf's bpf_tc_* API,
// the IFB redirect (a u32 filter with act_mirred) through libnl-route. See tc_slots.h.
#include "bpf/tc_slots.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/tc_act/tc_mirred.h>
#include <net/if.h>
#include <netlink/cache.h>
#include <netlink/netlink.h>
#include <netlink/route/act/mirred.h>
#include <netlink/route/action.h>
#include <netlink/route/classifier.h>
#include <netlink/route/cls/u32.h>
#include <netlink/route/tc.h>
#include <netlink/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/errno_status.h"
#include "common/fd.h"
#include "os/nl_error.h"

namespace netqos::bpf::tc {

using os::NlSockPtr;
using os::NlStatus;

const char* DirectionText(Direction d) { return d == Direction::kIngress ? "ingress" : "egress"; }

Result<std::string> DescribeLink(int ifindex, const char* op) {
  if (ifindex <= 0) {
    return InvalidArgument(std::string(op) + ": bad ifindex " + std::to_string(ifindex));
  }
  char name[IF_NAMESIZE] = {};
  if (::if_indextoname(static_cast<unsigned>(ifindex), name) == nullptr) {
    const int err = errno;
    const std::string what = std::string(op) + ": ifindex " + std::to_string(ifindex);
    if (err == ENXIO || err == ENODEV) return NotFound(what + " does not exist in this netns");
    return ErrnoStatus(what + ": if_indextoname", err);
  }
  return "ifindex " + std::to_string(ifindex) + " (" + name + ")";
}

namespace {

// "pref 49374 handle 0x6e71", as tc prints our slot.
std::string SlotText() {
  char handle[16];
  std::snprintf(handle, sizeof(handle), "0x%x", kHandle);
  return "pref " + std::to_string(kPriority) + " handle " + handle;
}

bpf_tc_hook Hook(int ifindex, const Side& side) {
  bpf_tc_hook hook{};
  hook.sz = sizeof(hook);
  hook.ifindex = ifindex;
  hook.attach_point = side.direction == Direction::kIngress ? BPF_TC_INGRESS : BPF_TC_EGRESS;
  return hook;
}

bpf_tc_opts OurSlot() {
  bpf_tc_opts opts{};
  opts.sz = sizeof(opts);
  opts.handle = kHandle;
  opts.priority = kPriority;
  return opts;
}

// The id of the program at our pref/handle, nullopt if there is none. The kernel answers EINVAL
// (not ENOENT) when the device has no clsact qdisc, or when a foreign filter of another protocol
// holds our pref; either way our filter is not there (one filter kind per pref).
Result<std::optional<uint32_t>> QuerySlot(int ifindex, const std::string& link, const Side& side) {
  bpf_tc_hook hook = Hook(ifindex, side);
  bpf_tc_opts opts = OurSlot();
  const int err = bpf_tc_query(&hook, &opts);
  if (err == -ENOENT || err == -EINVAL) return std::optional<uint32_t>();
  if (err)
    return ErrnoStatus("bpf_tc_query(" + link + " " + DirectionText(side.direction) + ")", err);
  return std::optional<uint32_t>(opts.prog_id);
}

// The kernel's name for program `id` ("" if it went away meanwhile).
Result<std::string> ProgName(uint32_t id) {
  const Fd fd(bpf_prog_get_fd_by_id(id));
  if (!fd) {
    if (errno == ENOENT) return std::string();
    return ErrnoStatus("bpf_prog_get_fd_by_id(" + std::to_string(id) + ")", errno);
  }
  bpf_prog_info info{};
  uint32_t len = sizeof(info);
  if (const int err = bpf_obj_get_info_by_fd(fd.get(), &info, &len); err)
    return ErrnoStatus("bpf_obj_get_info_by_fd(prog " + std::to_string(id) + ")", err);
  return std::string(info.name);
}

}  // namespace

Result<bool> SlotIsOurs(int ifindex, const std::string& link, const char* op, const Side& side) {
  NETQOS_ASSIGN_OR_RETURN(std::optional<uint32_t> id, QuerySlot(ifindex, link, side));
  if (!id) return false;
  NETQOS_ASSIGN_OR_RETURN(std::string name, ProgName(*id));
  if (name.empty()) return false;
  if (name != side.prog) {
    return FailedPrecondition(std::string(op) + "(" + link + "): tc " +
                              DirectionText(side.direction) + " " + SlotText() + " holds program " +
                              std::to_string(*id) + " '" + name + "', not " + side.prog +
                              "; refusing to touch a filter netqos did not create");
  }
  return true;
}

Status AttachProgram(int ifindex, const std::string& link, const Side& side, int prog_fd,
                     const char* op) {
  NETQOS_RETURN_IF_ERROR(SlotIsOurs(ifindex, link, op, side).status());
  bpf_tc_hook hook = Hook(ifindex, side);
  if (int err = bpf_tc_hook_create(&hook); err && err != -EEXIST) {
    return ErrnoStatus("bpf_tc_hook_create(clsact on " + link + ")", err);
  }
  bpf_tc_opts opts = OurSlot();
  opts.prog_fd = prog_fd;
  opts.flags = BPF_TC_F_REPLACE;
  if (int err = bpf_tc_attach(&hook, &opts); err) {
    return ErrnoStatus(
        "bpf_tc_attach(" + link + " " + DirectionText(side.direction) + ", " + SlotText() + ")",
        err);
  }
  return Status::Ok();
}

Status DetachProgram(int ifindex, const Side& side, const char* op) {
  auto link = DescribeLink(ifindex, op);
  if (link.status().code() == StatusCode::kNotFound) return Status::Ok();  // gone with the device
  if (!link.ok()) return link.status();
  NETQOS_ASSIGN_OR_RETURN(bool ours, SlotIsOurs(ifindex, *link, op, side));
  if (!ours) return Status::Ok();
  bpf_tc_hook hook = Hook(ifindex, side);
  bpf_tc_opts opts = OurSlot();
  const int err = bpf_tc_detach(&hook, &opts);
  if (err && err != -ENOENT && err != -EINVAL) {
    return ErrnoStatus(
        "bpf_tc_detach(" + *link + " " + DirectionText(side.direction) + ", " + SlotText() + ")",
        err);
  }
  return Status::Ok();
}

Result<bool> ProgramAttached(int ifindex, const Side& side, const char* op) {
  NETQOS_ASSIGN_OR_RETURN(const uint32_t id, AttachedProgramId(ifindex, side, op));
  return id != 0;
}

Result<uint32_t> AttachedProgramId(int ifindex, const Side& side, const char* op) {
  NETQOS_ASSIGN_OR_RETURN(const std::string link, DescribeLink(ifindex, op));
  NETQOS_ASSIGN_OR_RETURN(std::optional<uint32_t> id, QuerySlot(ifindex, link, side));
  if (!id) return uint32_t{0};
  NETQOS_ASSIGN_OR_RETURN(std::string name, ProgName(*id));
  return name == side.prog ? *id : 0;
}

// --- The IFB redirect: a u32 match-all rule with act_mirred at kRedirectPriority. ---

namespace {

uint32_t Parent(Direction d) {
  return TC_H_MAKE(TC_H_CLSACT, d == Direction::kIngress ? TC_H_MIN_INGRESS : TC_H_MIN_EGRESS);
}

// "pref 49375 (u32 ::e71)", as tc shows the redirect's slot.
std::string RedirectSlotText() {
  char node[8];
  std::snprintf(node, sizeof(node), "%x", kRedirectU32Node);
  return "pref " + std::to_string(kRedirectPriority) + " (u32 ::" + node + ")";
}

}  // namespace

Result<NlSockPtr> Connect() {
  NlSockPtr sock(nl_socket_alloc());
  if (!sock) return ResourceExhausted("nl_socket_alloc: out of memory");
  NETQOS_RETURN_IF_ERROR(
      NlStatus(nl_connect(sock.get(), NETLINK_ROUTE), "nl_connect(NETLINK_ROUTE)"));
  return sock;
}

namespace {

// A RedirectSlot as it is read, with what is there that netqos did not put there.
struct Collected {
  RedirectSlot slot;
  std::string foreign;
};

void CollectRedirect(nl_object* obj, void* arg) {
  auto* cls = reinterpret_cast<rtnl_cls*>(obj);
  auto* c = static_cast<Collected*>(arg);
  RedirectSlot* slot = &c->slot;
  if (rtnl_cls_get_prio(cls) != kRedirectPriority) return;
  const char* kind = rtnl_tc_get_kind(TC_CAST(cls));
  const uint32_t handle = rtnl_tc_get_handle(TC_CAST(cls));
  char text[64];
  if (kind == nullptr || std::strcmp(kind, "u32") != 0 || rtnl_cls_get_protocol(cls) != ETH_P_ALL) {
    std::snprintf(text, sizeof(text), "a %s filter (protocol 0x%x, handle 0x%x)",
                  kind != nullptr ? kind : "?", rtnl_cls_get_protocol(cls), handle);
    if (c->foreign.empty()) c->foreign = text;
    return;
  }
  slot->present = true;
  if (TC_U32_NODE(handle) == 0) return;  // a hash table of the filter, not a rule
  if (TC_U32_NODE(handle) != kRedirectU32Node) {
    std::snprintf(text, sizeof(text), "u32 rule %x:%x:%x", TC_U32_USERHTID(handle),
                  TC_U32_HASH(handle), TC_U32_NODE(handle));
    if (c->foreign.empty()) c->foreign = text;
    return;
  }
  slot->handle = handle;
  rtnl_act* act = rtnl_u32_get_action(cls);
  const char* act_kind = act != nullptr ? rtnl_tc_get_kind(TC_CAST(act)) : nullptr;
  if (act_kind != nullptr && std::strcmp(act_kind, "mirred") == 0 &&
      rtnl_mirred_get_action(act) == TCA_EGRESS_REDIR) {
    slot->target = static_cast<int>(rtnl_mirred_get_ifindex(act));
  }
}

}  // namespace

Result<RedirectSlot> ReadRedirect(nl_sock* sock, int ifindex, Direction d, const std::string& link,
                                  const char* op) {
  nl_cache* raw = nullptr;
  // No clsact qdisc: an empty dump.
  NETQOS_RETURN_IF_ERROR(NlStatus(rtnl_cls_alloc_cache(sock, ifindex, Parent(d), &raw),
                                  "rtnl_cls_alloc_cache(" + link + " " + DirectionText(d) + ")"));
  os::NlCachePtr cache(raw);
  Collected c;
  nl_cache_foreach(cache.get(), CollectRedirect, &c);
  if (!c.foreign.empty()) {
    return FailedPrecondition(std::string(op) + "(" + link + "): tc " + DirectionText(d) + " " +
                              RedirectSlotText() + " holds " + c.foreign +
                              ", not netqos's redirect to the IFB; refusing to touch a filter "
                              "netqos did not create");
  }
  return c.slot;
}

Status PutRedirect(nl_sock* sock, int ifindex, Direction d, const std::string& link, int ifb,
                   std::optional<uint32_t> existing) {
  os::ClsPtr cls(rtnl_cls_alloc());
  os::ActPtr act(rtnl_act_alloc());
  if (!cls || !act) return ResourceExhausted("rtnl_cls_alloc/rtnl_act_alloc: out of memory");
  rtnl_tc_set_ifindex(TC_CAST(cls.get()), ifindex);
  rtnl_tc_set_parent(TC_CAST(cls.get()), Parent(d));
  rtnl_cls_set_prio(cls.get(), kRedirectPriority);
  rtnl_cls_set_protocol(cls.get(), ETH_P_ALL);
  // A new rule gets only its node id: the kernel puts it in the filter's root hash table, whose
  // id it picks (800: unless other u32 filters share the qdisc).
  rtnl_tc_set_handle(TC_CAST(cls.get()), existing ? *existing : kRedirectU32Node);
  const std::string what = "u32 redirect to ifindex " + std::to_string(ifb) + " at " + link + " " +
                           DirectionText(d) + " " + RedirectSlotText();
  int err = rtnl_tc_set_kind(TC_CAST(cls.get()), "u32");
  if (err >= 0) err = rtnl_u32_add_key_uint32(cls.get(), 0, 0, 0, 0);  // every packet
  if (err >= 0) err = rtnl_u32_set_cls_terminal(cls.get());            // run its action
  if (err >= 0) err = rtnl_tc_set_kind(TC_CAST(act.get()), "mirred");
  if (err >= 0) err = rtnl_mirred_set_action(act.get(), TCA_EGRESS_REDIR);
  if (err >= 0) err = rtnl_mirred_set_policy(act.get(), TC_ACT_STOLEN);
  if (err >= 0) err = rtnl_mirred_set_ifindex(act.get(), static_cast<uint32_t>(ifb));
  if (err >= 0) err = rtnl_u32_add_action(cls.get(), act.get());  // takes its own reference
  NETQOS_RETURN_IF_ERROR(NlStatus(err, "building the " + what));
  const int flags = NLM_F_CREATE | (existing ? NLM_F_REPLACE : NLM_F_EXCL);
  return NlStatus(rtnl_cls_add(sock, cls.get(), flags), "rtnl_cls_add(" + what + ")");
}

Status DeleteRedirect(nl_sock* sock, int ifindex, Direction d, const std::string& link) {
  os::ClsPtr cls(rtnl_cls_alloc());
  if (!cls) return ResourceExhausted("rtnl_cls_alloc: out of memory");
  rtnl_tc_set_ifindex(TC_CAST(cls.get()), ifindex);
  rtnl_tc_set_parent(TC_CAST(cls.get()), Parent(d));
  rtnl_cls_set_prio(cls.get(), kRedirectPriority);
  rtnl_cls_set_protocol(cls.get(), ETH_P_ALL);
  NETQOS_RETURN_IF_ERROR(
      NlStatus(rtnl_tc_set_kind(TC_CAST(cls.get()), "u32"), "rtnl_tc_set_kind(u32)"));
  const int err = rtnl_cls_delete(sock, cls.get(), 0);
  if (err == -NLE_OBJ_NOTFOUND) return Status::Ok();  // gone meanwhile
  return NlStatus(
      err, "rtnl_cls_delete(" + link + " " + DirectionText(d) + " " + RedirectSlotText() + ")");
}

}  // namespace netqos::bpf::tc
