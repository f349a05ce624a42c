#include "cgroup/fs/cgroup_library.h"

#include <libcgroup.h>
#include <linux/magic.h>
#include <sys/vfs.h>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <optional>

#include "common/errno_status.h"

namespace netqos::cgroup {
namespace {

// libcgroup keeps its mount table in process-wide state that cgroup_init rebuilds: every use of
// it goes through this lock.
std::mutex& LibraryMutex() {
  static std::mutex mu;
  return mu;
}

Status LibraryError(const std::string& what, int rc) {
  if (rc == ECGOTHER) return ErrnoStatus("libcgroup " + what, cgroup_get_last_errno());
  return Unavailable("libcgroup " + what + ": " + cgroup_strerror(rc) + " (" + std::to_string(rc) +
                     ")");
}

bool IsCgroup2(const char* path) {
  struct statfs sfs {};
  return ::statfs(path, &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC;
}

std::string WithoutTrailingSlash(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

// Caller holds LibraryMutex.
Result<std::vector<LibcgroupMount>> ListLocked() {
  if (int rc = cgroup_init(); rc != 0) return LibraryError("cgroup_init", rc);
  std::vector<LibcgroupMount> out;
  void* controllers = nullptr;
  cgroup_mount_point info{};
  int rc = cgroup_get_controller_begin(&controllers, &info);
  for (; rc == 0; rc = cgroup_get_controller_next(&controllers, &info)) {
    // A controller can be mounted at several places; the first is not always the v2 one.
    void* mounts = nullptr;
    char path[FILENAME_MAX] = {};
    int m = cgroup_get_subsys_mount_point_begin(info.name, &mounts, path);
    for (; m == 0; m = cgroup_get_subsys_mount_point_next(&mounts, path)) {
      if (!IsCgroup2(path)) continue;
      const std::string p = WithoutTrailingSlash(path);
      const bool seen =
          std::any_of(out.begin(), out.end(), [&](const LibcgroupMount& x) { return x.path == p; });
      if (!seen) out.push_back({p, info.name});
    }
    cgroup_get_subsys_mount_point_end(&mounts);
  }
  cgroup_get_controller_end(&controllers);
  if (rc != ECGEOF) return LibraryError("cgroup_get_controller", rc);
  return out;
}

// The known mount that holds `root` (the longest matching mount point), if any.
std::optional<LibcgroupMount> MountHolding(const std::vector<LibcgroupMount>& mounts,
                                           const std::string& root) {
  std::optional<LibcgroupMount> best;
  for (const auto& m : mounts) {
    const bool holds = root == m.path || (root.compare(0, m.path.size(), m.path) == 0 &&
                                          (m.path == "/" || root[m.path.size()] == '/'));
    if (holds && (!best || m.path.size() > best->path.size())) best = m;
  }
  return best;
}

Status WalkWithLibrary(const LibcgroupMount& mount, const std::string& root, size_t max_dirs,
                       const std::function<bool(const std::string&)>& visit) {
  std::string base = root.substr(mount.path.size());
  if (base.empty()) base = "/";
  void* handle = nullptr;
  cgroup_file_info info{};
  int level = 0;
  int rc =
      cgroup_walk_tree_begin(mount.controller.c_str(), base.c_str(), 0, &handle, &info, &level);
  if (rc == 0) rc = cgroup_walk_tree_set_flags(&handle, CGROUP_WALK_TYPE_PRE_DIR);
  size_t visited = 0;
  for (; rc == 0; rc = cgroup_walk_tree_next(0, &handle, &info, level)) {
    if (info.type != CGROUP_FILE_TYPE_DIR || info.full_path == nullptr) continue;
    if (visited++ >= max_dirs || !visit(WithoutTrailingSlash(info.full_path))) {
      rc = ECGEOF;
      break;
    }
  }
  cgroup_walk_tree_end(&handle);
  if (rc != ECGEOF) return LibraryError("cgroup_walk_tree(" + root + ")", rc);
  return Status::Ok();
}

// For a hierarchy libcgroup does not know (see the header).
Status WalkPlain(const std::string& root, size_t max_dirs,
                 const std::function<bool(const std::string&)>& visit) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return NotFound("cgroup walk: " + root + " is not a directory");
  if (max_dirs == 0 || !visit(WithoutTrailingSlash(root))) return Status::Ok();
  size_t visited = 1;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code entry_ec;
    if (it->is_symlink(entry_ec) || !it->is_directory(entry_ec)) continue;
    if (visited++ >= max_dirs || !visit(it->path().string())) return Status::Ok();
  }
  if (ec) return ErrnoStatus("cgroup walk(" + root + ")", ec.value());
  return Status::Ok();
}

}  // namespace

Result<std::vector<LibcgroupMount>> ListLibcgroupCgroup2Mounts() {
  std::lock_guard<std::mutex> lock(LibraryMutex());
  return ListLocked();
}

Status WalkCgroupDirs(const std::string& root, size_t max_dirs,
                      const std::function<bool(const std::string&)>& visit) {
  const std::string r = WithoutTrailingSlash(root);
  {
    std::lock_guard<std::mutex> lock(LibraryMutex());
    auto mounts = ListLocked();
    if (mounts.ok()) {
      if (auto m = MountHolding(*mounts, r)) return WalkWithLibrary(*m, r, max_dirs, visit);
    }
  }
  return WalkPlain(r, max_dirs, visit);
}

}  // namespace netqos::cgroup
