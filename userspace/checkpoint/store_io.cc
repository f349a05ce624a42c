#include "checkpoint/store_io.h"

#include <cstring>
#include <utility>

#include "common/durable_file.h"

namespace netqos::checkpoint {

std::string SysError(const char* call, const std::string& path, int err) {
  return std::string(call) + "(" + path + "): " + std::strerror(err);
}

Status IoError(const char* call, const std::string& path, int err) {
  return Internal(SysError(call, path, err));
}

Status AsIoError(Status st) { return st.ok() ? st : Internal(st.message()); }

Status FsyncDir(const std::string& dir) { return AsIoError(SyncDir(dir)); }

}  // namespace netqos::checkpoint
