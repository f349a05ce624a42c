// What the reconciler reads of the cgroup tree, as a port: cgroup/fs/cgroup_dirs.h has the real
// one (the composition root wires it), so the enforce layer does no file system I/O of its own,
// and tests can resolve plain directories or a table.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"

namespace netqos::enforce {

// The id of a cgroup directory (what bpf_skb_cgroup_id returns for its sockets).
using CgroupIdFn = std::function<Result<uint64_t>(const std::string& dir)>;

struct CgroupTree {
  // The first of `candidates` (relative to `mount`) that is an existing directory, as an absolute
  // path; NotFound naming what was tried.
  std::function<Result<std::string>(const std::string& mount,
                                    const std::vector<std::string>& candidates)>
      find_dir;
  CgroupIdFn cgroup_id;
  // The ids of `root` and of every directory below it.
  std::function<Result<std::set<uint64_t>>(const std::string& root)> list_ids;

  // Which member is unset ("" when none), for the error that refuses an incomplete port.
  std::string Missing() const {
    if (!find_dir) return "find_dir";
    if (!cgroup_id) return "cgroup_id";
    if (!list_ids) return "list_ids";
    return "";
  }
};

}  // namespace netqos::enforce
