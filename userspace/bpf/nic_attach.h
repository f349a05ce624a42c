// Attaches netqos's tc programs (bpf/netqos_nic.bpf.c) to a NIC as cls_bpf filters on its clsact
// qdisc: netqos_ingress at ingress (finds whose a received packet is and picks the ones to shape,
// which a u32 filter right after it redirects to the IFB with act_mirred) and netqos_nic_tx at
// egress (gives every sent packet its HTB class, whatever the sender set). One program instance
// per NIC, sharing the maps Dataplane::Open pinned. The filters hold the programs, so enforcement
// continues after the loading process exits; all calls work in the calling thread's netns.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "bpf/tc_slots.h"
#include "common/status.h"

struct netqos_nic;

namespace netqos::bpf {

// netqos's filters are the ones at tc_slots.h's (pref, handle) of clsact ingress and egress; `tc
// filter show dev X ingress` prints "pref 49374 bpf chain 0 handle 0x6e71 netqos_ingress:[<id>]
// direct-action". Our verdict (the class; at ingress a redirect to the IFB, whose re-injected
// packets skip tc ingress) is the last word.
inline constexpr uint32_t kIngressTcHandle = tc::kHandle;
inline constexpr uint32_t kIngressTcPriority = tc::kPriority;
// The program names the kernel reports for our filters (used to tell ours from a foreign program
// at the same pref/handle).
inline constexpr const char* kIngressProgName = "netqos_ingress";
inline constexpr const char* kEgressProgName = "netqos_nic_tx";

// The redirect to the IFB. netqos_ingress ends with TC_ACT_UNSPEC for a packet the IFB is to shape
// (in direct-action mode: no verdict, the next filter decides) and TC_ACT_OK for all others; the
// next filter is tc_slots.h's redirect rule, one pref above the program's, with `action mirred
// egress redirect dev nqifb<ifindex>`. The redirect is act_mirred's and not the program's
// bpf_redirect(): an IFB takes only packets marked as redirected, with the device they came from,
// which act_mirred does on every kernel and bpf_redirect() only from 6.12 on (before, the IFB
// counts them in rx_dropped and frees them: tests/kernels/ifb_redirect_probe.sh).
inline constexpr uint32_t kIngressRedirectTcPriority = tc::kRedirectPriority;
inline constexpr uint32_t kIngressRedirectU32Node = tc::kRedirectU32Node;

struct IngressAttachOptions {
  std::string pin_dir;  // where Dataplane::Open pinned the maps (they must exist)
  int ifindex = 0;      // the NIC, in the calling thread's network namespace
  int ifb_ifindex = 0;  // redirect target (the NIC's IFB) in the same namespace; 0 = classify only
  // Packets of classes flagged NETQOS_CLASS_F_INGRESS_SHAPED go to the IFB; with this set, so do
  // packets of no class (their level's HTB class there may hold them back).
  bool redirect_unclassified = false;
  // The egress program's mode (see EgressPacing); the ingress program ignores it.
  bool edt = false;
  uint64_t edt_horizon_ns = 0;  // 0 = the program's default (2 s)
  // The egress program marks every IP packet whose class does not set a DSCP (and every packet of
  // no class) with this one (--dscp-default); nullopt: it leaves them as sent.
  std::optional<uint8_t> unmarked_dscp = std::nullopt;
};

// How netqos_nic_tx treats a NIC's sent packets: HTB mode (the default) sets skb->priority to the
// container's HTB leaf; EDT mode sets a departure time from the container's rate in the EDT map
// (fq under the NIC's queues holds the packet until then), drops packets beyond the horizon and
// sets skb->priority to the QoS level's fq band.
struct EgressPacing {
  bool edt = false;
  uint64_t horizon_ns = 0;  // 0 = the program's default (2 s)
};

// A loaded instance of both NIC programs, attached nowhere: what the attach calls below use, and
// what tests and benchmarks run with BPF_PROG_TEST_RUN. The maps are reused from pin_dir:
// FailedPrecondition naming pin_dir if they are not pinned there (libbpf would silently create
// fresh, empty maps the daemon never writes).
class NicPrograms {
 public:
  static Result<std::unique_ptr<NicPrograms>> Load(const IngressAttachOptions& options);
  ~NicPrograms();
  NicPrograms(const NicPrograms&) = delete;
  NicPrograms& operator=(const NicPrograms&) = delete;

  int IngressFd() const;
  int EgressFd() const;
  // What they were loaded with (the NIC's ifindex and IFB only as far as ifb_ifindex != 0).
  const IngressAttachOptions& options() const { return options_; }

 private:
  struct SkeletonDeleter {
    void operator()(netqos_nic* skel) const;
  };
  NicPrograms() = default;
  std::unique_ptr<netqos_nic, SkeletonDeleter> skel_;
  IngressAttachOptions options_;
};

// Loads a fresh instance of the programs, creates the clsact qdisc if missing and attaches
// netqos_ingress at (kIngressTcPriority, kIngressTcHandle) of its ingress with replace
// semantics: a re-attach (daemon restart, other options) swaps the program atomically, without a
// gap. Then, with an ifb_ifindex, the redirect filter at kIngressRedirectTcPriority: left as it is
// when it already sends to that device, swapped atomically when it names another one (the IFB was
// re-created), created when missing; without one, the redirect filter is removed. In this order,
// so the program is in front of the redirect before the redirect exists. NotFound if ifindex or
// ifb_ifindex does not exist in this namespace; FailedPrecondition, and nothing changed, if a
// program that is not netqos_ingress sits at our pref/handle or a filter that is not netqos's
// redirect at kIngressRedirectTcPriority.
Status AttachIngress(const IngressAttachOptions& options);
// The same for netqos_nic_tx at clsact egress (the IFB settings do not matter to it). Switching a
// NIC between HTB and EDT mode re-attaches with the other pacing, atomically.
Status AttachEgress(const std::string& pin_dir, int ifindex, const EgressPacing& pacing = {});
// The same with programs loaded before, so that the verifier runs once per configuration rather
// than on every attach (a daemon re-applies each NIC on every resync). `programs` must have been
// loaded with the same pin_dir and redirect settings (ifb_ifindex zero or not,
// redirect_unclassified) for ingress, and the same pacing for egress: InvalidArgument otherwise.
Status AttachIngress(const IngressAttachOptions& options, const NicPrograms& programs);
Status AttachEgress(int ifindex, const EgressPacing& pacing, const NicPrograms& programs);

// Remove netqos's filters only (at ingress the redirect first: alone, it would send every packet
// to the IFB, then the program). Ok if they are not there, if the device has no clsact qdisc, or
// if the device itself is gone. The clsact qdisc is always left in place: we cannot know whether
// we created it, and other tools (Cilium, tc users) may have filters on it; an empty clsact costs
// next to nothing and goes with the device. FailedPrecondition (nothing removed) if a foreign
// program sits at our pref/handle, or a foreign filter at the redirect's pref.
Status DetachIngress(int ifindex);
Status DetachEgress(int ifindex);

// Whether our program is attached at our pref/handle on ifindex (false also when the device has
// no clsact qdisc). A foreign program there is false. NotFound if the device does not exist.
Result<bool> IngressAttached(int ifindex);
Result<bool> EgressAttached(int ifindex);
// The id of our program there (for its counters, bpf/prog_stats.h); 0 when it is not attached.
Result<uint32_t> IngressProgramId(int ifindex);
Result<uint32_t> EgressProgramId(int ifindex);

// The ifindex netqos's redirect filter on ifindex sends received packets to; 0 when there is none
// (or it has no mirred egress redirect). NotFound if the device does not exist; FailedPrecondition
// if a foreign filter holds the redirect's pref.
Result<int> IngressRedirectTarget(int ifindex);

}  // namespace netqos::bpf
