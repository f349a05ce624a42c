// Fd: the owner of a raw file descriptor closes it exactly once, wherever ownership went.
#include "common/fd.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <utility>

namespace netqos {
namespace {

bool IsOpen(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

struct Pipe {
  int read = -1, write = -1;
  Pipe() {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    read = fds[0];
    write = fds[1];
  }
};

TEST_CASE("fd: closed when its owner goes, and not before") {
  Pipe p;
  {
    Fd r(p.read);
    Fd w(p.write);
    CHECK(r.valid());
    CHECK(IsOpen(p.read));
  }
  CHECK_FALSE(IsOpen(p.read));
  CHECK_FALSE(IsOpen(p.write));
}

TEST_CASE("fd: a move hands the fd over, and assignment closes the one held") {
  Pipe p;
  Fd a(p.read);
  Fd b(std::move(a));
  CHECK_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): checking the moved-from state
  CHECK(b.get() == p.read);
  Fd c(p.write);
  c = std::move(b);  // p.write is closed, p.read now belongs to c
  CHECK_FALSE(IsOpen(p.write));
  CHECK(IsOpen(p.read));
  CHECK(c.get() == p.read);
  const int raw = c.release();
  CHECK_FALSE(c);
  CHECK(IsOpen(raw));  // released: the caller closes it
  ::close(raw);
  Fd empty;
  empty.reset();  // nothing held: nothing closed
  CHECK(empty.get() == -1);
}

}  // namespace
}  // namespace netqos
