#include "cgroup/fs/cgroup_watcher.h"

#include <dirent.h>
#include <spdlog/spdlog.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <system_error>
#include <thread>
#include <vector>

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
      NETQOS_RETURN_IF_ERROR(AddTree(root_, /*report_self=*/false, options_.report_existing));
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
  // Watches `dir` and, recursively, every subdirectory not watched yet. Directories are marked
  // known before they are listed, so a directory both found by the listing and announced by an
  // IN_CREATE event is reported once.
  Status AddTree(const std::string& dir, bool report_self, bool report_children) {
    if (known_.count(dir) != 0) return Status::Ok();
    auto added = watch_->Add(dir, kTreeMask);
    if (!added.ok()) return GoneAgain(added.status()) ? Status::Ok() : added.status();
    const int wd = *added;
    known_[dir] = wd;
    wd_to_path_[wd] = dir;
    if (report_self && callbacks_.on_created) callbacks_.on_created(dir);
    Status first_error;
    for (const auto& name : SubdirNames(dir)) {
      Status s = AddTree(dir + "/" + name, report_children, report_children);
      if (!s.ok() && first_error.ok()) first_error = s;
    }
    return first_error;
  }

  // Reports `dir` and every known directory under it as removed, deepest first. The paths under
  // `dir` are one run of the sorted map, from "dir/" up to "dir0" ('0' follows '/'), so a removal
  // costs its own subtree, not a pass over every directory of the node.
  void RemoveTree(const std::string& dir, bool unwatch) {
    std::vector<std::string> gone;
    if (known_.count(dir) != 0) gone.push_back(dir);
    for (auto it = known_.lower_bound(dir + '/'), end = known_.lower_bound(dir + '0'); it != end;
         ++it) {
      gone.push_back(it->first);
    }
    std::sort(gone.rbegin(), gone.rend());  // "a/b" sorts after "a": children first
    for (const auto& path : gone) {
      const int wd = known_[path];
      known_.erase(path);
      if (unwatch) watch_->Remove(wd);  // moved away: the inode lives on
      if (path != root_ && callbacks_.on_removed) callbacks_.on_removed(path);
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
      if (IsDirectory(root_)) return AddTree(root_, false, /*report_children=*/true);
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

  // After a lost event queue: compare the tree with what is known and report the difference.
  void Rescan() {
    std::set<std::string> present;
    std::vector<std::string> stack;
    if (IsDirectory(root_)) stack.push_back(root_);
    while (!stack.empty()) {
      const std::string dir = stack.back();
      stack.pop_back();
      present.insert(dir);
      for (const auto& name : SubdirNames(dir)) stack.push_back(dir + "/" + name);
    }
    std::vector<std::string> gone;
    for (const auto& [path, wd] : known_) {
      if (present.count(path) == 0) gone.push_back(path);
    }
    std::sort(gone.rbegin(), gone.rend());
    for (const auto& path : gone) {
      if (known_.count(path) != 0) RemoveTree(path, /*unwatch=*/true);
    }
    if (known_.count(root_) == 0) {
      Report(WaitForRoot());
      return;
    }
    for (const auto& path : present) Report(AddTree(path, true, true));
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
    auto it = wd_to_path_.find(ev.wd);
    if (it == wd_to_path_.end()) return;
    const std::string dir = it->second;
    if (ev.mask & IN_IGNORED) {
      wd_to_path_.erase(it);
      if (dir == root_ && known_.count(root_) != 0 && known_[root_] == ev.wd) {
        RemoveTree(root_, /*unwatch=*/false);
        Report(WaitForRoot());
      }
      return;
    }
    if (!(ev.mask & IN_ISDIR) || ev.len == 0) return;
    const std::string child = dir + "/" + ev.name;
    if (ev.mask & (IN_CREATE | IN_MOVED_TO)) {
      Report(AddTree(child, true, true));
    } else if (ev.mask & (IN_DELETE | IN_MOVED_FROM)) {
      RemoveTree(child, /*unwatch=*/(ev.mask & IN_MOVED_FROM) != 0);
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
  std::map<std::string, int> known_;       // watched directory -> its watch
  std::map<int, std::string> wd_to_path_;  // watch -> directory
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
