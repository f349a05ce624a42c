// Self-test of run_sanitized.sh: `child_fault KIND` starts a copy of itself that trips one
// sanitizer (KIND: asan, a use after free; ubsan, a signed overflow; tsan, a data race), ignores
// how the copy ended and exits 0, as an e2e test does with a daemon it SIGKILLs or expects to
// fail. CTest must still fail it, from the child's report alone (tests/CMakeLists.txt).
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <thread>

namespace {

int UseAfterFree() {
  int* p = new int[4]();
  delete[] p;
  return *static_cast<int* volatile>(p);
}

int SignedOverflow(int argc) {
  volatile int x = INT_MAX;
  return x + argc;
}

int DataRace() {
  int shared = 0;
  std::thread t([&] { shared = 1; });
  shared = 2;  // unordered with the thread's write
  t.join();
  return shared;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  if (argc > 2 && std::strcmp(argv[1], "child") == 0) {
    if (std::strcmp(argv[2], "asan") == 0) return UseAfterFree();
    if (std::strcmp(argv[2], "ubsan") == 0) return SignedOverflow(argc);
    if (std::strcmp(argv[2], "tsan") == 0) return DataRace();
    return 2;
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    ::execl(argv[0], argv[0], "child", argv[1], static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return 0;
}
