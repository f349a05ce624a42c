// A file descriptor that closes itself: the one owner of a raw fd in netqos (sockets, inotify
// and eventfd handles, pinned BPF objects, namespace files, checkpoint segments).
#pragma once

#include <unistd.h>

#include <utility>

namespace netqos {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  explicit operator bool() const { return valid(); }
  // Gives the fd up without closing it.
  int release() { return std::exchange(fd_, -1); }
  // Closes the fd held (if any) and holds `fd`. close()'s result is not looked at: on Linux the
  // fd is gone whatever it returns, and data that must be durable is fsynced before.
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace netqos
