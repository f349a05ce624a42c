// Reading a whole file that netqos then parses, with a size limit: a huge or endless file (a
// mistake, a hostile write, /dev/zero behind a symlink) is refused before it fills memory.
#pragma once

#include <cstddef>
#include <string>

#include "common/status.h"

namespace netqos {

// The whole of `path`, if it holds at most `max_bytes` bytes. The size is checked with fstat
// before anything is read, and at most max_bytes + 1 bytes are ever read (a file that grows
// while it is read, or one fstat cannot size, such as a pipe, is still caught).
// Errors: OutOfRange "<path> is larger than the limit of <max_bytes> bytes (...)" for a file
// that is too large (callers turn it into their own code: damaged checkpoint, bad input);
// NotFound, PermissionDenied or Internal "open(<path>): <strerror>" when it cannot be read.
Result<std::string> ReadFileAtMost(const std::string& path, size_t max_bytes);

// "larger than the limit of 1048576 bytes (1 MiB)": how the limits read in error messages.
std::string SizeLimitText(size_t max_bytes);

}  // namespace netqos
