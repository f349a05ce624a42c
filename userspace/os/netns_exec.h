// Runs a function inside a named network namespace without disturbing the rest of the process:
// the work happens on a short-lived dedicated thread, which alone enters the namespace (and, when
// sysfs is wanted, a private mount namespace with a fresh sysfs on /sys). Both die with it.
#pragma once

#include <functional>
#include <string>

#include "common/status.h"

namespace netqos::os {

enum class NetnsSysfs {
  kMount,  // private mount namespace + fresh sysfs on /sys (shows the namespace's links)
  kNone,   // only the network namespace (enough for netlink sockets)
};

// netns_path "" means the host namespace: fn("/sys") runs on the calling thread. Otherwise fn
// runs on a new thread after unshare(CLONE_FS|CLONE_NEWNS), making "/" recursively private,
// setns(CLONE_NEWNET) into netns_path and mounting sysfs on /sys; the calling thread waits.
// Errors name the syscall and the namespace path ("setns(/var/run/netns/x): Invalid argument (errno
// 22)"); a missing namespace file is NotFound, EACCES/EPERM are PermissionDenied. fn's Status is
// returned as is; an exception escaping fn becomes Internal.
Status RunInNetns(const std::string& netns_path,
                  const std::function<Status(const std::string& sysfs_root)>& fn,
                  NetnsSysfs sysfs = NetnsSysfs::kMount);

}  // namespace netqos::os
