#include "cgroup/fs/cgroup_dirs.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "cgroup/cgroup_paths.h"

namespace netqos::cgroup {
namespace {

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Depth-first over directories with openat, so a deep tree costs no path building.
void Walk(int dir_fd, std::set<uint64_t>& ids, int depth) {
  if (depth > 32) return;  // cgroup trees are shallow; this bounds a pathological one
  DIR* d = ::fdopendir(dir_fd);
  if (d == nullptr) {
    ::close(dir_fd);
    return;
  }
  while (dirent* e = ::readdir(d)) {
    if (e->d_type != DT_DIR) continue;
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    ids.insert(e->d_ino);
    int child = ::openat(::dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (child >= 0) Walk(child, ids, depth + 1);  // vanished meanwhile: skip
  }
  ::closedir(d);
}

}  // namespace

Result<std::string> ResolveCgroupDir(const std::string& mount,
                                     const std::vector<std::string>& candidates) {
  const std::string base =
      mount.size() > 1 && mount.back() == '/' ? mount.substr(0, mount.size() - 1) : mount;
  for (const auto& c : candidates) {
    const std::string path = CgroupPathUnder(base, c);
    if (IsDirectory(path)) return path;
  }
  std::ostringstream msg;
  msg << "no cgroup directory exists under " << base << " (tried";
  if (candidates.empty()) msg << " nothing";
  for (size_t i = 0; i < candidates.size(); ++i) msg << (i == 0 ? " " : ", ") << candidates[i];
  msg << ")";
  return NotFound(msg.str());
}

Result<uint64_t> CgroupId(const std::string& dir) {
  struct statfs fs {};
  if (::statfs(dir.c_str(), &fs) != 0) {
    const int err = errno;
    Status s(err == ENOENT ? StatusCode::kNotFound : StatusCode::kUnavailable,
             "statfs(" + dir + "): " + std::strerror(err));
    return s;
  }
  if (static_cast<unsigned long>(fs.f_type) != static_cast<unsigned long>(CGROUP2_SUPER_MAGIC)) {
    std::ostringstream msg;
    msg << dir << " is not on a cgroup2 filesystem (statfs magic 0x" << std::hex
        << static_cast<unsigned long>(fs.f_type) << ", want CGROUP2_SUPER_MAGIC 0x"
        << static_cast<unsigned long>(CGROUP2_SUPER_MAGIC) << ")";
    return FailedPrecondition(msg.str());
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    return Status(err == ENOENT ? StatusCode::kNotFound : StatusCode::kUnavailable,
                  "stat(" + dir + "): " + std::strerror(err));
  }
  if (!S_ISDIR(st.st_mode)) return FailedPrecondition(dir + " is not a cgroup directory");
  return static_cast<uint64_t>(st.st_ino);
}

Result<std::set<uint64_t>> ListCgroupIds(const std::string& root) {
  struct stat st {};
  if (::stat(root.c_str(), &st) != 0) {
    return NotFound("stat(" + root + "): " + std::strerror(errno));
  }
  std::set<uint64_t> ids{st.st_ino};
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Internal("open(" + root + "): " + std::strerror(errno));
  Walk(fd, ids, 0);
  return ids;
}

}  // namespace netqos::cgroup
