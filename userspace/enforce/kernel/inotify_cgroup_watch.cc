#include "enforce/kernel/inotify_cgroup_watch.h"

#include <utility>

#include "cgroup/fs/cgroup_watcher.h"

namespace netqos::enforce {
namespace {

class InotifyCgroupWatch : public CgroupWatch {
 public:
  explicit InotifyCgroupWatch(std::unique_ptr<cgroup::CgroupWatcher> watcher)
      : watcher_(std::move(watcher)) {}
  void Stop() override { watcher_->Stop(); }

 private:
  std::unique_ptr<cgroup::CgroupWatcher> watcher_;
};

}  // namespace

Result<std::unique_ptr<CgroupWatch>> WatchCgroupsWithInotify(const std::string& root,
                                                             CgroupEventHandlers handlers) {
  cgroup::CgroupWatcherCallbacks cb;
  cb.on_created = std::move(handlers.on_created);
  cb.on_removed = std::move(handlers.on_removed);
  cb.on_error = std::move(handlers.on_error);
  auto watcher = cgroup::CgroupWatcher::Start(root, std::move(cb));
  if (!watcher.ok()) return watcher.status();
  return std::unique_ptr<CgroupWatch>(std::make_unique<InotifyCgroupWatch>(std::move(*watcher)));
}

}  // namespace netqos::enforce
