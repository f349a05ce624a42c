#include "os/inotify_watch.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

#include "common/errno_status.h"

namespace netqos::os {
namespace {

std::string MaxUserWatches() {
  std::ifstream in("/proc/sys/fs/inotify/max_user_watches");
  std::string v;
  if (!(in >> v)) return "unknown";
  return v;
}

}  // namespace

Result<std::unique_ptr<InotifyWatch>> InotifyWatch::Create(Inotify inotify) {
  Fd in(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!in && inotify == Inotify::kRequired) {
    const int err = errno;
    if (err == EMFILE) {
      return ResourceExhausted(
          "inotify_init1: too many inotify instances (fs.inotify.max_user_instances)");
    }
    return ErrnoStatus("inotify_init1", err);
  }
  Fd wake(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake) return ErrnoStatus("eventfd", errno);
  return std::unique_ptr<InotifyWatch>(new InotifyWatch(std::move(in), std::move(wake)));
}

Result<int> InotifyWatch::Add(const std::string& path, uint32_t mask) {
  if (!inotify_) return FailedPrecondition("inotify_add_watch(" + path + "): no inotify instance");
  const int wd = ::inotify_add_watch(inotify_.get(), path.c_str(), mask);
  if (wd >= 0) return wd;
  const int err = errno;
  if (err == ENOSPC) {
    return ResourceExhausted("inotify_add_watch(" + path +
                             "): ENOSPC: out of inotify watches (fs.inotify.max_user_watches=" +
                             MaxUserWatches() + "); raise it with sysctl");
  }
  return ErrnoStatus("inotify_add_watch(" + path + ")", err);
}

void InotifyWatch::Remove(int wd) {
  if (inotify_) ::inotify_rm_watch(inotify_.get(), wd);
}

void InotifyWatch::Wake() {
  const uint64_t one = 1;
  // Only a counter at its maximum refuses the write, and then a wake-up is pending anyway.
  [[maybe_unused]] auto n = ::write(wake_.get(), &one, sizeof(one));
}

Status InotifyWatch::ReadEvents(const EventHandler& on_event) {
  alignas(inotify_event) char buf[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(inotify_.get(), buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return Status::Ok();
      return ErrnoStatus("read(inotify)", errno);
    }
    if (n == 0) return Status::Ok();
    for (ssize_t off = 0; off < n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
      if (on_event) on_event(*ev);
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
    }
  }
}

Result<InotifyWatch::Outcome> InotifyWatch::Wait(std::chrono::milliseconds timeout,
                                                 const EventHandler& on_event,
                                                 const std::vector<int>& extra,
                                                 std::vector<bool>* extra_ready) {
  std::vector<pollfd> fds;
  fds.reserve(2 + extra.size());
  fds.push_back({wake_.get(), POLLIN, 0});
  fds.push_back({inotify_.get(), POLLIN, 0});  // -1 (no inotify) is ignored by poll
  for (int fd : extra) fds.push_back({fd, POLLIN, 0});
  const int ms =
      timeout.count() < 0 ? -1 : static_cast<int>(std::min<long long>(timeout.count(), 1 << 30));
  const int n = ::poll(fds.data(), fds.size(), ms);
  if (n < 0) {
    if (errno == EINTR) return Outcome::kTimeout;
    return ErrnoStatus("poll", errno);
  }
  if (extra_ready != nullptr) extra_ready->assign(extra.size(), false);
  if (n == 0) return Outcome::kTimeout;
  if (fds[0].revents != 0) {
    uint64_t count = 0;
    [[maybe_unused]] auto r = ::read(wake_.get(), &count, sizeof(count));
    return Outcome::kWoken;
  }
  if (fds[1].revents != 0) NETQOS_RETURN_IF_ERROR(ReadEvents(on_event));
  if (extra_ready != nullptr) {
    for (size_t i = 0; i < extra.size(); ++i) (*extra_ready)[i] = fds[i + 2].revents != 0;
  }
  return Outcome::kReady;
}

}  // namespace netqos::os
