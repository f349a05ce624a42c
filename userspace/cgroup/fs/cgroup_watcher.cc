#include "cgroup/fs/cgroup_watcher.h"

#include <dirent.h>
#include <spdlog/spdlog.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <thread>
#include <vector>

#include "cgroup/watch_tree.h"
#include "os/inotify_watch.h"

namespace netqos::cgroup {
namespace {

constexpr uint32_t kTreeMask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ONLYDIR;
constexpr uint32_t kAncestorMask =
    IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string Parent(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// A directory that vanished (ENOENT) or was replaced by a file (ENOTDIR) before its watch was
// added: nothing to watch, not an error.
bool GoneAgain(const Status& s) {
  return s.code() == StatusCode::kNotFound || s.code() == StatusCode::kInvalidArgument;
}

// Subdirectory names of `dir` (empty when it cannot be read, e.g. it is already gone).
std::vector<std::string> SubdirNames(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (e->d_type == DT_DIR || (e->d_type == DT_UNKNOWN && IsDirectory(dir + "/" + name))) {
      names.push_back(name);
    }
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

class CgroupWatcher::Impl {
 public:
  Impl(std::string root, CgroupWatcherCallbacks callbacks, CgroupWatcherOptions options)
      : root_(std::move(root)), callbacks_(std::move(callbacks)), options_(options) {
    while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  }

  ~Impl() { Stop(); }

  Status Start() {
    NETQOS_ASSIGN_OR_RETURN(watch_, os::InotifyWatch::Create());
    if (IsDirectory(root_)) {
      NETQOS_RETURN_IF_ERROR(AddRoot(options_.report_existing));
    } else {
      NETQOS_RETURN_IF_ERROR(WaitForRoot());
    }
    try {
      thread_ = std::thread([this] { Run(); });
    } catch (const std::system_error& e) {
      return Unavailable(std::string("cgroup watcher thread: ") + e.what());
    }
    return Status::Ok();
  }

  void Stop() {
    if (!thread_.joinable()) return;
    watch_->Wake();
    thread_.join();
  }

 private:
  static constexpr int kNone = WatchTree::kNone;

  // Watches the root and everything under it (the root itself is never reported).
  Status AddRoot(bool report_children) {
    if (root_wd_ != kNone) return Status::Ok();
    auto added = watch_->Add(root_, kTreeMask);
    if (!added.ok()) return GoneAgain(added.status()) ? Status::Ok() : added.status();
    if (tree_.Contains(*added)) RemoveTree(*added, /*unwatch=*/false);  // a stale node
    if (!tree_.Add(kNone, root_, *added)) return Internal("cgroup watcher: cannot add the root");
    root_wd_ = *added;
    return AddChildren(root_wd_, root_, report_children);
  }

  // Watches the subdirectory `name` of `parent` (its path is `path`) and, recursively, every
  // subdirectory not watched yet. A directory is in the tree before it is listed, so a directory
  // both found by the listing and announced by an IN_CREATE event is reported once.
  Status AddTree(int parent, std::string_view name, const std::string& path, bool report_self,
                 bool report_children) {
    // Known already; or the parent left the tree meanwhile (see below).
    if (!tree_.Contains(parent) || tree_.Child(parent, name) != kNone) return Status::Ok();
    auto added = watch_->Add(path, kTreeMask);
    if (!added.ok()) return GoneAgain(added.status()) ? Status::Ok() : added.status();
    if (tree_.Contains(*added)) {
      // The kernel answered with a descriptor the tree holds elsewhere: the same directory, moved
      // here before its IN_MOVED_FROM was read (inotify returns an inode's existing watch), or a
      // descriptor reused after a removal whose event is still queued. The old place is gone
      // either way: report it, and watch anew so that the old place's queued events (its
      // IN_MOVED_FROM, IN_IGNORED) find nothing.
      RemoveTree(*added, /*unwatch=*/true);
      if (!tree_.Contains(parent)) return Status::Ok();  // the parent was under the old place
      added = watch_->Add(path, kTreeMask);
      if (!added.ok()) return GoneAgain(added.status()) ? Status::Ok() : added.status();
    }
    if (!tree_.Add(parent, name, *added)) {
      return Internal("cgroup watcher: descriptor " + std::to_string(*added) + " of " + path +
                      " is watched twice");
    }
    if (report_self && callbacks_.on_created) callbacks_.on_created(path);
    return AddChildren(*added, path, report_children);
  }

  Status AddChildren(int wd, const std::string& path, bool report) {
    Status first_error;
    for (const auto& name : SubdirNames(path)) {
      Status s = AddTree(wd, name, path + "/" + name, report, report);
      if (!s.ok() && first_error.ok()) first_error = s;
      if (!tree_.Contains(wd)) break;  // removed as a directory's old place (see AddTree)
    }
    return first_error;
  }

  // Reports `wd`'s directory and every directory under it as removed, each after its
  // subdirectories; the walk costs the subtree, not every directory of the node. The root itself
  // is not reported. `unwatch`: the directories still exist elsewhere (moved away), so their
  // watches are removed; a deleted directory's watch the kernel removes itself.
  void RemoveTree(int wd, bool unwatch) {
    if (wd == root_wd_) root_wd_ = kNone;
    // Out of the tree first, reported after: a callback that throws leaves the tree whole.
    for (const auto& gone : tree_.RemoveSubtree(wd)) {
      if (unwatch) watch_->Remove(gone.wd);
      if (gone.path != root_ && callbacks_.on_removed) callbacks_.on_removed(gone.path);
    }
  }

  // Watches the nearest existing ancestor of the missing root, or attaches to the root if it
  // appeared meanwhile (checked after each watch is in place, so no creation is missed).
  Status WaitForRoot() {
    for (;;) {
      if (ancestor_wd_ >= 0) {
        watch_->Remove(ancestor_wd_);
        ancestor_wd_ = -1;
      }
      if (IsDirectory(root_)) return AddRoot(/*report_children=*/true);
      std::string ancestor = Parent(root_);
      while (!IsDirectory(ancestor) && ancestor != "/" && ancestor != ".") {
        ancestor = Parent(ancestor);
      }
      auto added = watch_->Add(ancestor, kAncestorMask);
      if (!added.ok()) {
        if (GoneAgain(added.status())) continue;  // the ancestor vanished; look again
        return added.status();
      }
      ancestor_wd_ = *added;
      // Did a deeper ancestor (or the root) appear before the watch was in place?
      std::string deeper = Parent(root_);
      while (deeper != ancestor && !IsDirectory(deeper)) deeper = Parent(deeper);
      if (IsDirectory(root_) || deeper != ancestor) continue;
      spdlog::info("cgroup watcher: root missing, waiting root={} via={}", root_, ancestor);
      return Status::Ok();
    }
  }

  // After a lost event queue: compare the tree with the directories present and report the
  // difference. A directory counts as the one known only if inotify gives its path the known
  // descriptor: a name removed and made again meanwhile is a new directory (a new cgroup).
  void Rescan() {
    if (root_wd_ != kNone) {
      auto added =
          IsDirectory(root_) ? watch_->Add(root_, kTreeMask) : Result<int>(NotFound(root_));
      if (added.ok() && *added == root_wd_) {
        Report(Resync(root_wd_, root_));
        return;
      }
      RemoveTree(root_wd_, /*unwatch=*/true);
      if (!added.ok() && !GoneAgain(added.status())) Report(added.status());
    }
    Report(WaitForRoot());
  }

  Status Resync(int wd, const std::string& path) {
    const std::vector<std::string> present = SubdirNames(path);  // sorted
    for (const int child : tree_.Children(wd)) {
      if (!std::binary_search(present.begin(), present.end(), tree_.Name(child))) {
        RemoveTree(child, /*unwatch=*/true);
      }
    }
    Status first_error;
    for (const auto& name : present) {
      const std::string child_path = path + "/" + name;
      const int child = tree_.Child(wd, name);
      Status s;
      if (child == kNone) {
        s = AddTree(wd, name, child_path, true, true);
      } else if (auto added = watch_->Add(child_path, kTreeMask); added.ok() && *added == child) {
        s = Resync(child, child_path);
      } else {
        RemoveTree(child, /*unwatch=*/true);
        s = AddTree(wd, name, child_path, true, true);
      }
      if (!s.ok() && first_error.ok()) first_error = s;
      if (!tree_.Contains(wd)) break;  // removed as a directory's old place (see AddTree)
    }
    return first_error;
  }

  void Report(const Status& s) {
    if (s.ok()) return;
    spdlog::error("cgroup watcher: root={} err={}", root_, s.message());
    if (callbacks_.on_error) callbacks_.on_error(s);
  }

  void Handle(const inotify_event& ev) {
    if (ev.mask & IN_Q_OVERFLOW) {
      spdlog::warn("cgroup watcher: inotify queue overflow, rescanning root={}", root_);
      Rescan();
      return;
    }
    if (ev.wd == ancestor_wd_) {
      if (ev.mask & IN_IGNORED) ancestor_wd_ = -1;
      Report(WaitForRoot());
      return;
    }
    if (!tree_.Contains(ev.wd)) return;  // e.g. the IN_IGNORED of a directory removed already
    if (ev.mask & IN_IGNORED) {
      // The kernel dropped the watch: the directory is gone. A subdirectory's removal is
      // reported from its parent's IN_DELETE, which names it; the root has no watched parent.
      if (ev.wd == root_wd_) {
        RemoveTree(root_wd_, /*unwatch=*/false);
        Report(WaitForRoot());
      }
      return;
    }
    if (!(ev.mask & IN_ISDIR) || ev.len == 0) return;
    const std::string_view name(ev.name);
    if (ev.mask & (IN_CREATE | IN_MOVED_TO)) {
      Report(AddTree(ev.wd, name, tree_.Path(ev.wd) + "/" + std::string(name), true, true));
    } else if (ev.mask & (IN_DELETE | IN_MOVED_FROM)) {
      const int child = tree_.Child(ev.wd, name);
      if (child != kNone) RemoveTree(child, /*unwatch=*/(ev.mask & IN_MOVED_FROM) != 0);
    }
  }

  void Run() {
    try {
      for (;;) {
        auto outcome = watch_->Wait(std::chrono::milliseconds(-1), [this](const inotify_event& ev) {
          try {
            Handle(ev);
          } catch (const std::exception& e) {
            Report(Internal(std::string("cgroup watcher event: ") + e.what()));
          } catch (...) {
            Report(Internal("cgroup watcher event: unknown exception"));
          }
        });
        if (!outcome.ok()) {
          Report(Unavailable(outcome.status().message()));
          return;
        }
        if (*outcome == os::InotifyWatch::Outcome::kWoken) return;
      }
    } catch (const std::exception& e) {
      spdlog::error("cgroup watcher thread stopped: root={} err={}", root_, e.what());
    } catch (...) {
      spdlog::error("cgroup watcher thread stopped: root={} err=unknown exception", root_);
    }
  }

  std::string root_;
  CgroupWatcherCallbacks callbacks_;
  CgroupWatcherOptions options_;
  std::unique_ptr<os::InotifyWatch> watch_;
  int ancestor_wd_ = -1;
  int root_wd_ = kNone;  // kNone while the root is missing
  WatchTree tree_;       // every watched directory, the root included
  std::thread thread_;
};

Result<std::unique_ptr<CgroupWatcher>> CgroupWatcher::Start(const std::string& root,
                                                            CgroupWatcherCallbacks callbacks,
                                                            CgroupWatcherOptions options) {
  auto impl = std::make_unique<Impl>(root, std::move(callbacks), options);
  Status s = impl->Start();
  if (!s.ok()) return s.Wrap("cgroup watcher on " + root);
  return std::unique_ptr<CgroupWatcher>(new CgroupWatcher(std::move(impl)));
}

CgroupWatcher::CgroupWatcher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

CgroupWatcher::~CgroupWatcher() { Stop(); }

void CgroupWatcher::Stop() {
  if (impl_) impl_->Stop();
}

}  // namespace netqos::cgroup
