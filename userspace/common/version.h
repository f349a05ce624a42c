// The netqos release version (CMake's project VERSION), for --version, GetStatus and netqosctl.
#pragma once

#include <string>

namespace netqos {

const char* Version();
// The git commit at configure time ("" when the source was not a git checkout).
const char* Commit();
// The build date, UTC ISO 8601: SOURCE_DATE_EPOCH when it was set at configure time, else the
// commit's date, so that a rebuild of the same source prints the same ("" when neither).
const char* BuildDate();

// The version and, when the source was a git checkout at configure time, its commit
// ("0.1.0+ae75807"): the release named in format stamps (common/format_stamp.h).
std::string ReleaseName();

// What both binaries' --version print after their name:
// "0.1.0 commit=ae75807abcde date=2026-12-06T12:00:00Z" (unknown values as "unknown").
std::string VersionLine();

}  // namespace netqos
