// Starting the real netqosd in a test, in one place: the flags that keep it off the host's own
// state, the process (DaemonProcess: its log kept in a file, SIGKILLed if the test does not stop
// it), the wait until it serves, and the metrics port it logs. The e2e harness, the integration
// tests' DaemonFixture and the kernel topology test use it, each adding the flags of its world.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/process.h"

namespace netqos::testing {

// Where a test's netqosd keeps its plugin socket and its checkpoint. The in-memory checkpoint
// directory is named too: netqosd looks at it in either mode (a checkpoint found there moves to
// the active directory), and a test must never read or move the host's /dev/shm/qrm/state.
struct NetqosdDirs {
  std::string socket_dir;
  std::string state_dir;
  std::string in_memory_state_dir;

  std::vector<std::string> Flags() const {
    return {"--qrm-socket-dirs=" + socket_dir, "--qrm-state-dir=" + state_dir,
            "--qrm-state-dir-in-memory=" + in_memory_state_dir};
  }
  std::string SocketPath() const { return socket_dir + "/qrm_network_plugin_static.sock"; }
};

// How long StartNetqosd waits for `serving`, and how often it asks.
struct ServingWait {
  std::chrono::milliseconds timeout{20000};
  std::chrono::milliseconds poll{50};
};

// Starts netqosd with `argv` (argv[0] the binary), its stdout and stderr appended to `log_path`,
// and returns once `serving` holds (a call on its socket answered). Throws, with the log, when
// the daemon exits first or `wait.timeout` passes; the daemon is killed then.
inline std::unique_ptr<DaemonProcess> StartNetqosd(const std::vector<std::string>& argv,
                                                   const std::string& log_path,
                                                   const std::function<bool()>& serving,
                                                   ServingWait wait = {}) {
  auto daemon = std::make_unique<DaemonProcess>(argv, log_path);
  const auto deadline = std::chrono::steady_clock::now() + wait.timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (serving()) return daemon;
    if (!daemon->Running()) break;
    std::this_thread::sleep_for(wait.poll);
  }
  throw std::runtime_error("netqosd did not start serving; log:\n" + daemon->Log());
}

// The port of the "metrics serving address=127.0.0.1:PORT" line netqosd logs when it listens on
// --metrics-bind-address=127.0.0.1:0, waited for up to `timeout`; 0 if it never comes or the
// daemon ends first.
inline int WaitLoggedMetricsPort(DaemonProcess& daemon, std::chrono::milliseconds timeout) {
  static const std::regex re("metrics serving address=127\\.0\\.0\\.1:([0-9]+)");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::smatch m;
    const std::string log = daemon.Log();
    if (std::regex_search(log, m, re)) return std::stoi(m[1]);
    if (!daemon.Running()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return 0;
}

}  // namespace netqos::testing
