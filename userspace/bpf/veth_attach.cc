// The pod veth programs in netqos's tc slots (tc_slots.h). See veth_attach.h.
#include "bpf/veth_attach.h"

#include <bpf/libbpf.h>
#include <net/if.h>

#include <cerrno>
#include <vector>

#include "bpf/pinned_maps.h"
#include "bpf/tc_slots.h"
#include "common/errno_status.h"
#include "netqos_pod.skel.h"

namespace netqos::bpf {
namespace {

using tc::Direction;

constexpr tc::Side kTx{Direction::kIngress, kPodTxProgName};
constexpr tc::Side kRx{Direction::kEgress, kPodRxProgName};

}  // namespace

Result<std::unique_ptr<VethPrograms>> VethPrograms::Load(const VethProgramOptions& options) {
  NETQOS_RETURN_IF_ERROR(RequirePinned(
      options.pin_dir, {kClassMapName, kVethMapName, kCarrierMapName}, "BPF object netqos_pod"));
  bpf_object_open_opts open_opts{};
  open_opts.sz = sizeof(open_opts);
  open_opts.pin_root_path = options.pin_dir.c_str();
  std::unique_ptr<VethPrograms> p(new VethPrograms());
  p->skel_.reset(netqos_pod__open_opts(&open_opts));
  if (!p->skel_) return ErrnoStatus("open BPF object netqos_pod", errno);
  p->skel_->rodata->cfg_shape_node_local = options.shape_node_local ? 1 : 0;
  if (int err = netqos_pod__load(p->skel_.get()); err) {
    return ErrnoStatus("load BPF object netqos_pod (pin dir " + options.pin_dir + ")", err);
  }
  p->options_ = options;
  return p;
}

void VethPrograms::SkeletonDeleter::operator()(netqos_pod* skel) const {
  netqos_pod__destroy(skel);
}

VethPrograms::~VethPrograms() = default;

int VethPrograms::TxFd() const { return bpf_program__fd(skel_->progs.netqos_pod_tx); }
int VethPrograms::RxFd() const { return bpf_program__fd(skel_->progs.netqos_pod_rx); }

Status AttachVeth(int ifindex, int ifb_ifindex, const VethPrograms& programs) {
  NETQOS_ASSIGN_OR_RETURN(const std::string link, tc::DescribeLink(ifindex, "AttachVeth"));
  const std::string where = "AttachVeth(" + link + ")";
  if (ifb_ifindex < 0 || ifb_ifindex == ifindex) {
    return InvalidArgument(where + ": bad redirect target ifindex " + std::to_string(ifb_ifindex));
  }
  if (ifb_ifindex != 0) {
    // A redirect to a missing device would drop every shaped packet.
    auto ifb = tc::DescribeLink(ifb_ifindex, "AttachVeth redirect target");
    if (!ifb.ok()) return ifb.status().Wrap(where);
  }
  // Every slot is checked before anything changes.
  NETQOS_RETURN_IF_ERROR(tc::SlotIsOurs(ifindex, link, "AttachVeth", kTx).status());
  NETQOS_RETURN_IF_ERROR(tc::SlotIsOurs(ifindex, link, "AttachVeth", kRx).status());
  auto sock = tc::Connect();
  if (!sock.ok()) return sock.status().Wrap(where);
  NETQOS_ASSIGN_OR_RETURN(
      const tc::RedirectSlot redirect,
      tc::ReadRedirect(sock->get(), ifindex, Direction::kEgress, link, "AttachVeth"));
  NETQOS_RETURN_IF_ERROR(tc::AttachProgram(ifindex, link, kTx, programs.TxFd(), "AttachVeth"));
  NETQOS_RETURN_IF_ERROR(tc::AttachProgram(ifindex, link, kRx, programs.RxFd(), "AttachVeth"));
  if (ifb_ifindex == 0) {
    if (!redirect.present) return Status::Ok();
    return tc::DeleteRedirect(sock->get(), ifindex, Direction::kEgress, link).Wrap(where);
  }
  if (redirect.handle && redirect.target == ifb_ifindex) return Status::Ok();
  return tc::PutRedirect(sock->get(), ifindex, Direction::kEgress, link, ifb_ifindex,
                         redirect.handle)
      .Wrap(where);
}

Status DetachVeth(int ifindex) {
  auto link = tc::DescribeLink(ifindex, "DetachVeth");
  if (link.status().code() == StatusCode::kNotFound) return Status::Ok();  // gone with the pod
  if (!link.ok()) return link.status();
  NETQOS_RETURN_IF_ERROR(tc::SlotIsOurs(ifindex, *link, "DetachVeth", kTx).status());
  NETQOS_RETURN_IF_ERROR(tc::SlotIsOurs(ifindex, *link, "DetachVeth", kRx).status());
  NETQOS_ASSIGN_OR_RETURN(os::NlSockPtr sock, tc::Connect());
  NETQOS_ASSIGN_OR_RETURN(
      const tc::RedirectSlot redirect,
      tc::ReadRedirect(sock.get(), ifindex, Direction::kEgress, *link, "DetachVeth"));
  // The rule first: without the program in front of it, it would send every packet to the IFB.
  if (redirect.present) {
    NETQOS_RETURN_IF_ERROR(tc::DeleteRedirect(sock.get(), ifindex, Direction::kEgress, *link));
  }
  NETQOS_RETURN_IF_ERROR(tc::DetachProgram(ifindex, kRx, "DetachVeth"));
  return tc::DetachProgram(ifindex, kTx, "DetachVeth");
}

Result<int> DetachAllVeths() {
  struct if_nameindex* all = ::if_nameindex();
  if (all == nullptr) return ErrnoStatus("if_nameindex", errno);
  std::vector<int> ifindexes;
  for (const struct if_nameindex* i = all; i->if_index != 0; ++i) {
    ifindexes.push_back(static_cast<int>(i->if_index));
  }
  ::if_freenameindex(all);
  int cleaned = 0;
  for (int ifindex : ifindexes) {
    auto a = VethAttached(ifindex);
    if (!a.ok()) {
      if (a.status().code() == StatusCode::kNotFound) continue;  // gone meanwhile
      return a.status();
    }
    if (!a->tx && !a->rx && a->redirect_target == 0) continue;
    NETQOS_RETURN_IF_ERROR(DetachVeth(ifindex));
    ++cleaned;
  }
  return cleaned;
}

Result<VethAttachment> VethAttached(int ifindex) {
  NETQOS_ASSIGN_OR_RETURN(const std::string link, tc::DescribeLink(ifindex, "VethAttached"));
  VethAttachment a;
  NETQOS_ASSIGN_OR_RETURN(a.tx, tc::ProgramAttached(ifindex, kTx, "VethAttached"));
  NETQOS_ASSIGN_OR_RETURN(a.rx, tc::ProgramAttached(ifindex, kRx, "VethAttached"));
  NETQOS_ASSIGN_OR_RETURN(os::NlSockPtr sock, tc::Connect());
  NETQOS_ASSIGN_OR_RETURN(
      const tc::RedirectSlot redirect,
      tc::ReadRedirect(sock.get(), ifindex, Direction::kEgress, link, "VethAttached"));
  a.redirect_target = redirect.handle ? redirect.target : 0;
  return a;
}

}  // namespace netqos::bpf
