// The enforcer's port for cgroup directories appearing and going away under the kubelet's roots:
// what tells it of a container started between passes. The daemon wires it to the inotify
// watcher (enforce/kernel/inotify_cgroup_watch.h); tests drive the events themselves.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/status.h"

namespace netqos::enforce {

// What a watch reports, from its own thread.
struct CgroupEventHandlers {
  // A directory appeared (one call for each, parents first); `path` under the watched root.
  std::function<void(const std::string& path)> on_created;
  // A directory went away.
  std::function<void(const std::string& path)> on_removed;
  // The watch lost events or watches; it keeps running with what it could watch.
  std::function<void(const Status& error)> on_error;
};

// A running watch. After Stop returns, no handler is called any more.
class CgroupWatch {
 public:
  virtual ~CgroupWatch() = default;
  virtual void Stop() = 0;
};

// Starts watching `root` (possibly not there yet) recursively, reporting what happens through
// `handlers`; an error when the watch cannot be set up.
using WatchCgroups = std::function<Result<std::unique_ptr<CgroupWatch>>(
    const std::string& root, CgroupEventHandlers handlers)>;

}  // namespace netqos::enforce
