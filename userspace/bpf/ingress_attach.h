// Attaches netqos's tc ingress classifier (bpf/netqos_ingress.bpf.c) to a NIC as a cls_bpf
// filter on the clsact qdisc: one program instance per NIC (its IFB redirect target is baked into
// rodata), sharing the maps Dataplane::Open pinned. The filter holds the program, so enforcement
// continues after the loading process exits; all calls work in the calling thread's netns.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace netqos::bpf {

// netqos's filter on clsact ingress is the one at this (pref, handle); `tc filter show dev X
// ingress` prints it as "pref 49374 bpf chain 0 handle 0x6e71 netqos_ingress:[<id>] direct-action".
// The handle spells "nq". The pref is high on purpose: lower prefs run first, and our verdict
// (redirect to the IFB, whose re-injected packets skip tc ingress) ends the chain, so every other
// filter (Cilium uses pref 1, tc's auto-assigned prefs are 0xc000 and below) still sees the
// packet first. tc keeps the pref in 16 bits; libbpf rejects larger values.
inline constexpr uint32_t kIngressTcHandle = 0x6e71;
inline constexpr uint32_t kIngressTcPriority = 0xc0de;
// The program name the kernel reports for our filter (used to tell ours from a foreign program
// at the same pref/handle).
inline constexpr const char* kIngressProgName = "netqos_ingress";

struct IngressAttachOptions {
  std::string pin_dir;  // where Dataplane::Open pinned the maps (they must exist)
  int ifindex = 0;      // the NIC, in the calling thread's network namespace
  int ifb_ifindex = 0;  // redirect target in the same namespace; 0 = classify and count only
  // Packets of classes flagged NETQOS_CLASS_F_INGRESS_SHAPED go to the IFB; with this set, so do
  // packets of no class (their level's HTB class there may hold them back).
  bool redirect_unclassified = false;
};

// Loads a fresh instance of the ingress program (maps reused from pin_dir: FailedPrecondition
// naming pin_dir if they are not pinned there), creates the clsact qdisc if missing and attaches
// the program at (kIngressTcPriority, kIngressTcHandle) with replace semantics: a re-attach
// (daemon restart, another IFB) swaps the program atomically, without a gap. The skeleton is
// closed before returning. NotFound if ifindex or ifb_ifindex does not exist in this namespace;
// FailedPrecondition if a program that is not netqos_ingress sits at our pref/handle.
Status AttachIngress(const IngressAttachOptions& options);

// Removes netqos's filter only. Ok if it is not there, if the device has no clsact qdisc, or if
// the device itself is gone. The clsact qdisc is always left in place: libbpf cannot list the
// remaining filters, we cannot know whether we created the qdisc, and other tools (Cilium, tc
// users) may have filters on it; an empty clsact costs next to nothing and goes with the device.
// FailedPrecondition (nothing removed) if a foreign program sits at our pref/handle.
Status DetachIngress(int ifindex);

// Whether netqos_ingress is attached at our pref/handle on ifindex (false also when the device
// has no clsact qdisc). A foreign program there is false. NotFound if the device does not exist.
Result<bool> IngressAttached(int ifindex);

}  // namespace netqos::bpf
