// Finds where the cgroup v2 (unified) hierarchy is mounted: at /sys/fs/cgroup on unified hosts,
// at e.g. /sys/fs/cgroup/unified on hybrid (v1 + v2) hosts. The one answer every part of netqos
// uses (the daemon, netqosctl, the tests; scripts ask `netqosctl cgroup-mount`).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace netqos::cgroup {

// Parses mountinfo text (proc(5) format). Prefers /sys/fs/cgroup, then /sys/fs/cgroup/unified,
// then the first cgroup2 mount listed. Octal escapes in paths (\040 for a space) are decoded.
// No cgroup2 mount gives NotFound.
Result<std::string> FindCgroup2Mount(const std::string& mountinfo_text);

// Picks among cgroup2 mount points: /sys/fs/cgroup, then /sys/fs/cgroup/unified, then the first.
// None is NotFound.
Result<std::string> PreferredCgroup2Mount(const std::vector<std::string>& mounts,
                                          const std::string& source);

// The mount from libcgroup's mount table (cgroup/fs/cgroup_library.h); when libcgroup lists none (a
// v2 hierarchy with no controllers is invisible to it), FindCgroup2Mount over
// /proc/self/mountinfo.
Result<std::string> DetectCgroup2Mount();

// Decodes the octal escapes the kernel writes in mountinfo paths ("\040" -> ' ').
std::string UnescapeMountinfoPath(const std::string& field);

}  // namespace netqos::cgroup
