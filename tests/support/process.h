// Child processes for end-to-end tests: the real netqosd binary (killed with SIGKILL on scope exit
// so a failing test never leaves a daemon behind) and one-shot commands such as netqosctl.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/files.h"

namespace netqos::testing {

inline pid_t Spawn(const std::vector<std::string>& argv, const std::string& out_path) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    int fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

// Output of a process; "" while the file does not exist yet.
inline std::string ReadOutput(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec) ? ReadFile(path) : std::string();
}

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr interleaved
};

// Runs a command to completion (bounded by timeout) and returns its exit code and output.
inline CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& out_path,
                                std::chrono::seconds timeout = std::chrono::seconds(30)) {
  ::unlink(out_path.c_str());
  pid_t pid = Spawn(argv, out_path);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  for (;;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return {-1, ReadOutput(out_path) + "\n<timed out>"};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), ReadOutput(out_path)};
}

// A running netqosd. The destructor SIGKILLs it if the test did not stop it.
class DaemonProcess {
 public:
  DaemonProcess(std::vector<std::string> argv, std::string log_path)
      : log_path_(std::move(log_path)) {
    pid_ = Spawn(argv, log_path_);
  }
  ~DaemonProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  pid_t pid() const { return pid_; }
  std::string Log() const { return ReadOutput(log_path_); }

  // Sends `sig` and waits for the process to end; returns its exit code (128+signal if killed).
  int Stop(int sig, std::chrono::seconds timeout = std::chrono::seconds(20)) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, sig);
    int code = WaitExit(timeout);
    return code;
  }

  // Waits for the process to exit on its own; -1 on timeout.
  int WaitExit(std::chrono::seconds timeout = std::chrono::seconds(20)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }

  bool Running() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    return true;
  }

 private:
  pid_t pid_ = -1;
  std::string log_path_;
};

}  // namespace netqos::testing
