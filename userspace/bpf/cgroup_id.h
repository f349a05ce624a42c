// Cgroup ids as the BPF programs see them (the keys of the class and counter maps).
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace netqos::bpf {

// The cgroup v2 id of a cgroup directory: the kernel's cgroup id is the kernfs node id, which is
// both the directory's inode number (what stat reports) and the 8-byte name_to_handle_at handle,
// and it is what bpf_skb_cgroup_id returns. Fails if the path is not on a cgroup2 mount.
Result<uint64_t> CgroupIdOf(const std::string& cgroup_dir);

}  // namespace netqos::bpf
