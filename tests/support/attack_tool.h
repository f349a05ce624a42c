// netqos_attack_sender (tests/support/attack_sender.cc), the traffic of a tenant trying to escape
// its cap, run by the privileged tests in a cgroup and/or a network namespace.
#pragma once

#include <sys/wait.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/daemon_fixture.h"
#include "support/traffic.h"

namespace netqos::testing {

// One run of netqos_attack_sender in a cgroup and/or a namespace (SpawnIn: cgroup first, then
// namespace). The destructor kills and reaps it.
class AttackTool {
 public:
  AttackTool(std::vector<std::string> args, const std::string& cgroup,
             const std::string& netns = "") {
    args.insert(args.begin(), NETQOS_ATTACK_SENDER_PATH);
    pid_ = SpawnIn(
        args, {.cgroup = cgroup, .netns = netns, .stdout_fd = out_.fd(), .stderr_fd = out_.fd()});
  }
  ~AttackTool() { KillAndReap(pid_); }
  AttackTool(const AttackTool&) = delete;
  AttackTool& operator=(const AttackTool&) = delete;

  std::string Output() const { return out_.Read(); }

  // Waits up to `limit` for `text` in its output.
  bool WaitOutput(const std::string& text, std::chrono::milliseconds limit) const {
    return WaitFor([&] { return Output().find(text) != std::string::npos; }, limit).has_value();
  }

  // Waits for the exit (SIGKILL after `limit`); the wait status, or -1 when it had to be killed.
  int Wait(std::chrono::milliseconds limit) {
    int status = 0;
    const bool done =
        WaitFor([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; }, limit).has_value();
    if (!done) {
      KillAndReap(pid_);
      status = -1;
    }
    pid_ = -1;
    return status;
  }

  // "key=<n>" from its output; nullopt when absent.
  std::optional<uint64_t> Value(const std::string& key) const {
    const std::string out = Output();
    const size_t at = out.find(key + "=");
    if (at == std::string::npos) return std::nullopt;
    return std::stoull(out.substr(at + key.size() + 1));
  }

 private:
  OutputCapture out_;
  pid_t pid_ = -1;
};

}  // namespace netqos::testing
