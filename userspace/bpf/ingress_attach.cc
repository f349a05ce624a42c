// tc ingress attachment of netqos_ingress through libbpf's bpf_tc_* API. See ingress_attach.h.
#include "bpf/ingress_attach.h"

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
#include "netqos_ingress.skel.h"

namespace netqos::bpf {
namespace {

struct SkelDeleter {
  void operator()(netqos_ingress* s) const { netqos_ingress__destroy(s); }
};

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

bpf_tc_hook IngressHook(int ifindex) {
  bpf_tc_hook hook{};
  hook.sz = sizeof(hook);
  hook.ifindex = ifindex;
  hook.attach_point = BPF_TC_INGRESS;
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
Result<std::optional<uint32_t>> QuerySlot(int ifindex, const std::string& link) {
  bpf_tc_hook hook = IngressHook(ifindex);
  bpf_tc_opts opts = OurSlot();
  const int err = bpf_tc_query(&hook, &opts);
  if (err == -ENOENT || err == -EINVAL) return std::optional<uint32_t>();
  if (err) return ErrnoStatus("bpf_tc_query(" + link + " ingress)", err);
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

// Ok if the slot is free or holds netqos_ingress; FailedPrecondition naming the intruder if not.
Result<bool> SlotIsOurs(int ifindex, const std::string& link, const char* op) {
  NETQOS_ASSIGN_OR_RETURN(std::optional<uint32_t> id, QuerySlot(ifindex, link));
  if (!id) return false;
  NETQOS_ASSIGN_OR_RETURN(std::string name, ProgName(*id));
  if (name.empty()) return false;
  if (name != kIngressProgName) {
    return FailedPrecondition(std::string(op) + "(" + link + "): tc ingress " + SlotText() +
                              " holds program " + std::to_string(*id) + " '" + name + "', not " +
                              kIngressProgName +
                              "; refusing to touch a filter netqos did not create");
  }
  return true;
}

}  // namespace

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
  if (options.pin_dir.empty()) return InvalidArgument(where + ": pin_dir is empty");
  // libbpf would silently create (and pin) fresh, empty maps where none are pinned: the program
  // would then never see the class map the daemon writes.
  for (const char* map :
       {kClassMapName, kCgroupStatsMapName, kClassStatsMapName, kSockTagMapName}) {
    const std::string path = options.pin_dir + "/" + map;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      return FailedPrecondition(where + ": map " + map + " is not pinned in " + options.pin_dir +
                                " (Dataplane::Open creates the maps first)");
    }
  }
  NETQOS_RETURN_IF_ERROR(SlotIsOurs(options.ifindex, link, "AttachIngress").status());

  bpf_object_open_opts open_opts{};
  open_opts.sz = sizeof(open_opts);
  open_opts.pin_root_path = options.pin_dir.c_str();
  std::unique_ptr<netqos_ingress, SkelDeleter> skel(netqos_ingress__open_opts(&open_opts));
  if (!skel) return ErrnoStatus(where + ": open BPF object netqos_ingress", errno);
  skel->rodata->cfg_ifb_ifindex = static_cast<uint32_t>(options.ifb_ifindex);
  skel->rodata->cfg_redirect_unclassified = options.redirect_unclassified ? 1 : 0;
  if (int err = netqos_ingress__load(skel.get()); err) {
    return ErrnoStatus(where + ": load BPF object netqos_ingress (pin dir " + options.pin_dir + ")",
                       err);
  }

  bpf_tc_hook hook = IngressHook(options.ifindex);
  if (int err = bpf_tc_hook_create(&hook); err && err != -EEXIST) {
    return ErrnoStatus("bpf_tc_hook_create(clsact on " + link + ")", err);
  }
  bpf_tc_opts opts = OurSlot();
  opts.prog_fd = bpf_program__fd(skel->progs.netqos_ingress);
  opts.flags = BPF_TC_F_REPLACE;
  if (int err = bpf_tc_attach(&hook, &opts); err) {
    return ErrnoStatus("bpf_tc_attach(" + link + " ingress, " + SlotText() + ")", err);
  }
  // Closing the skeleton drops our fds only: the cls_bpf filter holds the program, and the
  // program holds its maps.
  return Status::Ok();
}

Status DetachIngress(int ifindex) {
  auto link = DescribeLink(ifindex, "DetachIngress");
  if (link.status().code() == StatusCode::kNotFound) return Status::Ok();  // gone with the device
  if (!link.ok()) return link.status();
  NETQOS_ASSIGN_OR_RETURN(bool ours, SlotIsOurs(ifindex, *link, "DetachIngress"));
  if (!ours) return Status::Ok();
  bpf_tc_hook hook = IngressHook(ifindex);
  bpf_tc_opts opts = OurSlot();
  const int err = bpf_tc_detach(&hook, &opts);
  if (err && err != -ENOENT && err != -EINVAL) {
    return ErrnoStatus("bpf_tc_detach(" + *link + " ingress, " + SlotText() + ")", err);
  }
  return Status::Ok();
}

Result<bool> IngressAttached(int ifindex) {
  NETQOS_ASSIGN_OR_RETURN(const std::string link, DescribeLink(ifindex, "IngressAttached"));
  NETQOS_ASSIGN_OR_RETURN(std::optional<uint32_t> id, QuerySlot(ifindex, link));
  if (!id) return false;
  NETQOS_ASSIGN_OR_RETURN(std::string name, ProgName(*id));
  return name == kIngressProgName;
}

}  // namespace netqos::bpf
