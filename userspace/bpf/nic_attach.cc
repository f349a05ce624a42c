// tc attachment of the NIC programs through libbpf's bpf_tc_* API, and of the IFB redirect after
// netqos_ingress (a u32 filter with act_mirred) through libnl-route. See nic_attach.h.
#include "bpf/nic_attach.h"

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
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

#include "bpf/dataplane.h"
#include "common/errno_status.h"
#include "common/fd.h"
#include "netqos_abi.h"
#include "netqos_nic.skel.h"
#include "os/libnl_ptr.h"
#include "os/nl_error.h"

namespace netqos::bpf {
namespace {

// One direction of a NIC's clsact qdisc, and the program netqos keeps there.
struct Side {
  bpf_tc_attach_point point;
  const char* name;  // "ingress", "egress" (as tc says it)
  const char* prog;
};
constexpr Side kIngress{BPF_TC_INGRESS, "ingress", kIngressProgName};
constexpr Side kEgress{BPF_TC_EGRESS, "egress", kEgressProgName};

// "ifindex 7 (eth0)" when the device exists in the calling thread's namespace; NotFound if not.
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

// "pref 49374 handle 0x6e71", as tc prints our slot.
std::string SlotText() {
  char handle[16];
  std::snprintf(handle, sizeof(handle), "0x%x", kIngressTcHandle);
  return "pref " + std::to_string(kIngressTcPriority) + " handle " + handle;
}

bpf_tc_hook Hook(int ifindex, const Side& side) {
  bpf_tc_hook hook{};
  hook.sz = sizeof(hook);
  hook.ifindex = ifindex;
  hook.attach_point = side.point;
  return hook;
}

bpf_tc_opts OurSlot() {
  bpf_tc_opts opts{};
  opts.sz = sizeof(opts);
  opts.handle = kIngressTcHandle;
  opts.priority = kIngressTcPriority;
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
  if (err) return ErrnoStatus("bpf_tc_query(" + link + " " + side.name + ")", err);
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

// Ok if the slot is free or holds our program; FailedPrecondition naming the intruder if not.
Result<bool> SlotIsOurs(int ifindex, const std::string& link, const char* op, const Side& side) {
  NETQOS_ASSIGN_OR_RETURN(std::optional<uint32_t> id, QuerySlot(ifindex, link, side));
  if (!id) return false;
  NETQOS_ASSIGN_OR_RETURN(std::string name, ProgName(*id));
  if (name.empty()) return false;
  if (name != side.prog) {
    return FailedPrecondition(std::string(op) + "(" + link + "): tc " + side.name + " " +
                              SlotText() + " holds program " + std::to_string(*id) + " '" + name +
                              "', not " + side.prog +
                              "; refusing to touch a filter netqos did not create");
  }
  return true;
}

// Attaches prog_fd at our slot of `side`, replacing our own program there.
Status AttachSide(int ifindex, const std::string& link, const Side& side, int prog_fd,
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
    return ErrnoStatus("bpf_tc_attach(" + link + " " + side.name + ", " + SlotText() + ")", err);
  }
  return Status::Ok();
}

Status DetachSide(int ifindex, const Side& side, const char* op) {
  auto link = DescribeLink(ifindex, op);
  if (link.status().code() == StatusCode::kNotFound) return Status::Ok();  // gone with the device
  if (!link.ok()) return link.status();
  NETQOS_ASSIGN_OR_RETURN(bool ours, SlotIsOurs(ifindex, *link, op, side));
  if (!ours) return Status::Ok();
  bpf_tc_hook hook = Hook(ifindex, side);
  bpf_tc_opts opts = OurSlot();
  const int err = bpf_tc_detach(&hook, &opts);
  if (err && err != -ENOENT && err != -EINVAL) {
    return ErrnoStatus("bpf_tc_detach(" + *link + " " + side.name + ", " + SlotText() + ")", err);
  }
  return Status::Ok();
}

Result<bool> SideAttached(int ifindex, const Side& side, const char* op) {
  NETQOS_ASSIGN_OR_RETURN(const std::string link, DescribeLink(ifindex, op));
  NETQOS_ASSIGN_OR_RETURN(std::optional<uint32_t> id, QuerySlot(ifindex, link, side));
  if (!id) return false;
  NETQOS_ASSIGN_OR_RETURN(std::string name, ProgName(*id));
  return name == side.prog;
}

// --- The IFB redirect: a u32 match-all rule with act_mirred at kIngressRedirectTcPriority. ---

using os::NlStatus;

using os::NlSockPtr;

constexpr uint32_t kClsactIngress = TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS);

// "pref 49375 (u32 ::e71)", as tc shows the redirect's slot.
std::string RedirectSlotText() {
  char node[8];
  std::snprintf(node, sizeof(node), "%x", kIngressRedirectU32Node);
  return "pref " + std::to_string(kIngressRedirectTcPriority) + " (u32 ::" + node + ")";
}

Result<NlSockPtr> Connect() {
  NlSockPtr sock(nl_socket_alloc());
  if (!sock) return ResourceExhausted("nl_socket_alloc: out of memory");
  NETQOS_RETURN_IF_ERROR(
      NlStatus(nl_connect(sock.get(), NETLINK_ROUTE), "nl_connect(NETLINK_ROUTE)"));
  return sock;
}

// What the redirect's pref of clsact ingress holds.
struct RedirectSlot {
  bool present = false;            // some u32 filter, all of it ours (the whole pref goes)
  std::optional<uint32_t> handle;  // our rule's full handle
  int target = 0;                  // where our rule's mirred egress redirect sends; 0 if none
  std::string foreign;             // what is there that netqos did not put there
};

void CollectRedirect(nl_object* obj, void* arg) {
  auto* cls = reinterpret_cast<rtnl_cls*>(obj);
  auto* slot = static_cast<RedirectSlot*>(arg);
  if (rtnl_cls_get_prio(cls) != kIngressRedirectTcPriority) return;
  const char* kind = rtnl_tc_get_kind(TC_CAST(cls));
  const uint32_t handle = rtnl_tc_get_handle(TC_CAST(cls));
  char text[64];
  if (kind == nullptr || std::strcmp(kind, "u32") != 0 || rtnl_cls_get_protocol(cls) != ETH_P_ALL) {
    std::snprintf(text, sizeof(text), "a %s filter (protocol 0x%x, handle 0x%x)",
                  kind != nullptr ? kind : "?", rtnl_cls_get_protocol(cls), handle);
    if (slot->foreign.empty()) slot->foreign = text;
    return;
  }
  slot->present = true;
  if (TC_U32_NODE(handle) == 0) return;  // a hash table of the filter, not a rule
  if (TC_U32_NODE(handle) != kIngressRedirectU32Node) {
    std::snprintf(text, sizeof(text), "u32 rule %x:%x:%x", TC_U32_USERHTID(handle),
                  TC_U32_HASH(handle), TC_U32_NODE(handle));
    if (slot->foreign.empty()) slot->foreign = text;
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

// Reads the redirect's pref; FailedPrecondition naming what is there if it is not all ours.
Result<RedirectSlot> ReadRedirect(nl_sock* sock, int ifindex, const std::string& link,
                                  const char* op) {
  nl_cache* raw = nullptr;
  // No clsact qdisc: an empty dump.
  NETQOS_RETURN_IF_ERROR(NlStatus(rtnl_cls_alloc_cache(sock, ifindex, kClsactIngress, &raw),
                                  "rtnl_cls_alloc_cache(" + link + " ingress)"));
  os::NlCachePtr cache(raw);
  RedirectSlot slot;
  nl_cache_foreach(cache.get(), CollectRedirect, &slot);
  if (!slot.foreign.empty()) {
    return FailedPrecondition(std::string(op) + "(" + link + "): tc ingress " + RedirectSlotText() +
                              " holds " + slot.foreign +
                              ", not netqos's redirect to the IFB; refusing to touch a filter "
                              "netqos did not create");
  }
  return slot;
}

// Points our rule at ifb: replaces it in place (atomically for the packets) when `existing` is
// its handle, creates it otherwise.
Status PutRedirect(nl_sock* sock, int ifindex, const std::string& link, int ifb,
                   std::optional<uint32_t> existing) {
  os::ClsPtr cls(rtnl_cls_alloc());
  os::ActPtr act(rtnl_act_alloc());
  if (!cls || !act) return ResourceExhausted("rtnl_cls_alloc/rtnl_act_alloc: out of memory");
  rtnl_tc_set_ifindex(TC_CAST(cls.get()), ifindex);
  rtnl_tc_set_parent(TC_CAST(cls.get()), kClsactIngress);
  rtnl_cls_set_prio(cls.get(), kIngressRedirectTcPriority);
  rtnl_cls_set_protocol(cls.get(), ETH_P_ALL);
  // A new rule gets only its node id: the kernel puts it in the filter's root hash table, whose
  // id it picks (800: unless other u32 filters share the qdisc).
  rtnl_tc_set_handle(TC_CAST(cls.get()), existing ? *existing : kIngressRedirectU32Node);
  const std::string what = "u32 redirect to ifindex " + std::to_string(ifb) + " at " + link +
                           " ingress " + RedirectSlotText();
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

// Removes the whole u32 filter at the redirect's pref (its rule and hash table).
Status DeleteRedirect(nl_sock* sock, int ifindex, const std::string& link) {
  os::ClsPtr cls(rtnl_cls_alloc());
  if (!cls) return ResourceExhausted("rtnl_cls_alloc: out of memory");
  rtnl_tc_set_ifindex(TC_CAST(cls.get()), ifindex);
  rtnl_tc_set_parent(TC_CAST(cls.get()), kClsactIngress);
  rtnl_cls_set_prio(cls.get(), kIngressRedirectTcPriority);
  rtnl_cls_set_protocol(cls.get(), ETH_P_ALL);
  NETQOS_RETURN_IF_ERROR(
      NlStatus(rtnl_tc_set_kind(TC_CAST(cls.get()), "u32"), "rtnl_tc_set_kind(u32)"));
  const int err = rtnl_cls_delete(sock, cls.get(), 0);
  if (err == -NLE_OBJ_NOTFOUND) return Status::Ok();  // gone meanwhile
  return NlStatus(err, "rtnl_cls_delete(" + link + " ingress " + RedirectSlotText() + ")");
}

}  // namespace

Result<std::unique_ptr<NicPrograms>> NicPrograms::Load(const IngressAttachOptions& options) {
  if (options.pin_dir.empty())
    return InvalidArgument("load BPF object netqos_nic: pin_dir is empty");
  for (const char* map : {kClassMapName, kCgroupStatsMapName, kClassStatsMapName, kSockTagMapName,
                          kPodAddrMapName, kFragMapName, kEdtMapName, kAggregateMapName}) {
    const std::string path = options.pin_dir + "/" + map;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      return FailedPrecondition(std::string("map ") + map + " is not pinned in " + options.pin_dir +
                                " (Dataplane::Open creates the maps first)");
    }
  }
  bpf_object_open_opts open_opts{};
  open_opts.sz = sizeof(open_opts);
  open_opts.pin_root_path = options.pin_dir.c_str();
  std::unique_ptr<NicPrograms> p(new NicPrograms());
  p->skel_.reset(netqos_nic__open_opts(&open_opts));
  if (!p->skel_) return ErrnoStatus("open BPF object netqos_nic", errno);
  p->skel_->rodata->cfg_redirect_to_ifb = options.ifb_ifindex != 0 ? 1 : 0;
  p->skel_->rodata->cfg_redirect_unclassified = options.redirect_unclassified ? 1 : 0;
  p->skel_->rodata->cfg_edt = options.edt ? 1 : 0;
  if (options.unmarked_dscp) {
    p->skel_->rodata->cfg_unmarked_dscp =
        NETQOS_UNMARKED_DSCP_ON | (*options.unmarked_dscp & 0x3fu);
  }
  if (options.edt_horizon_ns != 0) p->skel_->rodata->cfg_edt_horizon_ns = options.edt_horizon_ns;
  if (int err = netqos_nic__load(p->skel_.get()); err) {
    return ErrnoStatus("load BPF object netqos_nic (pin dir " + options.pin_dir + ")", err);
  }
  p->options_ = options;
  return p;
}

void NicPrograms::SkeletonDeleter::operator()(netqos_nic* skel) const { netqos_nic__destroy(skel); }

NicPrograms::~NicPrograms() = default;

int NicPrograms::IngressFd() const { return bpf_program__fd(skel_->progs.netqos_ingress); }
int NicPrograms::EgressFd() const { return bpf_program__fd(skel_->progs.netqos_nic_tx); }

namespace {

// What AttachIngress checks before it changes anything: the redirect target and our slot.
Status CheckIngressTargets(const IngressAttachOptions& options, const std::string& link) {
  const std::string where = "AttachIngress(" + link + ")";
  if (options.ifb_ifindex < 0 || options.ifb_ifindex == options.ifindex) {
    return InvalidArgument(where + ": bad redirect target ifindex " +
                           std::to_string(options.ifb_ifindex));
  }
  if (options.ifb_ifindex != 0) {
    // A redirect to a missing device would drop every classified packet.
    auto ifb = DescribeLink(options.ifb_ifindex, "AttachIngress redirect target");
    if (!ifb.ok()) return ifb.status().Wrap(where);
  }
  return SlotIsOurs(options.ifindex, link, "AttachIngress", kIngress).status();
}

}  // namespace

Status AttachIngress(const IngressAttachOptions& options) {
  NETQOS_ASSIGN_OR_RETURN(const std::string link, DescribeLink(options.ifindex, "AttachIngress"));
  // Checked before the load, which is the expensive part.
  NETQOS_RETURN_IF_ERROR(CheckIngressTargets(options, link));
  auto progs = NicPrograms::Load(options);
  if (!progs.ok()) return progs.status().Wrap("AttachIngress(" + link + ")");
  // Closing the skeleton afterwards drops our fds only: the cls_bpf filter holds the program,
  // and the program holds its maps.
  return AttachIngress(options, **progs);
}

Status AttachIngress(const IngressAttachOptions& options, const NicPrograms& programs) {
  NETQOS_ASSIGN_OR_RETURN(const std::string link, DescribeLink(options.ifindex, "AttachIngress"));
  const IngressAttachOptions& loaded = programs.options();
  if (loaded.pin_dir != options.pin_dir ||
      (loaded.ifb_ifindex != 0) != (options.ifb_ifindex != 0) ||
      loaded.redirect_unclassified != options.redirect_unclassified) {
    return InvalidArgument("AttachIngress(" + link +
                           "): the programs were loaded with other redirect settings");
  }
  const std::string where = "AttachIngress(" + link + ")";
  // Both slots are checked before anything changes.
  NETQOS_RETURN_IF_ERROR(CheckIngressTargets(options, link));
  auto sock = Connect();
  if (!sock.ok()) return sock.status().Wrap(where);
  NETQOS_ASSIGN_OR_RETURN(const RedirectSlot redirect,
                          ReadRedirect(sock->get(), options.ifindex, link, "AttachIngress"));
  NETQOS_RETURN_IF_ERROR(
      AttachSide(options.ifindex, link, kIngress, programs.IngressFd(), "AttachIngress"));
  // The program is in front now. A program that redirects nothing leaves the redirect filter
  // nothing to do; removed all the same, so that `tc filter show` says what happens.
  if (options.ifb_ifindex == 0) {
    if (!redirect.present) return Status::Ok();
    return DeleteRedirect(sock->get(), options.ifindex, link).Wrap(where);
  }
  if (redirect.handle && redirect.target == options.ifb_ifindex) return Status::Ok();
  return PutRedirect(sock->get(), options.ifindex, link, options.ifb_ifindex, redirect.handle)
      .Wrap(where);
}

Status AttachEgress(const std::string& pin_dir, int ifindex, const EgressPacing& pacing) {
  NETQOS_ASSIGN_OR_RETURN(const std::string link, DescribeLink(ifindex, "AttachEgress"));
  NETQOS_RETURN_IF_ERROR(SlotIsOurs(ifindex, link, "AttachEgress", kEgress).status());
  auto progs = NicPrograms::Load(
      {.pin_dir = pin_dir, .edt = pacing.edt, .edt_horizon_ns = pacing.horizon_ns});
  if (!progs.ok()) return progs.status().Wrap("AttachEgress(" + link + ")");
  return AttachSide(ifindex, link, kEgress, (*progs)->EgressFd(), "AttachEgress");
}

Status AttachEgress(int ifindex, const EgressPacing& pacing, const NicPrograms& programs) {
  NETQOS_ASSIGN_OR_RETURN(const std::string link, DescribeLink(ifindex, "AttachEgress"));
  const IngressAttachOptions& loaded = programs.options();
  if (loaded.edt != pacing.edt || loaded.edt_horizon_ns != pacing.horizon_ns) {
    return InvalidArgument("AttachEgress(" + link +
                           "): the programs were loaded with other pacing");
  }
  return AttachSide(ifindex, link, kEgress, programs.EgressFd(), "AttachEgress");
}

Status DetachIngress(int ifindex) {
  auto link = DescribeLink(ifindex, "DetachIngress");
  if (link.status().code() == StatusCode::kNotFound) return Status::Ok();  // gone with the device
  if (!link.ok()) return link.status();
  // Both slots are checked before anything is removed.
  NETQOS_RETURN_IF_ERROR(SlotIsOurs(ifindex, *link, "DetachIngress", kIngress).status());
  NETQOS_ASSIGN_OR_RETURN(NlSockPtr sock, Connect());
  NETQOS_ASSIGN_OR_RETURN(const RedirectSlot redirect,
                          ReadRedirect(sock.get(), ifindex, *link, "DetachIngress"));
  // The redirect first: without the program in front of it, it would send every packet to the IFB.
  if (redirect.present) NETQOS_RETURN_IF_ERROR(DeleteRedirect(sock.get(), ifindex, *link));
  return DetachSide(ifindex, kIngress, "DetachIngress");
}
Status DetachEgress(int ifindex) { return DetachSide(ifindex, kEgress, "DetachEgress"); }

Result<bool> IngressAttached(int ifindex) {
  return SideAttached(ifindex, kIngress, "IngressAttached");
}
Result<bool> EgressAttached(int ifindex) {
  return SideAttached(ifindex, kEgress, "EgressAttached");
}

Result<int> IngressRedirectTarget(int ifindex) {
  NETQOS_ASSIGN_OR_RETURN(const std::string link, DescribeLink(ifindex, "IngressRedirectTarget"));
  NETQOS_ASSIGN_OR_RETURN(NlSockPtr sock, Connect());
  NETQOS_ASSIGN_OR_RETURN(const RedirectSlot redirect,
                          ReadRedirect(sock.get(), ifindex, link, "IngressRedirectTarget"));
  return redirect.handle ? redirect.target : 0;
}

}  // namespace netqos::bpf
