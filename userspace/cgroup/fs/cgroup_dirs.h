// Reading the cgroup tree itself: which candidate directory of cgroup/cgroup_paths.h exists,
// a directory's cgroup id, and every id below a root. The reconciler reaches these only through
// its CgroupTree port (enforce/cgroup_tree.h), which the composition root wires to them.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"

namespace netqos::cgroup {

// The first candidate that is an existing directory under `mount`, as an absolute path
// (mount + "/" + candidate). None existing gives NotFound listing what was tried.
Result<std::string> ResolveCgroupDir(const std::string& mount,
                                     const std::vector<std::string>& candidates);

// The cgroup v2 id of `dir`: its inode number, which on cgroup2 equals the 8-byte
// name_to_handle_at handle and what bpf_skb_cgroup_id() returns. `dir` must be on a cgroup2
// filesystem (statfs magic CGROUP2_SUPER_MAGIC); otherwise FailedPrecondition says so.
Result<uint64_t> CgroupId(const std::string& dir);

// The ids (inode numbers) of `root` and every directory below it.
Result<std::set<uint64_t>> ListCgroupIds(const std::string& root);

}  // namespace netqos::cgroup
