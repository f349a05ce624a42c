#include "common/bounded_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/fd.h"

namespace netqos {

namespace {

Status ReadError(const char* call, const std::string& path, int err) {
  const StatusCode code = err == ENOENT                   ? StatusCode::kNotFound
                          : err == EACCES || err == EPERM ? StatusCode::kPermissionDenied
                                                          : StatusCode::kInternal;
  return Status(code, std::string(call) + "(" + path + "): " + std::strerror(err));
}

Status TooLarge(const std::string& path, size_t max_bytes, const std::string& seen) {
  return Status(StatusCode::kOutOfRange,
                path + " is " + SizeLimitText(max_bytes) + " (" + seen + ")");
}

}  // namespace

std::string SizeLimitText(size_t max_bytes) {
  std::string text = "larger than the limit of " + std::to_string(max_bytes) + " bytes";
  if (max_bytes >= (1u << 20) && max_bytes % (1u << 20) == 0) {
    text += " (" + std::to_string(max_bytes >> 20) + " MiB)";
  } else if (max_bytes >= (1u << 10) && max_bytes % (1u << 10) == 0) {
    text += " (" + std::to_string(max_bytes >> 10) + " KiB)";
  }
  return text;
}

Result<std::string> ReadFileAtMost(const std::string& path, size_t max_bytes) {
  const Fd file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!file) return ReadError("open", path, errno);
  const int fd = file.get();
  struct stat st {};
  if (::fstat(fd, &st) != 0) return ReadError("fstat", path, errno);
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > max_bytes) {
    return TooLarge(path, max_bytes, std::to_string(st.st_size) + " bytes");
  }
  std::string out;
  // Sized from fstat for a regular file; a pipe or a /proc file reports 0 and grows as read.
  if (S_ISREG(st.st_mode)) out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  while (true) {
    // One byte beyond the limit is enough to know it was passed.
    const size_t room = max_bytes + 1 - out.size();
    const ssize_t n = ::read(fd, buf, room < sizeof(buf) ? room : sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ReadError("read", path, errno);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) return TooLarge(path, max_bytes, "reading went past it");
  }
  return out;
}

}  // namespace netqos
