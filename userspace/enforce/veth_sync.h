// Keeps the classification of pods at their veths in step with the pods (bpf/netqos_pod.bpf.c):
// finds each pod's veth (pod_veths.h), gives the containers of those pods carrier slots (written
// to the carrier map before any class entry names them), puts the veth programs on the veths,
// with what the pods receive redirected to their NIC's IFB, and marks the containers' class
// entries (slot, kClassVeth) once their veth is in place. Owned by the Enforcer and called on its
// worker thread only; it reaches the kernel through its ports (veth_ports.h).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/types.h"
#include "enforce/class_table.h"
#include "enforce/desired_state.h"
#include "enforce/pod_veths.h"
#include "enforce/problem_log.h"
#include "enforce/veth_ports.h"
#include "pods/pod_list.h"

namespace netqos::enforce {

struct VethSyncPorts {
  // Null: pods are not classified at their veths (--pod-veths=false), and what an earlier run
  // put on veths is taken away by the first Sync.
  VethSource* source = nullptr;
  VethTable* table = nullptr;
  VethAttacher* attacher = nullptr;
};

// What a Sync did, for the enforcer to report and apply.
struct VethSyncResult {
  // Class entries whose slot or kClassVeth changed, already written to the class map: the caller
  // puts them into its copy of `classes`.
  std::map<uint64_t, ClassEntry> marked;
  std::vector<Problem> problems;
  size_t veths = 0;  // pods classified at their veth
};

class VethSync {
 public:
  explicit VethSync(VethSyncPorts ports) : ports_(ports) {}
  bool enabled() const { return ports_.table && ports_.attacher; }
  // Pods with addresses whose veth the last Sync did not find: a later Sync may (the CNI may
  // create a pod's veth after its containers, or the pod source list its address late).
  bool waiting() const { return ports_.source && unplaced_ > 0; }

  // Takes over what a previous netqosd left: the slots its class entries carry, and its veth map
  // (veths it attached; the next Sync keeps or removes them).
  void Adopt(const std::map<uint64_t, ClassEntry>& current);

  // Gives the entries of `classes` the marks the last Sync settled (slot and kClassVeth for the
  // containers of pods classified at their veth), so a whole pass writes them as they are.
  void ApplyMarks(std::map<uint64_t, DesiredContainer>& classes) const;

  // Finds the veths, plans, and puts in place what the plan needs, in this order: the carrier
  // slots, the programs on each veth (redirecting to the IFB of the NIC `home_ifindex` names) and
  // its veth map entry, then the class entries of `classes` that gain or lose a mark (written
  // through `class_table`, returned in `marked`), then the removal of what no pod needs any more.
  // `full` re-attaches every veth and re-checks both maps against the kernel.
  VethSyncResult Sync(const std::vector<pods::PodInfo>& pods,
                      const std::map<uint64_t, DesiredContainer>& classes,
                      const std::vector<core::NicId>& enforced,
                      const std::map<core::NicId, int>& home_ifindex, ClassTable& class_table,
                      bool full);

 private:
  struct Attached {
    uint64_t cgroup_id = 0;
    int home = 0;  // ifindex of the NIC whose IFB it redirects to
  };
  VethSyncPorts ports_;
  SlotAllocator slots_;
  std::map<int, Attached> attached_;       // veths with our programs and map entry
  std::map<uint16_t, uint64_t> carriers_;  // what the carrier map holds, as we wrote it
  std::map<uint64_t, uint16_t> marks_;     // containers marked kClassVeth -> their slot (0: none)
  size_t unplaced_ = 0;                    // PodVethPlan::unplaced of the last Sync
};

}  // namespace netqos::enforce
