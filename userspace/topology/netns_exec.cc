#include "topology/netns_exec.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <system_error>
#include <thread>

namespace netqos::topology {
namespace {

Status ErrnoStatus(int err, const std::string& what) {
  std::string message = what + ": " + std::strerror(err);
  switch (err) {
    case ENOENT:
      return NotFound(std::move(message));
    case EACCES:
    case EPERM:
      return Status(StatusCode::kPermissionDenied, std::move(message));
    case EINVAL:
    case ENOTDIR:
      return InvalidArgument(std::move(message));
    case ENOMEM:
      return ResourceExhausted(std::move(message));
    default:
      return Internal(std::move(message));
  }
}

// Closes an fd on scope exit.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Body of the dedicated thread. Everything it changes (fs info, mount and network namespace)
// belongs to this thread only and is released when the thread exits.
Status EnterAndRun(const std::string& path, const std::function<Status(const std::string&)>& fn,
                   NetnsSysfs sysfs) {
  // Open first: the path lives in the host mount namespace view, which a later private
  // namespace would still show, but failing early gives the clearest error.
  Fd ns(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (ns.get() < 0) return ErrnoStatus(errno, "open(" + path + ")");
  if (sysfs == NetnsSysfs::kMount) {
    // CLONE_FS: a thread shares fs info with its process; a mount namespace of its own needs it
    // unshared first.
    if (::unshare(CLONE_FS | CLONE_NEWNS) != 0)
      return ErrnoStatus(errno, "unshare(CLONE_FS|CLONE_NEWNS) for " + path);
    // Nothing mounted here may propagate back to the host (shared "/" on systemd hosts).
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      return ErrnoStatus(errno, "mount(/, MS_REC|MS_PRIVATE) for " + path);
  }
  if (::setns(ns.get(), CLONE_NEWNET) != 0) return ErrnoStatus(errno, "setns(" + path + ")");
  if (sysfs == NetnsSysfs::kMount) {
    // sysfs shows the network devices of the namespace of the task that mounts it.
    if (::mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
      return ErrnoStatus(errno, "mount(sysfs, /sys) in " + path);
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

}  // namespace netqos::topology
