// The host's cgroup library, libcgroup, for the two things netqos asks of the hierarchy besides
// its own files: where cgroup2 is mounted (libcgroup's mount table, which decodes escaped mount
// paths) and walking the directories under a cgroup (libcgroup's tree walk).
//
// libcgroup 2.0 knows a cgroup2 mount only through the controllers listed in its
// cgroup.controllers. A v2 hierarchy with no controllers (all of them bound to v1 on a hybrid
// host) is invisible to it; those callers fall back to mountinfo and to a plain directory walk,
// and say so in their comments. It also cannot create a cgroup with no controllers or move a task
// into one on v2 (cgroup_create_cgroup and cgroup_attach_task_pid return 0 and do nothing;
// tests/integration/libcgroup_test.cc shows it), and netqos needs no controller at all, so cgroups
// are created with mkdir(2) and tasks moved by writing cgroup.procs.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"

namespace netqos::cgroup {

struct LibcgroupMount {
  std::string path;        // the mount point, escapes decoded
  std::string controller;  // one controller libcgroup lists there (its key for walks)
};

// Every cgroup2 mount point in libcgroup's mount table, in table order, without repeats. Re-reads
// the table on each call (mounts change; callers ask rarely). An error from libcgroup is
// Unavailable; a table with no cgroup2 mount is an empty list.
Result<std::vector<LibcgroupMount>> ListLibcgroupCgroup2Mounts();

// Calls visit(path) for `root` and every directory below it, parents before children, until
// visit returns false or `max_dirs` directories were visited. Paths have no trailing '/'. Uses
// libcgroup's walk when its mount table holds the cgroup2 mount under `root`, else (a hierarchy
// libcgroup does not know) a plain recursive directory walk that does not follow symlinks (cgroupfs
// has none).
Status WalkCgroupDirs(const std::string& root, size_t max_dirs,
                      const std::function<bool(const std::string&)>& visit);

}  // namespace netqos::cgroup
