// The receive buffer of the incremental decoders: bytes arrive in whatever chunks the socket
// gives, and whole frames leave from the front.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace netqos::nri {

class ByteQueue {
 public:
  void Append(std::string_view bytes) { buffer_.append(bytes.data(), bytes.size()); }

  // The bytes not yet consumed.
  std::string_view View() const { return std::string_view(buffer_).substr(start_); }
  size_t size() const { return buffer_.size() - start_; }

  // Drops the first `n` bytes (n <= size()). The storage is compacted only once the consumed
  // prefix is at least half of it, so taking many small frames from one large chunk stays linear.
  void Consume(size_t n) {
    start_ += n;
    if (start_ == buffer_.size()) {
      buffer_.clear();
      start_ = 0;
    } else if (start_ >= buffer_.size() / 2) {
      buffer_.erase(0, start_);
      start_ = 0;
    }
  }

 private:
  std::string buffer_;
  size_t start_ = 0;
};

}  // namespace netqos::nri
