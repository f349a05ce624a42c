#include "common/durable_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "common/errno_status.h"
#include "common/fd.h"

namespace netqos {

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("write(" + path + ")", errno);
    }
    off += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status PwriteAll(int fd, std::string_view data, uint64_t offset, const std::string& path) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n =
        ::pwrite(fd, data.data() + off, data.size() - off, static_cast<off_t>(offset + off));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("pwrite(" + path + ")", errno);
    }
    off += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status SyncDir(const std::string& dir) {
  const std::string name = dir.empty() ? "." : dir;
  const Fd fd(::open(name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return ErrnoStatus("open(" + name + ")", errno);
  if (::fsync(fd.get()) != 0) return ErrnoStatus("fsync(" + name + ")", errno);
  return Status::Ok();
}

Status ReplaceFileDurably(const std::string& path, std::string_view contents) {
  const std::string tmp = path + ".tmp";
  {
    const Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (!fd) return ErrnoStatus("open(" + tmp + ")", errno);
    NETQOS_RETURN_IF_ERROR(WriteAll(fd.get(), contents, tmp));
    if (::fsync(fd.get()) != 0) return ErrnoStatus("fsync(" + tmp + ")", errno);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return ErrnoStatus("rename(" + tmp + ", " + path + ")", errno);
  }
  return SyncDir(std::filesystem::path(path).parent_path().string());
}

}  // namespace netqos
