// DirWatcher: lets a thread sleep until something may have happened to a set of directories
// (a file created, deleted or renamed in them, or the directory itself removed). Uses inotify on
// each directory and on its parent; callers still re-check with stat() on every wake-up, and the
// wait has a timeout, so a missed event only delays the check to the next poll.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "os/inotify_watch.h"

namespace netqos::grpcadapter {

class DirWatcher {
 public:
  static Result<std::unique_ptr<DirWatcher>> Create(std::vector<std::string> dirs);
  DirWatcher(const DirWatcher&) = delete;
  DirWatcher& operator=(const DirWatcher&) = delete;

  enum class WaitResult { kTimeout, kEvent, kWoken };
  // Re-adds the watches (a directory may have been recreated with a new inode), then blocks until
  // an inotify event, Wake() or the timeout.
  WaitResult Wait(std::chrono::milliseconds timeout);
  // Thread-safe; interrupts a concurrent or the next Wait().
  void Wake();

 private:
  DirWatcher(std::vector<std::string> dirs, std::unique_ptr<os::InotifyWatch> watch)
      : dirs_(std::move(dirs)), watch_(std::move(watch)) {}
  void Rearm();

  std::vector<std::string> dirs_;
  std::unique_ptr<os::InotifyWatch> watch_;
};

}  // namespace netqos::grpcadapter
