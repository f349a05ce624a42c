#include "grpc/dir_watcher.h"

#include <filesystem>

namespace netqos::grpcadapter {
namespace {

constexpr uint32_t kDirMask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB |
                              IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;
constexpr uint32_t kParentMask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ONLYDIR;

}  // namespace

Result<std::unique_ptr<DirWatcher>> DirWatcher::Create(std::vector<std::string> dirs) {
  NETQOS_ASSIGN_OR_RETURN(auto watch, os::InotifyWatch::Create());
  std::unique_ptr<DirWatcher> w(new DirWatcher(std::move(dirs), std::move(watch)));
  w->Rearm();
  return w;
}

void DirWatcher::Rearm() {
  // inotify_add_watch on an already watched inode just returns its descriptor, so re-adding on
  // every wait is cheap; a missing path (ENOENT) is simply not watched until it reappears, and
  // its parent's watch (or the poll timeout) covers the gap.
  for (const auto& dir : dirs_) {
    (void)watch_->Add(dir, kDirMask);
    auto parent = std::filesystem::path(dir).parent_path();
    if (!parent.empty()) (void)watch_->Add(parent.string(), kParentMask);
  }
}

DirWatcher::WaitResult DirWatcher::Wait(std::chrono::milliseconds timeout) {
  Rearm();
  // A failed poll counts as a timeout: callers re-check on every wake-up anyway.
  auto outcome = watch_->Wait(timeout, nullptr);
  if (!outcome.ok()) return WaitResult::kTimeout;
  switch (*outcome) {
    case os::InotifyWatch::Outcome::kWoken:
      return WaitResult::kWoken;
    case os::InotifyWatch::Outcome::kReady:
      return WaitResult::kEvent;
    case os::InotifyWatch::Outcome::kTimeout:
      break;
  }
  return WaitResult::kTimeout;
}

void DirWatcher::Wake() { watch_->Wake(); }

}  // namespace netqos::grpcadapter
