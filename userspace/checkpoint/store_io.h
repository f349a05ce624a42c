// The I/O errors of the checkpoint store's parts (journal writer, snapshot writer, loader), worded
// alike: "<call>(<path>): <strerror>", always Internal, because they say nothing about the files'
// contents, which DataLoss and InvalidArgument are kept for.
#pragma once

#include <string>

#include "common/status.h"

namespace netqos::checkpoint {

// "<call>(<path>): <strerror of err>".
std::string SysError(const char* call, const std::string& path, int err);
// Internal(SysError(...)).
Status IoError(const char* call, const std::string& path, int err);
// `st` recoded as Internal, keeping its message (OK stays OK).
Status AsIoError(Status st);
// fsync of `dir`, so that a file created, renamed or removed in it stays so after a crash.
Status FsyncDir(const std::string& dir);

}  // namespace netqos::checkpoint
