#include "common/errno_status.h"

#include <cerrno>
#include <cstring>

namespace netqos {

StatusCode ErrnoCode(int err) {
  switch (err < 0 ? -err : err) {
    case ENOENT:
      return StatusCode::kNotFound;
    case EPERM:
    case EACCES:
      return StatusCode::kPermissionDenied;
    case ENOMEM:
    case ENOSPC:
    case E2BIG:
      return StatusCode::kResourceExhausted;
    case EINVAL:
    case ENOTDIR:
      return StatusCode::kInvalidArgument;
    case EAGAIN:
    case EBUSY:
      return StatusCode::kUnavailable;
    default:
      return StatusCode::kInternal;
  }
}

std::string ErrnoMessage(const std::string& what, int err) {
  if (err < 0) err = -err;
  return what + ": " + std::strerror(err) + " (errno " + std::to_string(err) + ")";
}

Status ErrnoStatus(const std::string& what, int err) {
  return Status(ErrnoCode(err), ErrnoMessage(what, err));
}

}  // namespace netqos
