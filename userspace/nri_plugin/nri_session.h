// netqos as an NRI plugin: the connection to the container runtime's NRI socket. It dials the
// socket, runs NRI's mux (connection 1: the Plugin service netqos serves; connection 2: the
// Runtime service netqos calls), registers, answers Configure with the events netqos needs and
// Synchronize with nothing to change, and hands each pod and container event to an NriEvents
// port before it replies. It reconnects with backoff when the runtime goes away.
//
// Threads: Run() is the I/O thread (reads, writes, timers); the handlers run on one handler
// thread owned by the session, so that a slow handler never stops the replies: past the
// per-event budget the runtime gets its reply anyway and the late event is counted.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "common/histogram.h"
#include "common/status.h"
#include "nri_plugin/nri_events.h"

namespace netqos::nri_plugin {

struct NriSessionOptions {
  std::string socket_path = "/var/run/nri/nri.sock";
  std::string plugin_name = "netqos";
  // Two digits: NRI orders plugins by it and refuses anything else.
  std::string plugin_index = "50";
  // How long a handler may take before the runtime gets its reply anyway. Kept below the
  // runtime's request timeout (2 s by default, sent in Configure): the session lowers it to half
  // of that when the runtime's is shorter, and to 1 s when the runtime sends none (NRI's API
  // before v0.12, as containerd 1.7 speaks it, whose timeout is NRI's default).
  std::chrono::milliseconds event_budget{1000};
  // From connecting to Configure (NRI's own registration timeout defaults to 5 s).
  std::chrono::milliseconds registration_timeout{5000};
  // A write the runtime does not take within this drops the connection.
  std::chrono::milliseconds write_timeout{2000};
  // Events waiting for the handler thread beyond this are answered at once and not handed on:
  // only a handler stuck past every budget fills the queue, and it must not grow without end.
  size_t max_queued_events = 1024;
  std::chrono::milliseconds backoff_initial{100};
  std::chrono::milliseconds backoff_max{5000};
  // Fail-closed: a StartContainer the port refuses (NriEvents::StartRefusal) is answered with
  // that error, which makes the runtime fail the container. Off: every container starts.
  bool fail_closed = false;
  // The pod annotation keys kept (TranslatePod); nullopt keeps them all, as for
  // pods::PodListOptions. The daemon keeps only the ones its enforcer reads.
  std::optional<std::set<std::string, std::less<>>> annotation_keys;
};

// What the session hands the port, for counting: NRI's method names.
enum class NriEventKind : size_t {
  kSynchronize,
  kRunPodSandbox,
  kStopPodSandbox,
  kRemovePodSandbox,
  kCreateContainer,
  kStartContainer,
  kStopContainer,
  kRemoveContainer,
};
inline constexpr size_t kNriEventKinds = 8;
const char* NriEventKindName(NriEventKind kind);

// Counters for tests, logs and metrics; read at any time, from any thread.
struct NriSessionStats {
  // Registered (Configure answered) on a connection that is still open.
  std::atomic<bool> connected{false};
  std::atomic<uint64_t> connects{0};             // connections made to the socket
  std::atomic<uint64_t> configured{0};           // Configure answered (registration complete)
  std::atomic<uint64_t> events{0};               // events and Synchronize calls handed to the port
  std::atomic<uint64_t> late_replies{0};         // replied before the handler finished
  std::atomic<uint64_t> invalid_events{0};       // refused by validation, answered without the port
  std::atomic<uint64_t> shed_events{0};          // answered without the port: the queue was full
  std::atomic<uint64_t> dropped_connections{0};  // for a protocol error or a closed socket
  std::atomic<uint64_t> refused_starts{0};       // StartContainer answered with an error
  std::array<std::atomic<uint64_t>, kNriEventKinds> handled{};  // events per NriEventKind
  // Set by the last Configure: the request timeout the runtime sent (0: none, as NRI before
  // v0.12 sends none), and the per-event budget the session then answers within.
  std::atomic<uint64_t> runtime_request_timeout_ms{0};
  std::atomic<uint64_t> event_budget_ms{0};

  // From a call's arrival to its reply, for every event handed to the port.
  void ObserveReply(std::chrono::steady_clock::duration took);
  HistogramCounts ReplySeconds() const;

 private:
  mutable std::mutex mu_;
  HistogramCounts reply_seconds_{LatencyBounds()};
};

// The runtime the session registered with last, as its Configure said (the timeout it sent and
// the budget held below it are in NriSessionStats).
struct NriRuntime {
  std::string name;     // "containerd"; printable ASCII, at most 64 characters
  std::string version;  // likewise
};

class NriSession {
 public:
  NriSession(NriSessionOptions options, NriEvents& events);
  ~NriSession();  // stops and joins the handler thread
  NriSession(const NriSession&) = delete;
  NriSession& operator=(const NriSession&) = delete;

  // Connects, serves, reconnects; returns once Stop() is called. Call from one thread.
  void Run();
  // Safe from any thread (and a signal-free context); Run() returns soon after.
  void Stop();

  const NriSessionStats& stats() const { return stats_; }
  // Why the last connection ended (or could not be made); empty until then.
  std::string last_error() const;
  // The runtime of the last Configure (empty name: never registered).
  NriRuntime runtime() const;

 private:
  struct Connection;
  struct Job {
    uint64_t id = 0;
    std::function<void()> work;
  };

  // One connection from dial to close: the reason it ended.
  Status Serve(int fd);
  void HandlerLoop();
  // Queues `work` for the handler thread; returns the job's id, or 0 when the queue is full.
  uint64_t Submit(std::function<void()> work);
  bool JobDone(uint64_t id) const;
  void SetLastError(const Status& status);
  void SetRuntime(NriRuntime runtime);

  const NriSessionOptions options_;
  NriEvents& events_;
  NriSessionStats stats_;
  int stop_fd_ = -1;  // eventfd: Stop() wakes Run()
  int done_fd_ = -1;  // eventfd: the handler thread wakes Run() when a job finished

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  uint64_t next_job_ = 1;
  uint64_t finished_through_ = 0;  // jobs run in order: every id <= this one is done
  bool quit_ = false;
  std::string last_error_;
  NriRuntime runtime_;
  std::atomic<bool> stopping_{false};
  std::thread handler_;
};

}  // namespace netqos::nri_plugin
