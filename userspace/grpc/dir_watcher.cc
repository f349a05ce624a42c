#include "grpc/dir_watcher.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace netqos::grpcadapter {
namespace {

constexpr uint32_t kDirMask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB |
                              IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;
constexpr uint32_t kParentMask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ONLYDIR;

void Drain(int fd) {
  alignas(inotify_event) char buf[4096];
  while (::read(fd, buf, sizeof buf) > 0) {
  }
}

}  // namespace

Result<std::unique_ptr<DirWatcher>> DirWatcher::Create(std::vector<std::string> dirs) {
  int ifd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (ifd < 0) return Internal(std::string("inotify_init1: ") + std::strerror(errno));
  int efd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (efd < 0) {
    int err = errno;
    ::close(ifd);
    return Internal(std::string("eventfd: ") + std::strerror(err));
  }
  std::unique_ptr<DirWatcher> w(new DirWatcher(std::move(dirs), ifd, efd));
  w->Rearm();
  return w;
}

DirWatcher::DirWatcher(std::vector<std::string> dirs, int inotify_fd, int event_fd)
    : dirs_(std::move(dirs)), inotify_fd_(inotify_fd), event_fd_(event_fd) {}

DirWatcher::~DirWatcher() {
  ::close(inotify_fd_);
  ::close(event_fd_);
}

void DirWatcher::Rearm() {
  // inotify_add_watch on an already watched inode just returns its descriptor, so re-adding on
  // every wait is cheap; a missing path (ENOENT) is simply not watched until it reappears, and
  // its parent's watch (or the poll timeout) covers the gap.
  for (const auto& dir : dirs_) {
    ::inotify_add_watch(inotify_fd_, dir.c_str(), kDirMask);
    auto parent = std::filesystem::path(dir).parent_path();
    if (!parent.empty()) ::inotify_add_watch(inotify_fd_, parent.c_str(), kParentMask);
  }
}

DirWatcher::WaitResult DirWatcher::Wait(std::chrono::milliseconds timeout) {
  Rearm();
  pollfd fds[2] = {{inotify_fd_, POLLIN, 0}, {event_fd_, POLLIN, 0}};
  int n = ::poll(fds, 2, static_cast<int>(timeout.count()));
  if (n <= 0) return WaitResult::kTimeout;
  if (fds[1].revents & POLLIN) {
    Drain(event_fd_);
    return WaitResult::kWoken;
  }
  if (fds[0].revents & POLLIN) Drain(inotify_fd_);
  return WaitResult::kEvent;
}

void DirWatcher::Wake() {
  uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(event_fd_, &one, sizeof one);
}

}  // namespace netqos::grpcadapter
