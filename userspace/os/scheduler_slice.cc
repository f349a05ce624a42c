#include "os/scheduler_slice.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

namespace netqos::os {

namespace {

// struct sched_attr as of SCHED_ATTR_SIZE_VER1; glibc before 2.41 has neither the struct nor
// the calls.
struct SchedAttr {
  std::uint32_t size;
  std::uint32_t sched_policy;
  std::uint64_t sched_flags;
  std::int32_t sched_nice;
  std::uint32_t sched_priority;
  std::uint64_t sched_runtime;
  std::uint64_t sched_deadline;
  std::uint64_t sched_period;
  std::uint32_t sched_util_min;
  std::uint32_t sched_util_max;
};

Status CallFailed(const char* call, int err) {
  return Status(StatusCode::kInternal, std::string(call) + ": " + std::strerror(err) + " (errno " +
                                           std::to_string(err) + ")");
}

Result<SchedAttr> GetAttr() {
  SchedAttr attr{};
  if (::syscall(SYS_sched_getattr, 0, &attr, sizeof(attr), 0) != 0) {
    return CallFailed("sched_getattr", errno);
  }
  return attr;
}

}  // namespace

Result<std::chrono::nanoseconds> SetSchedulerSlice(std::chrono::nanoseconds slice) {
  NETQOS_ASSIGN_OR_RETURN(SchedAttr attr, GetAttr());
  if (attr.sched_policy != SCHED_OTHER && attr.sched_policy != SCHED_BATCH) {
    return Status(StatusCode::kFailedPrecondition,
                  "scheduling policy " + std::to_string(attr.sched_policy) +
                      " has no time slice to set (only SCHED_OTHER and SCHED_BATCH do)");
  }
  attr.size = sizeof(attr);
  attr.sched_flags &= 0x01;  // SCHED_FLAG_RESET_ON_FORK, as it was
  attr.sched_runtime = static_cast<std::uint64_t>(slice.count());
  if (::syscall(SYS_sched_setattr, 0, &attr, 0) != 0) return CallFailed("sched_setattr", errno);
  NETQOS_ASSIGN_OR_RETURN(SchedAttr now, GetAttr());
  return std::chrono::nanoseconds(now.sched_runtime);
}

}  // namespace netqos::os
