// The netqos release version (CMake's project VERSION), for --version, GetStatus and netqosctl.
#pragma once

#include <string>

namespace netqos {

const char* Version();

// The version and, when the source was a git checkout at configure time, its commit
// ("0.1.0+ae75807"): the release named in format stamps (common/format_stamp.h).
std::string ReleaseName();

}  // namespace netqos
