#include "metrics/http_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

namespace netqos::metrics {
namespace {

constexpr char kMetricsContentType[] = "text/plain; version=0.0.4; charset=utf-8";
constexpr char kTextContentType[] = "text/plain; charset=utf-8";

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool IsHostName(const std::string& host) {
  if (host.empty() || host.size() > 253 || host.front() == '-' || host.front() == '.') return false;
  for (char c : host) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

void Reply(httplib::Response& res, int status, const std::string& line) {
  res.status = status;
  res.set_content(line + "\n", kTextContentType);
}

}  // namespace

std::string BindAddress::Text() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<BindAddress> ParseBindAddress(const std::string& address) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("--metrics-bind-address \"" + address + "\": " + why +
                           " (expected HOST:PORT, [IPV6]:PORT or :PORT, e.g. 127.0.0.1:9465)");
  };
  BindAddress out;
  std::string port;
  if (!address.empty() && address[0] == '[') {
    const auto close = address.find(']');
    if (close == std::string::npos) return bad("unclosed '['");
    out.host = address.substr(1, close - 1);
    if (close + 1 >= address.size() || address[close + 1] != ':') return bad("no port");
    port = address.substr(close + 2);
    in6_addr a6{};
    if (inet_pton(AF_INET6, out.host.c_str(), &a6) != 1) return bad("not an IPv6 address");
  } else {
    const auto colon = address.rfind(':');
    if (colon == std::string::npos) return bad("no port");
    out.host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (out.host.find(':') != std::string::npos) return bad("an IPv6 address needs brackets");
    if (out.host.empty()) out.host = "0.0.0.0";
    in_addr a4{};
    if (inet_pton(AF_INET, out.host.c_str(), &a4) != 1 && !IsHostName(out.host))
      return bad("not an IPv4 address or host name");
  }
  if (port.empty() || port.size() > 5) return bad("bad port");
  int p = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return bad("bad port");
    p = p * 10 + (c - '0');
  }
  if (p > 65535) return bad("port above 65535");
  out.port = p;
  return out;
}

MetricsServer::MetricsServer(Options options) : options_(std::move(options)) {}

Result<std::unique_ptr<MetricsServer>> MetricsServer::Start(Options options) {
  NETQOS_ASSIGN_OR_RETURN(BindAddress address, ParseBindAddress(options.bind_address));
  std::unique_ptr<MetricsServer> s(new MetricsServer(std::move(options)));
  s->address_ = address;
  s->http_ = std::make_unique<httplib::Server>();
  httplib::Server& http = *s->http_;
  // A few threads are plenty for a scraper and the kubelet's probes; one request per
  // connection, so a scraper's idle connection never holds a thread a probe needs.
  http.new_task_queue = [] { return new httplib::ThreadPool(3); };
  http.set_keep_alive_max_count(1);
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, which would let a second netqosd
  // (or anything else) share the port and split the scrapes between them.
  http.set_socket_options([](socket_t sock) {  // httplib's global socket_t
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  http.set_read_timeout(5, 0);
  http.set_write_timeout(5, 0);
  MetricsServer* self = s.get();
  http.Get("/metrics", [self](const httplib::Request&, httplib::Response& res) {
    try {
      res.set_content(self->options_.render ? self->options_.render() : std::string(),
                      kMetricsContentType);
    } catch (const std::exception& e) {
      spdlog::warn("metrics scrape failed error=\"{}\"", e.what());
      Reply(res, 500, std::string("metrics collection failed: ") + e.what());
    } catch (...) {
      Reply(res, 500, "metrics collection failed");
    }
  });
  http.Get("/healthz", [self](const httplib::Request&, httplib::Response& res) {
    const ProbeResult r = self->Health();
    Reply(res, r.ok ? 200 : 503, r.reason);
  });
  http.Get("/readyz", [self](const httplib::Request&, httplib::Response& res) {
    ProbeResult r;
    try {
      r = self->Readiness();
    } catch (const std::exception& e) {
      r = {false, std::string("readiness check failed: ") + e.what()};
    }
    Reply(res, r.ok ? 200 : 503, r.reason);
  });

  errno = 0;
  if (address.port == 0) {
    const int port = http.bind_to_any_port(address.host);
    if (port <= 0) {
      return Unavailable("metrics: cannot listen on " + address.Text() + ": " +
                         (errno != 0 ? std::strerror(errno) : "bind failed"));
    }
    s->address_.port = port;
  } else if (!http.bind_to_port(address.host, address.port)) {
    return Unavailable("metrics: cannot listen on " + address.Text() + ": " +
                       (errno != 0 ? std::strerror(errno) : "bind failed") +
                       " (is the port in use, or the address not on this node?)");
  }
  s->Beat();
  s->listen_thread_ = std::thread([self] {
    try {
      self->http_->listen_after_bind();
    } catch (const std::exception& e) {
      spdlog::error("metrics listener stopped error=\"{}\"", e.what());
    }
  });
  // Stop() only reaches a server that is already listening: wait for it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!http.is_running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  s->ticker_thread_ = std::thread([self] { self->TickerLoop(); });
  spdlog::info("metrics serving address={} paths=/metrics,/healthz,/readyz", s->address_.Text());
  return s;
}

MetricsServer::~MetricsServer() { Stop(); }

void MetricsServer::Stop() {
  {
    std::lock_guard lk(mu_);
    if (stopped_) return;
    stopped_ = true;
    stopping_ = true;
  }
  cv_.notify_all();
  if (http_) http_->stop();
  if (listen_thread_.joinable()) listen_thread_.join();
  if (ticker_thread_.joinable()) ticker_thread_.join();
}

void MetricsServer::Beat() {
  if (options_.liveness_probe) options_.liveness_probe();
  last_beat_ns_.store(SteadyNowNs());
  if (options_.on_heartbeat) {
    const std::chrono::duration<double> now = std::chrono::system_clock::now().time_since_epoch();
    options_.on_heartbeat(now.count());
  }
}

void MetricsServer::TickerLoop() {
  for (;;) {
    {
      std::unique_lock lk(mu_);
      if (cv_.wait_for(lk, options_.heartbeat_interval, [this] { return stopping_; })) return;
    }
    try {
      Beat();
    } catch (const std::exception& e) {
      // No beat: /healthz turns 503 if this keeps happening.
      spdlog::warn("liveness probe failed error=\"{}\"", e.what());
    } catch (...) {
      spdlog::warn("liveness probe failed error=\"unknown exception\"");
    }
  }
}

ProbeResult MetricsServer::Health() const {
  const double age_s = static_cast<double>(SteadyNowNs() - last_beat_ns_.load()) / 1e9;
  char age[32];
  std::snprintf(age, sizeof(age), "%.1f", age_s);
  if (age_s * 1000.0 > static_cast<double>(options_.heartbeat_timeout.count())) {
    return {false, std::string("unhealthy: last heartbeat ") + age +
                       " s ago (a worker is stuck: the allocation service or the enforcer)"};
  }
  return {true, std::string("ok: last heartbeat ") + age + " s ago"};
}

ProbeResult MetricsServer::Readiness() const {
  if (!options_.ready) return {true, "ready"};
  return options_.ready();
}

}  // namespace netqos::metrics
