// Attaches netqos's tc programs (bpf/netqos_nic.bpf.c) to a NIC as cls_bpf filters on its clsact
// qdisc: netqos_ingress at ingress (finds whose a received packet is, redirects it to the IFB)
// and netqos_nic_tx at egress (gives every sent packet its HTB class, whatever the sender set).
// One program instance per NIC (the IFB redirect target is baked into rodata), sharing the maps
// Dataplane::Open pinned. The filters hold the programs, so enforcement continues after the
// loading process exits; all calls work in the calling thread's netns.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"

struct netqos_nic;

namespace netqos::bpf {

// netqos's filters are the ones at this (pref, handle) of clsact ingress and egress; `tc filter
// show dev X ingress` prints "pref 49374 bpf chain 0 handle 0x6e71 netqos_ingress:[<id>]
// direct-action". The handle spells "nq". The pref is high on purpose: lower prefs run first, so
// every other filter (Cilium uses pref 1, tc's auto-assigned prefs are 0xc000 and below) sees the
// packet before ours, and our verdict (the class; at ingress a redirect to the IFB, whose
// re-injected packets skip tc ingress) is the last word. tc keeps the pref in 16 bits; libbpf
// rejects larger values.
inline constexpr uint32_t kIngressTcHandle = 0x6e71;
inline constexpr uint32_t kIngressTcPriority = 0xc0de;
// The program names the kernel reports for our filters (used to tell ours from a foreign program
// at the same pref/handle).
inline constexpr const char* kIngressProgName = "netqos_ingress";
inline constexpr const char* kEgressProgName = "netqos_nic_tx";

struct IngressAttachOptions {
  std::string pin_dir;  // where Dataplane::Open pinned the maps (they must exist)
  int ifindex = 0;      // the NIC, in the calling thread's network namespace
  int ifb_ifindex = 0;  // redirect target in the same namespace; 0 = classify only
  // Packets of classes flagged NETQOS_CLASS_F_INGRESS_SHAPED go to the IFB; with this set, so do
  // packets of no class (their level's HTB class there may hold them back).
  bool redirect_unclassified = false;
  // The egress program's mode (see EgressPacing); the ingress program ignores it.
  bool edt = false;
  uint64_t edt_horizon_ns = 0;  // 0 = the program's default (2 s)
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

 private:
  NicPrograms() = default;
  netqos_nic* skel_ = nullptr;
};

// Loads a fresh instance of the programs, creates the clsact qdisc if missing and attaches
// netqos_ingress at (kIngressTcPriority, kIngressTcHandle) of its ingress with replace
// semantics: a re-attach (daemon restart, another IFB) swaps the program atomically, without a
// gap. NotFound if ifindex or ifb_ifindex does not exist in this namespace; FailedPrecondition if
// a program that is not netqos_ingress sits at our pref/handle.
Status AttachIngress(const IngressAttachOptions& options);
// The same for netqos_nic_tx at clsact egress (the IFB settings do not matter to it). Switching a
// NIC between HTB and EDT mode re-attaches with the other pacing, atomically.
Status AttachEgress(const std::string& pin_dir, int ifindex, const EgressPacing& pacing = {});

// Remove netqos's filter only. Ok if it is not there, if the device has no clsact qdisc, or if
// the device itself is gone. The clsact qdisc is always left in place: libbpf cannot list the
// remaining filters, we cannot know whether we created the qdisc, and other tools (Cilium, tc
// users) may have filters on it; an empty clsact costs next to nothing and goes with the device.
// FailedPrecondition (nothing removed) if a foreign program sits at our pref/handle.
Status DetachIngress(int ifindex);
Status DetachEgress(int ifindex);

// Whether our program is attached at our pref/handle on ifindex (false also when the device has
// no clsact qdisc). A foreign program there is false. NotFound if the device does not exist.
Result<bool> IngressAttached(int ifindex);
Result<bool> EgressAttached(int ifindex);

}  // namespace netqos::bpf
