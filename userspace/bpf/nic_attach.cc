// tc attachment of the NIC programs through libbpf's bpf_tc_* API. See nic_attach.h.
#include "bpf/nic_attach.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <net/if.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <optional>

#include "bpf/dataplane.h"
#include "bpf/libbpf_error.h"
#include "netqos_nic.skel.h"

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
  const int fd = bpf_prog_get_fd_by_id(id);
  if (fd < 0) {
    if (errno == ENOENT) return std::string();
    return ErrnoStatus("bpf_prog_get_fd_by_id(" + std::to_string(id) + ")", errno);
  }
  bpf_prog_info info{};
  uint32_t len = sizeof(info);
  const int err = bpf_obj_get_info_by_fd(fd, &info, &len);
  ::close(fd);
  if (err) return ErrnoStatus("bpf_obj_get_info_by_fd(prog " + std::to_string(id) + ")", err);
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

}  // namespace

Result<std::unique_ptr<NicPrograms>> NicPrograms::Load(const IngressAttachOptions& options) {
  if (options.pin_dir.empty()) return InvalidArgument("load BPF object netqos_nic: pin_dir is empty");
  for (const char* map : {kClassMapName, kCgroupStatsMapName, kClassStatsMapName, kSockTagMapName,
                          kPodAddrMapName, kFragMapName, kEdtMapName}) {
    const std::string path = options.pin_dir + "/" + map;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      return FailedPrecondition(std::string("map ") + map + " is not pinned in " +
                                options.pin_dir + " (Dataplane::Open creates the maps first)");
    }
  }
  bpf_object_open_opts open_opts{};
  open_opts.sz = sizeof(open_opts);
  open_opts.pin_root_path = options.pin_dir.c_str();
  std::unique_ptr<NicPrograms> p(new NicPrograms());
  p->skel_ = netqos_nic__open_opts(&open_opts);
  if (p->skel_ == nullptr) return ErrnoStatus("open BPF object netqos_nic", errno);
  p->skel_->rodata->cfg_ifb_ifindex = static_cast<uint32_t>(options.ifb_ifindex);
  p->skel_->rodata->cfg_redirect_unclassified = options.redirect_unclassified ? 1 : 0;
  p->skel_->rodata->cfg_edt = options.edt ? 1 : 0;
  if (options.edt_horizon_ns != 0) p->skel_->rodata->cfg_edt_horizon_ns = options.edt_horizon_ns;
  if (int err = netqos_nic__load(p->skel_); err) {
    return ErrnoStatus("load BPF object netqos_nic (pin dir " + options.pin_dir + ")", err);
  }
  return p;
}

NicPrograms::~NicPrograms() {
  if (skel_ != nullptr) netqos_nic__destroy(skel_);
}

int NicPrograms::IngressFd() const { return bpf_program__fd(skel_->progs.netqos_ingress); }
int NicPrograms::EgressFd() const { return bpf_program__fd(skel_->progs.netqos_nic_tx); }

Status AttachIngress(const IngressAttachOptions& options) {
  NETQOS_ASSIGN_OR_RETURN(const std::string link, DescribeLink(options.ifindex, "AttachIngress"));
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
  NETQOS_RETURN_IF_ERROR(SlotIsOurs(options.ifindex, link, "AttachIngress", kIngress).status());
  auto progs = NicPrograms::Load(options);
  if (!progs.ok()) return progs.status().Wrap(where);
  // Closing the skeleton afterwards drops our fds only: the cls_bpf filter holds the program,
  // and the program holds its maps.
  return AttachSide(options.ifindex, link, kIngress, (*progs)->IngressFd(), "AttachIngress");
}

Status AttachEgress(const std::string& pin_dir, int ifindex, const EgressPacing& pacing) {
  NETQOS_ASSIGN_OR_RETURN(const std::string link, DescribeLink(ifindex, "AttachEgress"));
  NETQOS_RETURN_IF_ERROR(SlotIsOurs(ifindex, link, "AttachEgress", kEgress).status());
  auto progs = NicPrograms::Load(
      {.pin_dir = pin_dir, .edt = pacing.edt, .edt_horizon_ns = pacing.horizon_ns});
  if (!progs.ok()) return progs.status().Wrap("AttachEgress(" + link + ")");
  return AttachSide(ifindex, link, kEgress, (*progs)->EgressFd(), "AttachEgress");
}

Status DetachIngress(int ifindex) { return DetachSide(ifindex, kIngress, "DetachIngress"); }
Status DetachEgress(int ifindex) { return DetachSide(ifindex, kEgress, "DetachEgress"); }

Result<bool> IngressAttached(int ifindex) {
  return SideAttached(ifindex, kIngress, "IngressAttached");
}
Result<bool> EgressAttached(int ifindex) { return SideAttached(ifindex, kEgress, "EgressAttached"); }

}  // namespace netqos::bpf
