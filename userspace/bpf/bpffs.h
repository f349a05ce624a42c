// The bpffs under --bpf-pin-dir: checks whether a path is on one and mounts one where the pin
// directory's parent has none (hosts that do not mount /sys/fs/bpf at boot).
#pragma once

#include <string>

#include "common/status.h"

namespace netqos::bpf {

// Whether `path` (which must exist) is on a bpffs (statfs f_type == BPF_FS_MAGIC). Errors name
// the path and errno: NotFound when it does not exist, PermissionDenied for EACCES/EPERM.
Result<bool> IsBpffs(const std::string& path);

// Makes sure pin_dir can be created on a bpffs. When pin_dir exists on a bpffs, nothing is done.
// Otherwise its parent directory (e.g. /sys/fs/bpf for /sys/fs/bpf/netqos) must be on one: this
// creates the parent (and its missing ancestors) if needed and, unless it already is on a
// bpffs, mounts one on it (mount("bpf", parent, "bpf", 0, "mode=0700")). pin_dir itself is not
// created. Returns true when it mounted a bpffs, false when one was already there. Never mounts
// over a non-empty directory (FailedPrecondition naming it): that would hide its files. pin_dir
// must be absolute and below "/" (InvalidArgument). Errors name the path and errno. Logs nothing.
Result<bool> EnsureBpffs(const std::string& pin_dir);

}  // namespace netqos::bpf
