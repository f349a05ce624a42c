// Attaches netqos's pod veth programs (bpf/netqos_pod.bpf.c) to the host end of a pod's veth, in
// netqos's tc slots (tc_slots.h): netqos_pod_tx at clsact ingress (what the pod sends: its
// container's carrier slot, for the NIC), netqos_pod_rx at clsact egress (what the pod receives:
// its class) and behind it the redirect rule that sends what the program leaves without a verdict
// to the IFB of the pod's NIC. One loaded instance serves every veth; the maps are the ones
// Dataplane::Open pinned. The filters hold the programs, so classification continues after the
// loading process exits, and they go with the veth. All calls work in the calling thread's netns.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"

struct netqos_pod;

namespace netqos::bpf {

inline constexpr const char* kPodTxProgName = "netqos_pod_tx";
inline constexpr const char* kPodRxProgName = "netqos_pod_rx";

struct VethProgramOptions {
  std::string pin_dir;  // where Dataplane::Open pinned the maps (they must exist)
  // Node-local packets (from the host's own sockets or another pod's veth) are shaped by the
  // receiving pod's ingress cap too; otherwise they pass.
  bool shape_node_local = false;
};

class VethPrograms {
 public:
  // FailedPrecondition naming pin_dir if the maps are not pinned there.
  static Result<std::unique_ptr<VethPrograms>> Load(const VethProgramOptions& options);
  ~VethPrograms();
  VethPrograms(const VethPrograms&) = delete;
  VethPrograms& operator=(const VethPrograms&) = delete;

  int TxFd() const;
  int RxFd() const;
  const VethProgramOptions& options() const { return options_; }

 private:
  struct SkeletonDeleter {
    void operator()(netqos_pod* skel) const;
  };
  VethPrograms() = default;
  std::unique_ptr<netqos_pod, SkeletonDeleter> skel_;
  VethProgramOptions options_;
};

// Attaches both programs (replacing our own atomically) and points the redirect rule at
// ifb_ifindex, or removes it when ifb_ifindex is 0 (nothing of the pod is shaped on ingress).
// The programs go first, so the rule never sees a packet without one in front of it. NotFound if
// a device does not exist in this namespace; FailedPrecondition, nothing changed, if a foreign
// filter holds one of our slots.
Status AttachVeth(int ifindex, int ifb_ifindex, const VethPrograms& programs);
// Removes the redirect rule, then both programs; Ok when they or the device are gone.
Status DetachVeth(int ifindex);

// Detaches our programs from every device of this namespace that has one (--uninstall, before
// the IFBs their redirects point at go). The number of devices cleaned.
Result<int> DetachAllVeths();

struct VethAttachment {
  bool tx = false;  // netqos_pod_tx at clsact ingress
  bool rx = false;  // netqos_pod_rx at clsact egress
  int redirect_target = 0;
};
Result<VethAttachment> VethAttached(int ifindex);

}  // namespace netqos::bpf
