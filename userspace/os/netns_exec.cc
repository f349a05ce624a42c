#include "os/netns_exec.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <system_error>
#include <thread>

#include "common/errno_status.h"
#include "common/fd.h"

namespace netqos::os {
namespace {

// Body of the dedicated thread. Everything it changes (fs info, mount and network namespace)
// belongs to this thread only and is released when the thread exits.
Status EnterAndRun(const std::string& path, const std::function<Status(const std::string&)>& fn,
                   NetnsSysfs sysfs) {
  // Open first: the path lives in the host mount namespace view, which a later private
  // namespace would still show, but failing early gives the clearest error.
  Fd ns(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (ns.get() < 0) return ErrnoStatus("open(" + path + ")", errno);
  if (sysfs == NetnsSysfs::kMount) {
    // CLONE_FS: a thread shares fs info with its process; a mount namespace of its own needs it
    // unshared first.
    if (::unshare(CLONE_FS | CLONE_NEWNS) != 0)
      return ErrnoStatus("unshare(CLONE_FS|CLONE_NEWNS) for " + path, errno);
    // Nothing mounted here may propagate back to the host (shared "/" on systemd hosts).
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      return ErrnoStatus("mount(/, MS_REC|MS_PRIVATE) for " + path, errno);
  }
  if (::setns(ns.get(), CLONE_NEWNET) != 0) return ErrnoStatus("setns(" + path + ")", errno);
  if (sysfs == NetnsSysfs::kMount) {
    // sysfs shows the network devices of the namespace of the task that mounts it.
    if (::mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
      return ErrnoStatus("mount(sysfs, /sys) in " + path, errno);
  }
  return fn("/sys");
}

}  // namespace

Status RunInNetns(const std::string& netns_path,
                  const std::function<Status(const std::string& sysfs_root)>& fn,
                  NetnsSysfs sysfs) {
  if (netns_path.empty()) {
    try {
      return fn("/sys");
    } catch (const std::exception& e) {
      return Internal(std::string("in host namespace: ") + e.what());
    } catch (...) {
      return Internal("in host namespace: unknown exception");
    }
  }
  Status result = Internal("netns thread did not run for " + netns_path);
  try {
    std::thread worker([&] {
      try {
        result = EnterAndRun(netns_path, fn, sysfs);
      } catch (const std::exception& e) {
        result = Internal("in namespace " + netns_path + ": " + e.what());
      } catch (...) {
        result = Internal("in namespace " + netns_path + ": unknown exception");
      }
    });
    worker.join();
  } catch (const std::system_error& e) {
    return Internal("starting a thread for namespace " + netns_path + ": " + e.what());
  }
  return result;
}

}  // namespace netqos::os
