// What one wake-up of the enforcement worker must touch. A container cgroup appearing needs that
// container's class entry (and leaf) only; the pod-list refresh every few seconds needs nothing
// when the list did not change; everything else recomputes the whole desired state. Kept apart
// from the worker so the rule is tested without a kernel.
#pragma once

#include <cstddef>

namespace netqos::enforce {

struct PendingWork {
  bool resync_due = false;    // the periodic resync (repairs drift in the map, and what changed)
  bool full_due = false;      // ... and it is a full one (repairs drift in everything)
  bool baseline = false;      // a whole pass ran before, so its results can be built upon
  bool pods_read = false;     // the kubelet's pod list was fetched for this wake-up
  bool pods_changed = false;  // ... and it differed from the last one, or could not be read
  // A RemovePod, a topology change, a cgroup removed or a watcher error.
  bool general_event = false;
  // An allocation that changes what is enforced now: a pod with a container already classified
  // (its leaves may change), or any pod while low-priority groups follow the allocations. (Any
  // other allocation needs nothing now: the pod's containers' cgroups bring them in, placed from
  // the pod's newest allocation.)
  bool allocation_needs_pass = false;
  // The last whole pass left listed containers without a cgroup: a refresh re-resolves them.
  bool unresolved = false;
  size_t created_containers = 0;  // cgroups created of containers the pod list names
};

enum class PassScope {
  kNothing,     // the refresh found the same pod list and nothing else happened
  kContainers,  // only the created containers: their entries and leaves are added
  kAll,         // the whole desired state, diffed against the class map and the shaping
  // kAll on the periodic resync: also residual pods and the pod veths. The cgroups resolved
  // before and not reported changed since are taken as they were.
  kResync,
  // kResync, every container's cgroup resolved again and every NIC's shaping re-applied even when
  // its plan is unchanged (which reads its trees back and repairs them).
  kFull,
};

PassScope DecideScope(const PendingWork& w);

const char* PassScopeName(PassScope s);

}  // namespace netqos::enforce
