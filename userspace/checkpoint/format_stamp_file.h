// The state directory's format stamp (common/format_stamp.h): `netqos_format.json` next to the
// checkpoint, {"generation":1,"min_reader":1,"release":"0.1.0+ae75807"}. Read before the
// checkpoint is, so that an older netqosd refuses a journal or snapshot it would misread instead
// of calling it damaged. Katalyst does not read it.
#pragma once

#include <optional>
#include <string>

#include "common/format_stamp.h"
#include "common/status.h"

namespace netqos::checkpoint {

inline constexpr char kFormatStampFile[] = "netqos_format.json";

// The stamp in `dir`; nullopt when there is none. A file that is not a stamp (too large, not
// JSON, fields missing or of the wrong type) is DataLoss naming it.
Result<std::optional<FormatStamp>> ReadFormatStampFile(const std::string& dir);

// Writes `stamp` durably (a crash leaves the old stamp or the new one). `dir` must exist.
Status WriteFormatStampFile(const std::string& dir, const FormatStamp& stamp);

// Removes the stamp (a missing one is fine).
Status RemoveFormatStampFile(const std::string& dir);

}  // namespace netqos::checkpoint
