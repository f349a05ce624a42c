// The time slice the scheduler gives netqosd's threads. On Linux 6.12 and later (EEVDF), a
// SCHED_OTHER thread may ask for its own slice (sched_setattr's sched_runtime); a cgroup's
// entity then takes the shortest slice among its runnable threads, and a running entity is not
// preempted by a woken one before its slice is used up. Each journal flush waits for the
// block layer's flush worker (a per-CPU kblockd kworker) to run on a CPU kept busy by the
// daemon's own threads; with the default slice (1.4 ms on a 2-CPU machine) the worker waited
// most of a flush's time (docs/benchmarks.md, "Group commit").
#pragma once

#include <chrono>

#include "common/status.h"

namespace netqos::os {

// Sets the calling thread's slice, keeping its policy and nice value; threads it starts later
// inherit it, so it is called before any thread starts. Returns the slice the kernel reports
// afterwards: zero on a kernel that has no per-thread slice (which ignores the request).
// FailedPrecondition for a thread not under SCHED_OTHER or SCHED_BATCH (a real-time policy has
// no slice to shorten), Internal naming the call for a refused one.
Result<std::chrono::nanoseconds> SetSchedulerSlice(std::chrono::nanoseconds slice);

}  // namespace netqos::os
