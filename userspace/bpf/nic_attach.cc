// tc attachment of the NIC programs and of the IFB redirect after netqos_ingress, in netqos's tc
// slots (tc_slots.h). See nic_attach.h.
#include "bpf/nic_attach.h"

#include <bpf/libbpf.h>

#include <cerrno>
#include <memory>

#include "bpf/dataplane.h"
#include "bpf/tc_slots.h"
#include "common/errno_status.h"
#include "netqos_abi.h"
#include "netqos_nic.skel.h"

namespace netqos::bpf {
namespace {

using tc::DescribeLink;
using tc::Direction;

constexpr tc::Side kIngress{Direction::kIngress, kIngressProgName};
constexpr tc::Side kEgress{Direction::kEgress, kEgressProgName};

}  // namespace

Result<std::unique_ptr<NicPrograms>> NicPrograms::Load(const IngressAttachOptions& options) {
  NETQOS_RETURN_IF_ERROR(
      RequirePinned(options.pin_dir,
                    {kClassMapName, kCgroupStatsMapName, kClassStatsMapName, kSockTagMapName,
                     kPodAddrMapName, kFragMapName, kEdtMapName, kAggregateMapName, kVethMapName,
                     kCarrierMapName, kRxOwnerMapName},
                    "BPF object netqos_nic"));
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
  return tc::SlotIsOurs(options.ifindex, link, "AttachIngress", kIngress).status();
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
  auto sock = tc::Connect();
  if (!sock.ok()) return sock.status().Wrap(where);
  NETQOS_ASSIGN_OR_RETURN(
      const tc::RedirectSlot redirect,
      tc::ReadRedirect(sock->get(), options.ifindex, Direction::kIngress, link, "AttachIngress"));
  NETQOS_RETURN_IF_ERROR(
      tc::AttachProgram(options.ifindex, link, kIngress, programs.IngressFd(), "AttachIngress"));
  // The program is in front now. A program that redirects nothing leaves the redirect filter
  // nothing to do; removed all the same, so that `tc filter show` says what happens.
  if (options.ifb_ifindex == 0) {
    if (!redirect.present) return Status::Ok();
    return tc::DeleteRedirect(sock->get(), options.ifindex, Direction::kIngress, link).Wrap(where);
  }
  if (redirect.handle && redirect.target == options.ifb_ifindex) return Status::Ok();
  return tc::PutRedirect(sock->get(), options.ifindex, Direction::kIngress, link,
                         options.ifb_ifindex, redirect.handle)
      .Wrap(where);
}

Status AttachEgress(const std::string& pin_dir, int ifindex, const EgressPacing& pacing) {
  NETQOS_ASSIGN_OR_RETURN(const std::string link, DescribeLink(ifindex, "AttachEgress"));
  NETQOS_RETURN_IF_ERROR(tc::SlotIsOurs(ifindex, link, "AttachEgress", kEgress).status());
  auto progs = NicPrograms::Load(
      {.pin_dir = pin_dir, .edt = pacing.edt, .edt_horizon_ns = pacing.horizon_ns});
  if (!progs.ok()) return progs.status().Wrap("AttachEgress(" + link + ")");
  return tc::AttachProgram(ifindex, link, kEgress, (*progs)->EgressFd(), "AttachEgress");
}

Status AttachEgress(int ifindex, const EgressPacing& pacing, const NicPrograms& programs) {
  NETQOS_ASSIGN_OR_RETURN(const std::string link, DescribeLink(ifindex, "AttachEgress"));
  const IngressAttachOptions& loaded = programs.options();
  if (loaded.edt != pacing.edt || loaded.edt_horizon_ns != pacing.horizon_ns) {
    return InvalidArgument("AttachEgress(" + link +
                           "): the programs were loaded with other pacing");
  }
  return tc::AttachProgram(ifindex, link, kEgress, programs.EgressFd(), "AttachEgress");
}

Status DetachIngress(int ifindex) {
  auto link = DescribeLink(ifindex, "DetachIngress");
  if (link.status().code() == StatusCode::kNotFound) return Status::Ok();  // gone with the device
  if (!link.ok()) return link.status();
  // Both slots are checked before anything is removed.
  NETQOS_RETURN_IF_ERROR(tc::SlotIsOurs(ifindex, *link, "DetachIngress", kIngress).status());
  NETQOS_ASSIGN_OR_RETURN(os::NlSockPtr sock, tc::Connect());
  NETQOS_ASSIGN_OR_RETURN(
      const tc::RedirectSlot redirect,
      tc::ReadRedirect(sock.get(), ifindex, Direction::kIngress, *link, "DetachIngress"));
  // The redirect first: without the program in front of it, it would send every packet to the IFB.
  if (redirect.present)
    NETQOS_RETURN_IF_ERROR(tc::DeleteRedirect(sock.get(), ifindex, Direction::kIngress, *link));
  return tc::DetachProgram(ifindex, kIngress, "DetachIngress");
}
Status DetachEgress(int ifindex) { return tc::DetachProgram(ifindex, kEgress, "DetachEgress"); }

Result<bool> IngressAttached(int ifindex) {
  return tc::ProgramAttached(ifindex, kIngress, "IngressAttached");
}
Result<bool> EgressAttached(int ifindex) {
  return tc::ProgramAttached(ifindex, kEgress, "EgressAttached");
}
Result<uint32_t> IngressProgramId(int ifindex) {
  return tc::AttachedProgramId(ifindex, kIngress, "IngressProgramId");
}
Result<uint32_t> EgressProgramId(int ifindex) {
  return tc::AttachedProgramId(ifindex, kEgress, "EgressProgramId");
}

Result<int> IngressRedirectTarget(int ifindex) {
  NETQOS_ASSIGN_OR_RETURN(const std::string link, DescribeLink(ifindex, "IngressRedirectTarget"));
  NETQOS_ASSIGN_OR_RETURN(os::NlSockPtr sock, tc::Connect());
  NETQOS_ASSIGN_OR_RETURN(
      const tc::RedirectSlot redirect,
      tc::ReadRedirect(sock.get(), ifindex, Direction::kIngress, link, "IngressRedirectTarget"));
  return redirect.handle ? redirect.target : 0;
}

}  // namespace netqos::bpf
