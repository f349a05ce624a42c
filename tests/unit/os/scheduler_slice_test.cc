// SetSchedulerSlice on the test's own threads: the slice the kernel reports afterwards is the one
// asked for (or zero on a kernel without per-thread slices), a thread started afterwards has it
// too, and the nice value is kept. Each case runs on a thread of its own, so that the test
// runner's main thread keeps its slice.
#include "os/scheduler_slice.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <thread>

namespace {

using std::chrono::microseconds;
using std::chrono::nanoseconds;

// The slice sched_getattr reports for the calling thread (sched_runtime; 0 without support).
uint64_t ReportedSlice() {
  struct {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
    uint32_t util_min, util_max;
  } attr{};
  REQUIRE(::syscall(SYS_sched_getattr, 0, &attr, sizeof(attr), 0) == 0);
  return attr.runtime;
}

template <typename F>
void OnOwnThread(F f) {
  std::thread t(f);
  t.join();
}

}  // namespace

TEST_CASE("SetSchedulerSlice: the kernel reports the slice asked for, and new threads inherit it") {
  OnOwnThread([] {
    auto slice = netqos::os::SetSchedulerSlice(microseconds(300));
    REQUIRE(slice.ok());
    if (slice->count() == 0) {
      // A kernel before 6.12 takes the call and ignores the slice.
      CHECK(ReportedSlice() == 0);
      return;
    }
    CHECK(*slice == nanoseconds(microseconds(300)));
    CHECK(ReportedSlice() == 300000);
    uint64_t inherited = 0;
    std::thread child([&] { inherited = ReportedSlice(); });
    child.join();
    CHECK(inherited == 300000);
  });
}

TEST_CASE("SetSchedulerSlice: keeps the thread's nice value") {
  OnOwnThread([] {
    const pid_t tid = static_cast<pid_t>(::syscall(SYS_gettid));
    // Raising nice needs no privilege; the thread ends with the test, so nothing else sees it.
    REQUIRE(::setpriority(PRIO_PROCESS, static_cast<id_t>(tid), 5) == 0);
    REQUIRE(netqos::os::SetSchedulerSlice(microseconds(200)).ok());
    errno = 0;
    CHECK(::getpriority(PRIO_PROCESS, static_cast<id_t>(tid)) == 5);
    CHECK(errno == 0);
  });
}
