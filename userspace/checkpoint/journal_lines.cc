#include "checkpoint/journal_lines.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace netqos::checkpoint {

namespace {

// Internal, like every other checkpoint I/O error: it says nothing about the file's contents.
Status ReadError(const char* call, const std::string& path, int err) {
  return Internal(std::string(call) + "(" + path + "): " + std::strerror(err));
}

}  // namespace

Result<JournalLines> JournalLines::Open(const std::string& path, size_t max_line_bytes) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return ReadError("open", path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ReadError("fstat", path, errno);
  return JournalLines(path, std::move(fd), static_cast<uint64_t>(st.st_size), max_line_bytes);
}

JournalLines::JournalLines(JournalLines&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::move(other.fd_)),
      size_(other.size_),
      max_line_bytes_(other.max_line_bytes_),
      offset_(other.offset_),
      pos_(other.pos_),
      end_(other.end_),
      eof_(other.eof_),
      stopped_(other.stopped_) {
  std::memcpy(buf_, other.buf_, end_);
}

Status JournalLines::Fill() {
  offset_ += pos_;
  pos_ = end_ = 0;
  while (true) {
    const ssize_t n = ::read(fd_.get(), buf_, sizeof(buf_));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ReadError("read", path_, errno);
    }
    if (n == 0) eof_ = true;
    end_ = static_cast<size_t>(n);
    return Status::Ok();
  }
}

Result<bool> JournalLines::Next(Line* line) {
  *line = Line{};
  if (stopped_) return false;
  if (pos_ == end_ && !eof_) NETQOS_RETURN_IF_ERROR(Fill());
  if (pos_ == end_) return false;
  line->offset = offset_ + pos_;
  while (true) {
    if (pos_ == end_) {
      NETQOS_RETURN_IF_ERROR(Fill());
      if (pos_ == end_) break;  // end of file without a newline
    }
    const char* start = buf_ + pos_;
    const void* nl = std::memchr(start, '\n', end_ - pos_);
    size_t n =
        nl != nullptr ? static_cast<size_t>(static_cast<const char*>(nl) - start) : end_ - pos_;
    // A NUL before the newline ends the line and the reading (see the header).
    const void* nul = std::memchr(start, '\0', n);
    if (nul != nullptr) {
      n = static_cast<size_t>(static_cast<const char*>(nul) - start);
      nl = nullptr;
    }
    line->length += n;
    if (!line->too_long && line->length > max_line_bytes_) {
      line->too_long = true;
      std::string().swap(line->text);  // give the memory back now
    }
    if (!line->too_long) line->text.append(start, n);
    pos_ += n;
    if (nul != nullptr) {
      line->zero_end = true;
      stopped_ = true;
      break;
    }
    if (nl != nullptr) {
      ++pos_;
      line->complete = true;
      break;
    }
  }
  line->last = stopped_ || line->offset + line->length + (line->complete ? 1 : 0) >= size_;
  return true;
}

}  // namespace netqos::checkpoint
