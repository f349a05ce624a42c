// MetricsServer: the HTTP listener of --metrics-bind-address, serving
//   /metrics  the Prometheus text exposition (format 0.0.4)
//   /healthz  200 while the heartbeat is fresh: a ticker thread runs a liveness probe every
//             second (the app's probe takes the locks of the allocation service and the
//             enforcer, so a deadlock there turns the heartbeat stale), 503 otherwise
//   /readyz   200 when the app's readiness check passes, 503 with its reason otherwise
// Each answer is one line of text. The listener never stops the daemon: a failed scrape is a 500.
//
// The listener is a small HTTP/1.1 server of its own (GET and HEAD, one request per connection),
// built so that no client can hold it: one thread owns every connection and reads them without
// blocking, each connection has a deadline for its whole request (not per read, which a client
// sending a byte at a time never trips), request heads and the number of connections are capped
// (the oldest connection gives way to a new one), and request bodies are never read: one
// announced above the limit is refused with 413. /healthz is answered by that thread itself;
// /metrics and /readyz, which take the daemon's locks, each run on a thread of their own, so a
// stuck scrape holds up neither the probes nor the connections. docs/security.md has the rules.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"
#include "metrics/bind_address.h"

namespace netqos::metrics {

struct ProbeResult {
  bool ok = true;
  std::string reason;  // one line, shown in the body
};

class MetricsServer {
 public:
  struct Options {
    BindAddress bind_address;                  // read by ParseBindAddress (bind_address.h)
    std::function<std::string()> render;       // the /metrics body
    std::function<ProbeResult()> ready;        // /readyz; null = always ready
    std::function<void()> liveness_probe;      // run by the ticker before each heartbeat
    std::function<void(double)> on_heartbeat;  // unix time of each heartbeat (a gauge)
    // The HTTP status of each /metrics answer (200; 500 when rendering failed; 503 when it was
    // not computed in time), on the connection thread: must be quick and not throw.
    std::function<void(int)> on_scrape;
    std::chrono::milliseconds heartbeat_interval{1000};
    std::chrono::milliseconds heartbeat_timeout{10000};  // older: /healthz says 503

    // Limits against slow, idle and hostile clients (the defaults are netqosd's; tests shorten
    // them). The request line and headers must have arrived this long after the connection was
    // accepted, else the answer is 408 and the connection is closed.
    std::chrono::milliseconds request_timeout{3000};
    // /metrics and /readyz not computed within this time are answered 503.
    std::chrono::milliseconds response_timeout{10000};
    // An answer not taken by the client within this time: the connection is closed.
    std::chrono::milliseconds write_timeout{10000};
    size_t max_request_head_bytes = 8192;   // request line and headers; longer: 431
    size_t max_request_body_bytes = 65536;  // an announced body above this: 413, never read
    // Open connections; a new one beyond this closes the oldest.
    size_t max_connections = 128;
  };

  // Binds (failing with the address when it cannot), runs one heartbeat, then serves on its own
  // threads until Stop().
  static Result<std::unique_ptr<MetricsServer>> Start(Options options);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Stops listening and the ticker; idempotent.
  void Stop();
  // The address actually bound (the real port when 0 was asked for).
  const BindAddress& address() const { return address_; }

  // What /healthz and /readyz answer now (exposed for tests).
  ProbeResult Health() const;
  ProbeResult Readiness() const;
  // Connections open now (exposed for tests; never more than max_connections).
  size_t open_connections() const;

 private:
  class Listener;  // the connection thread, its connections and the answer threads (.cc)

  explicit MetricsServer(Options options);
  void Beat();
  void TickerLoop();

  Options options_;
  BindAddress address_;
  std::unique_ptr<Listener> listener_;
  std::thread ticker_thread_;
  std::atomic<int64_t> last_beat_ns_{0};  // steady_clock
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool stopped_ = false;
};

}  // namespace netqos::metrics
