// Finds where the cgroup v2 (unified) hierarchy is mounted, from /proc/self/mountinfo: at
// /sys/fs/cgroup on unified hosts, at e.g. /sys/fs/cgroup/unified on hybrid (v1 + v2) hosts.
#pragma once

#include <string>

#include "common/status.h"

namespace netqos::cgroup {

// Parses mountinfo text (proc(5) format). Prefers /sys/fs/cgroup, then /sys/fs/cgroup/unified,
// then the first cgroup2 mount listed. Octal escapes in paths (\040 for a space) are decoded.
// No cgroup2 mount gives NotFound.
Result<std::string> FindCgroup2Mount(const std::string& mountinfo_text);

// FindCgroup2Mount over /proc/self/mountinfo.
Result<std::string> DetectCgroup2Mount();

// Decodes the octal escapes the kernel writes in mountinfo paths ("\040" -> ' ').
std::string UnescapeMountinfoPath(const std::string& field);

}  // namespace netqos::cgroup
