// Writing files that must survive a crash or a power cut: the state directory's journal and
// snapshots, the record of the NICs netqos shaped (which --uninstall needs whole), a migrated
// checkpoint. One implementation of the three steps every such write takes: write every byte,
// fsync the file, fsync the directory that names it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace netqos {

// Writes all of `data` to `fd` (short writes and EINTR are retried). Errors name `path`:
// "write(<path>): No space left on device (errno 28)", coded as ErrnoStatus codes them.
Status WriteAll(int fd, std::string_view data, const std::string& path);

// Writes all of `data` at `offset` of `fd` with pwrite (short writes and EINTR are retried); the
// file position is left alone. Errors as WriteAll's ("pwrite(<path>): ...").
Status PwriteAll(int fd, std::string_view data, uint64_t offset, const std::string& path);

// fsync of a directory, so that a file created, renamed or removed in it stays so after a crash.
Status SyncDir(const std::string& dir);

// Replaces `path` with `contents` so that a crash leaves the old file or the new one, never a
// torn one: written to "<path>.tmp" (mode 0600), fsynced, renamed over `path`, directory fsynced.
Status ReplaceFileDurably(const std::string& path, std::string_view contents);

}  // namespace netqos
