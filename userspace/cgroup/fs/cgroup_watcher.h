// Watches a cgroup subtree (e.g. <mount>/kubepods.slice) with inotify and reports directories
// created and removed in it, at any depth, from a background thread.
//
// inotify limits: one watch per directory, counted against fs.inotify.max_user_watches (per
// user, all processes; often 8192 on older kernels, larger on newer ones) and one instance
// against fs.inotify.max_user_instances. A node with many pods needs about 3 watches per
// container plus a few per pod. When the limit is reached the kernel returns ENOSPC; the
// watcher reports it as ResourceExhausted naming the directory and the current limit (raise it
// with `sysctl fs.inotify.max_user_watches=N`). A queue overflow (IN_Q_OVERFLOW) triggers a
// full rescan, so no creation or removal is lost, only reported late.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/status.h"

namespace netqos::cgroup {

struct CgroupWatcherCallbacks {
  // Called on the watcher thread, one call per directory. A directory created together with its
  // children (mkdir -p a/b/c) gives one call for each of them, parents first.
  std::function<void(const std::string& path)> on_created;
  // Called for each removed directory, children before parents as the kernel removes them.
  std::function<void(const std::string& path)> on_removed;
  // Optional: errors on the watcher thread (e.g. ResourceExhausted when out of watches). They
  // are logged as well; the watcher keeps running with what it could watch.
  std::function<void(const Status& error)> on_error;
};

struct CgroupWatcherOptions {
  // Report every directory that already exists under the root (and the ones in a root that
  // appears later) through on_created, as if it had just been created.
  bool report_existing = false;
};

class CgroupWatcher {
 public:
  // Starts watching `root` recursively. A root that does not exist yet is waited for through its
  // nearest existing ancestor; when it appears its subdirectories are reported as created. Fails
  // when inotify or the thread cannot be set up, or when the watch limit is hit already at start.
  static Result<std::unique_ptr<CgroupWatcher>> Start(const std::string& root,
                                                      CgroupWatcherCallbacks callbacks,
                                                      CgroupWatcherOptions options = {});

  // Stops the thread (through an eventfd) and closes the inotify instance. Idempotent.
  void Stop();
  ~CgroupWatcher();

  CgroupWatcher(const CgroupWatcher&) = delete;
  CgroupWatcher& operator=(const CgroupWatcher&) = delete;

  class Impl;

 private:
  explicit CgroupWatcher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace netqos::cgroup
