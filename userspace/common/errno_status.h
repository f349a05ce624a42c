// The one way an errno (or libbpf's negative errno) becomes a Status: the message names the
// failed call and its object and keeps the errno ("setns(/run/netns/x): Invalid argument
// (errno 22)"), and the code is one callers can branch on.
#pragma once

#include <string>

#include "common/status.h"

namespace netqos {

// ENOENT → NotFound; EPERM/EACCES → PermissionDenied; ENOMEM/ENOSPC/E2BIG → ResourceExhausted;
// EINVAL/ENOTDIR → InvalidArgument; EAGAIN/EBUSY → Unavailable; anything else → Internal.
StatusCode ErrnoCode(int err);

// "<what>: <strerror> (errno N)". `err` may be negative (libbpf) or positive (errno).
std::string ErrnoMessage(const std::string& what, int err);

// Status(ErrnoCode(err), ErrnoMessage(what, err)).
Status ErrnoStatus(const std::string& what, int err);

}  // namespace netqos
