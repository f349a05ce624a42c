#include "bpf/cgroup_id.h"

#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <cerrno>

#include "common/errno_status.h"

namespace netqos::bpf {

Result<uint64_t> CgroupIdOf(const std::string& cgroup_dir) {
  struct statfs fs {};
  if (::statfs(cgroup_dir.c_str(), &fs) != 0)
    return ErrnoStatus("statfs(" + cgroup_dir + ")", errno);
  if (static_cast<unsigned long>(fs.f_type) != CGROUP2_SUPER_MAGIC) {
    return InvalidArgument(cgroup_dir + " is not on a cgroup2 mount");
  }
  struct stat st {};
  if (::stat(cgroup_dir.c_str(), &st) != 0) return ErrnoStatus("stat(" + cgroup_dir + ")", errno);
  if (!S_ISDIR(st.st_mode)) return InvalidArgument(cgroup_dir + " is not a directory");
  return static_cast<uint64_t>(st.st_ino);
}

}  // namespace netqos::bpf
