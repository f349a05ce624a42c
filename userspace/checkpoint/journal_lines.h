// Reads a journal segment one line at a time, holding at most one line, and never more than a
// limit of it: a line longer than the limit is measured and reported, not buffered, so a damaged
// or hostile segment cannot make Load allocate its whole size.
//
// Segments are pre-written with zeros (see file_state_store.h) and records are written over them,
// so a NUL byte is where nothing was written (or reached the disk): a line ends at a NUL as at a
// newline, with zero_end set, and nothing after that NUL is read (Next returns false). A record
// never holds a NUL: its JSON escapes control characters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/fd.h"
#include "common/status.h"

namespace netqos::checkpoint {

class JournalLines {
 public:
  struct Line {
    std::string text;       // without the newline; empty when too_long
    uint64_t offset = 0;    // of the line's first byte in the file
    uint64_t length = 0;    // bytes, without the newline (also when too_long)
    bool complete = false;  // ended by a newline (false only for the file's last line)
    bool too_long = false;  // longer than max_line_bytes; text holds none of it
    bool last = false;      // nothing follows it in the file
    // Ended by a NUL byte instead of a newline: the line, if not empty, was cut short by space
    // that was never written, and the reading stops there. With length 0 the line starts at a
    // NUL: the segment's unwritten tail.
    bool zero_end = false;
  };

  // Errors: Internal "open(<path>): <strerror>" and the like.
  static Result<JournalLines> Open(const std::string& path, size_t max_line_bytes);

  JournalLines(JournalLines&& other) noexcept;
  JournalLines& operator=(JournalLines&&) = delete;
  JournalLines(const JournalLines&) = delete;
  JournalLines& operator=(const JournalLines&) = delete;
  ~JournalLines() = default;

  // The next line into *line; false at the end of the file. Errors name the file.
  Result<bool> Next(Line* line);

 private:
  JournalLines(std::string path, Fd fd, uint64_t size, size_t max_line_bytes)
      : path_(std::move(path)), fd_(std::move(fd)), size_(size), max_line_bytes_(max_line_bytes) {}
  Status Fill();

  std::string path_;
  Fd fd_;
  uint64_t size_ = 0;  // from fstat at Open; Load runs before anything appends
  size_t max_line_bytes_ = 0;
  uint64_t offset_ = 0;  // file offset of buf_[pos_]
  char buf_[1 << 16];
  size_t pos_ = 0;
  size_t end_ = 0;
  bool eof_ = false;
  bool stopped_ = false;  // a NUL was met: nothing more is read
};

}  // namespace netqos::checkpoint
