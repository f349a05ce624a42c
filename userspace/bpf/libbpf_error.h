// Internal to the bpf adapter: turns the -errno that libbpf's int APIs return (or an errno) into a
// Status that names the failed operation and its object, with a code callers can branch on.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "common/status.h"

namespace netqos::bpf {

// "bpf_tc_attach(ifindex 7 ingress): Invalid argument (errno 22)"; ENOENT → NotFound, no room →
// ResourceExhausted, EPERM/EACCES → PermissionDenied, anything else → Internal. `err` may be
// negative (libbpf) or positive (errno).
inline Status ErrnoStatus(const std::string& what, int err) {
  if (err < 0) err = -err;
  std::string msg = what + ": " + std::strerror(err) + " (errno " + std::to_string(err) + ")";
  switch (err) {
    case ENOENT:
      return NotFound(std::move(msg));
    case E2BIG:
    case ENOSPC:
    case ENOMEM:
      return ResourceExhausted(std::move(msg));
    case EPERM:
    case EACCES:
      return Status(StatusCode::kPermissionDenied, std::move(msg));
    default:
      return Internal(std::move(msg));
  }
}

}  // namespace netqos::bpf
