// The reconciler's cgroup tree port over plain directories: the real directory lookups
// (cgroup/fs/cgroup_dirs.h), with a directory's inode number as its id, since a temporary
// directory is not on cgroup2 (where the id is that inode number too).
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "cgroup/fs/cgroup_dirs.h"
#include "common/status.h"
#include "enforce/cgroup_tree.h"

namespace netqos::testing {

inline enforce::CgroupTree PlainCgroupTree() {
  enforce::CgroupTree tree;
  tree.find_dir = cgroup::ResolveCgroupDir;
  tree.cgroup_id = [](const std::string& dir) -> Result<uint64_t> {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return NotFound(dir);
    return static_cast<uint64_t>(st.st_ino);
  };
  tree.list_ids = cgroup::ListCgroupIds;
  return tree;
}

}  // namespace netqos::testing
