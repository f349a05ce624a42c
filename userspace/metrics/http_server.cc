#include "metrics/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include "common/fd.h"

namespace netqos::metrics {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr char kMetricsContentType[] = "text/plain; version=0.0.4; charset=utf-8";
constexpr char kTextContentType[] = "text/plain; charset=utf-8";
// After its answer, a connection is read (and what arrives thrown away) until the client closes,
// for at most this long and this much: closing with unread bytes would reset the connection, and
// a client still sending a refused body could lose the answer.
constexpr milliseconds kLinger{1000};
constexpr size_t kLingerBytes = 1 << 20;
// Accept errors that clear by themselves (out of file descriptors): retry after this.
constexpr milliseconds kAcceptBackoff{100};

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

struct Answer {
  int status = 200;
  std::string content_type = kTextContentType;
  std::string body;
};

Answer Line(int status, const std::string& line) { return {status, kTextContentType, line + "\n"}; }

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 411:
      return "Length Required";
    case 413:
      return "Content Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

// The whole answer: status line, headers, and the body unless the request was HEAD. Every
// connection carries one request: "Connection: close".
std::string Serialize(const Answer& a, bool head_only) {
  std::string out = "HTTP/1.1 " + std::to_string(a.status) + " " + Reason(a.status) + "\r\n";
  out += "Content-Type: " + a.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(a.body.size()) + "\r\n";
  if (a.status == 405) out += "Allow: GET, HEAD\r\n";
  out += "Connection: close\r\n\r\n";
  if (!head_only) out += a.body;
  return out;
}

// The length of the request head in buf (request line, header fields and the empty line that
// ends them), or 0 while it is incomplete. Lines end in CRLF or a bare LF.
size_t HeadLength(std::string_view buf) {
  size_t pos = 0;
  for (;;) {
    const size_t nl = buf.find('\n', pos);
    if (nl == std::string_view::npos) return 0;
    const size_t len = nl - pos;
    if (pos > 0 && (len == 0 || (len == 1 && buf[pos] == '\r'))) return nl + 1;
    pos = nl + 1;
  }
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
    if (!ok || c == '\0') return false;
  }
  return true;
}

struct Request {
  std::string method;
  std::string path;  // without the query
  Answer refusal;    // status 0: the request can be served
};

// Parses a complete head. Refuses (in refusal) what this listener does not serve: malformed
// heads (400), a body of unannounced size (411) or above max_body (413), methods other than GET
// and HEAD (405). A body within the limit is allowed and never read.
Request ParseHead(std::string_view head, size_t max_body) {
  Request req;
  req.refusal.status = 0;
  auto refuse = [&](int status, const std::string& why) {
    req.refusal = Line(status, why);
    return req;
  };
  std::vector<std::string_view> lines;
  for (size_t pos = 0; pos < head.size();) {
    const size_t nl = head.find('\n', pos);
    std::string_view line = head.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    pos = nl + 1;
  }
  if (lines.empty()) return refuse(400, "bad request: no request line");
  // request-line = method SP request-target SP HTTP-version
  const std::string_view rl = lines[0];
  const size_t sp1 = rl.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : rl.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || rl.find(' ', sp2 + 1) != std::string_view::npos) {
    return refuse(400, "bad request: malformed request line");
  }
  const std::string_view method = rl.substr(0, sp1);
  const std::string_view target = rl.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = rl.substr(sp2 + 1);
  if (!IsToken(method) || target.empty() || (version != "HTTP/1.1" && version != "HTTP/1.0")) {
    return refuse(400, "bad request: malformed request line");
  }
  bool has_length = false, chunked = false;
  uint64_t length = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    if (line.empty()) break;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) {
      return refuse(400, "bad request: malformed header field");
    }
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = Trim(line.substr(colon + 1));
    if (IEquals(name, "Transfer-Encoding")) {
      chunked = true;
    } else if (IEquals(name, "Content-Length")) {
      if (value.empty() || value.find_first_not_of("0123456789") != std::string_view::npos) {
        return refuse(400, "bad request: Content-Length is not a number");
      }
      uint64_t n = 0;
      for (char c : value) {
        const uint64_t digit = static_cast<uint64_t>(c - '0');
        n = n > (UINT64_MAX - digit) / 10 ? UINT64_MAX : n * 10 + digit;  // saturates
      }
      if (has_length && n != length) return refuse(400, "bad request: two Content-Lengths");
      has_length = true;
      length = n;
    }
  }
  if (chunked && has_length) {
    return refuse(400, "bad request: both Transfer-Encoding and Content-Length");
  }
  if (chunked) {
    return refuse(411, "a request body needs a Content-Length of at most " +
                           std::to_string(max_body) + " bytes");
  }
  if (length > max_body) {
    return refuse(413, "request body larger than " + std::to_string(max_body) + " bytes");
  }
  if (method != "GET" && method != "HEAD") return refuse(405, "only GET and HEAD are served");
  req.method = std::string(method);
  std::string_view path = target.substr(0, target.find_first_of("?#"));
  req.path = std::string(path);
  return req;
}

std::string Errno(int err) { return std::strerror(err); }

}  // namespace

// The connection thread: accepts, reads each request without blocking, answers /healthz itself,
// hands /metrics and /readyz to their threads, writes the answers and enforces every deadline
// and cap. Connections are keyed by accept order, so the map's first is the oldest.
class MetricsServer::Listener {
 public:
  Listener(MetricsServer* server, Fd listen_fd, Fd wake_fd)
      : server_(server),
        opts_(server->options_),
        listen_fd_(std::move(listen_fd)),
        wake_fd_(std::move(wake_fd)) {
    if (opts_.max_connections == 0) opts_.max_connections = 1;
    metrics_.metrics = true;
    metrics_.thread = std::thread([this] { Answerer(metrics_); });
    ready_.thread = std::thread([this] { Answerer(ready_); });
    io_thread_ = std::thread([this] { Run(); });
  }

  ~Listener() { Stop(); }

  void Stop() {
    if (stopping_.exchange(true)) return;
    Wake();
    if (io_thread_.joinable()) io_thread_.join();
    for (AnswerQueue* q : {&metrics_, &ready_}) {
      {
        std::lock_guard lk(q->mu);
        q->stop = true;
      }
      q->cv.notify_all();
      if (q->thread.joinable()) q->thread.join();
    }
    listen_fd_.reset();  // refuse new connections at once, not when the server object goes
  }

  size_t open_connections() const { return open_.load(); }

 private:
  enum class Phase {
    kRequest,  // reading the request head
    kWaiting,  // for /metrics or /readyz to be computed
    kWriting,  // the answer
    kLinger,   // answered; reading until the client closes
  };
  struct Conn {
    Fd fd;
    Phase phase = Phase::kRequest;
    Clock::time_point deadline;
    std::string in;   // the request head so far
    std::string out;  // the answer still to write
    size_t written = 0;
    size_t lingered = 0;
    bool head_only = false;  // HEAD: no body in the answer
    bool scrape = false;     // a /metrics request: its answer's status is reported (on_scrape)
  };
  // One thread computing one kind of answer, for connections in kWaiting.
  struct AnswerQueue {
    std::thread thread;
    std::mutex mu;
    std::condition_variable cv;
    std::deque<uint64_t> ids;
    bool stop = false;
    bool metrics = false;  // /metrics, else /readyz
  };

  void Wake() {
    const uint64_t one = 1;
    ssize_t n;
    do n = ::write(wake_fd_.get(), &one, sizeof(one));
    while (n < 0 && errno == EINTR);
  }

  void Run() {
    std::vector<pollfd> pfds;
    std::vector<uint64_t> ids;
    while (!stopping_.load()) {
      const auto now = Clock::now();
      ExpireDeadlines(now);
      pfds.clear();
      ids.clear();
      pfds.push_back({wake_fd_.get(), POLLIN, 0});
      const bool accepting = now >= accept_paused_until_;
      pfds.push_back({accepting ? listen_fd_.get() : -1, POLLIN, 0});  // poll skips a negative fd
      auto next = accepting ? now + std::chrono::hours(1) : accept_paused_until_;
      for (const auto& [id, c] : conns_) {
        short events = 0;  // kWaiting: only errors and hang-ups, which poll always reports
        if (c.phase == Phase::kRequest || c.phase == Phase::kLinger) events = POLLIN;
        if (c.phase == Phase::kWriting) events = POLLOUT;
        pfds.push_back({c.fd.get(), events, 0});
        ids.push_back(id);
        next = std::min(next, c.deadline);
      }
      const auto wait = std::chrono::ceil<milliseconds>(next - now).count();
      const int n =
          ::poll(pfds.data(), pfds.size(), static_cast<int>(std::clamp<int64_t>(wait, 0, 60000)));
      if (n < 0) {
        if (errno != EINTR) {
          spdlog::error("metrics listener: poll failed error=\"{}\"", Errno(errno));
          std::this_thread::sleep_for(milliseconds(10));
        }
        continue;
      }
      if (pfds[0].revents != 0) {
        uint64_t count;
        while (::read(wake_fd_.get(), &count, sizeof(count)) > 0) {
        }
        TakeAnswers();
      }
      for (size_t i = 0; i < ids.size(); ++i) {
        if (pfds[i + 2].revents != 0) Handle(ids[i], pfds[i + 2].revents);
      }
      if (pfds[1].revents != 0) Accept();
    }
    conns_.clear();  // closes them
    open_ = 0;
  }

  void Accept() {
    for (int i = 0; i < 64; ++i) {  // a batch; the rest after one more poll
      const int fd = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        const int err = errno;
        if (err == EINTR || err == ECONNABORTED) continue;
        if (err == EAGAIN || err == EWOULDBLOCK) return;
        // EMFILE, ENFILE, ENOBUFS, ENOMEM: the process or the node is short of something;
        // pending connections wait in the backlog.
        const auto now = Clock::now();
        if (now - last_accept_warning_ >= std::chrono::minutes(1)) {  // not 10 lines a second
          spdlog::warn("metrics listener: accept failed, retrying every {} ms error=\"{}\"",
                       kAcceptBackoff.count(), Errno(err));
          last_accept_warning_ = now;
        }
        accept_paused_until_ = now + kAcceptBackoff;
        return;
      }
      // At the cap, the oldest connection gives way. A client that holds connections open
      // without finishing its request holds the oldest ones; a probe sends its request at once
      // and is answered before many newer connections can come.
      if (conns_.size() >= opts_.max_connections) Close(conns_.begin()->first);
      const uint64_t id = next_id_++;
      Conn& c = conns_[id];
      c.fd.reset(fd);
      c.deadline = Clock::now() + opts_.request_timeout;
      open_ = conns_.size();
      Handle(id, POLLIN);  // the request usually came with the connection
    }
  }

  void Handle(uint64_t id, short revents) {
    auto it = conns_.find(id);
    if (it == conns_.end()) return;
    Conn& c = it->second;
    switch (c.phase) {
      case Phase::kRequest:
        ReadRequest(id, c);
        return;
      case Phase::kWaiting:
        // The client went away (POLLHUP, POLLERR) while its answer was computed.
        if (revents & (POLLHUP | POLLERR)) Close(id);
        return;
      case Phase::kWriting:
        WriteAnswer(id, c);
        return;
      case Phase::kLinger:
        Linger(id, c);
        return;
    }
  }

  void ReadRequest(uint64_t id, Conn& c) {
    // Never more than the head's cap (plus one byte, to tell "too long" from "exactly full").
    const size_t cap = opts_.max_request_head_bytes + 1;
    char buf[4096];
    while (c.in.size() < cap) {
      const ssize_t n = ::recv(c.fd.get(), buf, std::min(sizeof(buf), cap - c.in.size()), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n <= 0) {  // closed before a whole request, or reset
        Close(id);
        return;
      }
      c.in.append(buf, static_cast<size_t>(n));
    }
    const size_t head = HeadLength(c.in);
    if (head == 0 || head > opts_.max_request_head_bytes) {
      if (c.in.size() >= cap || head > opts_.max_request_head_bytes) {
        Respond(id, c,
                Line(431, "request line and headers longer than " +
                              std::to_string(opts_.max_request_head_bytes) + " bytes"));
      }
      return;  // more to come, within the request deadline
    }
    const Request req =
        ParseHead(std::string_view(c.in).substr(0, head), opts_.max_request_body_bytes);
    std::string().swap(c.in);
    if (req.refusal.status != 0) {
      Respond(id, c, req.refusal);
      return;
    }
    c.head_only = req.method == "HEAD";
    if (req.path == "/healthz") {
      const ProbeResult r = server_->Health();  // an atomic load: answered on this thread
      Respond(id, c, Line(r.ok ? 200 : 503, r.reason));
    } else if (req.path == "/metrics" || req.path == "/readyz") {
      c.scrape = req.path == "/metrics";
      AnswerQueue& q = c.scrape ? metrics_ : ready_;
      c.phase = Phase::kWaiting;
      c.deadline = Clock::now() + opts_.response_timeout;
      {
        std::lock_guard lk(q.mu);
        q.ids.push_back(id);
      }
      q.cv.notify_one();
    } else {
      Respond(id, c, Line(404, "not found (this listener serves /metrics, /healthz and /readyz)"));
    }
  }

  void Respond(uint64_t id, Conn& c, const Answer& a) {
    if (c.scrape && opts_.on_scrape) opts_.on_scrape(a.status);
    c.out = Serialize(a, c.head_only);
    c.written = 0;
    c.phase = Phase::kWriting;
    c.deadline = Clock::now() + opts_.write_timeout;
    WriteAnswer(id, c);
  }

  void WriteAnswer(uint64_t id, Conn& c) {
    while (c.written < c.out.size()) {
      const ssize_t n = ::send(c.fd.get(), c.out.data() + c.written, c.out.size() - c.written,
                               MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;  // POLLOUT later
      if (n <= 0) {
        Close(id);
        return;
      }
      c.written += static_cast<size_t>(n);
    }
    std::string().swap(c.out);
    ::shutdown(c.fd.get(), SHUT_WR);  // the client reads the answer, then its end of file
    c.phase = Phase::kLinger;
    c.deadline = Clock::now() + kLinger;
    Linger(id, c);
  }

  void Linger(uint64_t id, Conn& c) {
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(c.fd.get(), buf, sizeof(buf), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      c.lingered += n > 0 ? static_cast<size_t>(n) : 0;
      if (n <= 0 || c.lingered > kLingerBytes) {
        Close(id);
        return;
      }
    }
  }

  void ExpireDeadlines(Clock::time_point now) {
    std::vector<uint64_t> due;
    for (const auto& [id, c] : conns_) {
      if (c.deadline <= now) due.push_back(id);
    }
    for (uint64_t id : due) {
      Conn& c = conns_.at(id);
      switch (c.phase) {
        case Phase::kRequest:
          Respond(id, c,
                  Line(408, "request not received within " +
                                std::to_string(opts_.request_timeout.count()) + " ms"));
          break;
        case Phase::kWaiting:
          Unqueue(id);
          Respond(id, c,
                  Line(503, "answer not computed within " +
                                std::to_string(opts_.response_timeout.count()) + " ms"));
          break;
        case Phase::kWriting:
        case Phase::kLinger:
          Close(id);
          break;
      }
    }
  }

  void Close(uint64_t id) {
    auto it = conns_.find(id);
    if (it == conns_.end()) return;
    if (it->second.phase == Phase::kWaiting) Unqueue(id);
    conns_.erase(it);  // closes the socket
    open_ = conns_.size();
  }

  // Drops a connection's pending job (it may also be running: its answer is then discarded).
  void Unqueue(uint64_t id) {
    for (AnswerQueue* q : {&metrics_, &ready_}) {
      std::lock_guard lk(q->mu);
      q->ids.erase(std::remove(q->ids.begin(), q->ids.end(), id), q->ids.end());
    }
  }

  void TakeAnswers() {
    std::vector<std::pair<uint64_t, Answer>> done;
    {
      std::lock_guard lk(done_mu_);
      done.swap(done_);
    }
    for (auto& [id, a] : done) {
      auto it = conns_.find(id);
      if (it == conns_.end() || it->second.phase != Phase::kWaiting) continue;  // gone, or 503
      Respond(id, it->second, a);
    }
  }

  void Answerer(AnswerQueue& q) {
    for (;;) {
      uint64_t id;
      {
        std::unique_lock lk(q.mu);
        q.cv.wait(lk, [&] { return q.stop || !q.ids.empty(); });
        if (q.stop) return;
        id = q.ids.front();
        q.ids.pop_front();
      }
      Answer a = q.metrics ? Metrics() : Ready();
      {
        std::lock_guard lk(done_mu_);
        done_.emplace_back(id, std::move(a));
      }
      Wake();
    }
  }

  Answer Metrics() {
    try {
      return {200, kMetricsContentType,
              server_->options_.render ? server_->options_.render() : std::string()};
    } catch (const std::exception& e) {
      spdlog::warn("metrics scrape failed error=\"{}\"", e.what());
      return Line(500, std::string("metrics collection failed: ") + e.what());
    } catch (...) {
      return Line(500, "metrics collection failed");
    }
  }

  Answer Ready() {
    ProbeResult r;
    try {
      r = server_->Readiness();
    } catch (const std::exception& e) {
      r = {false, std::string("readiness check failed: ") + e.what()};
    } catch (...) {
      r = {false, "readiness check failed"};
    }
    return Line(r.ok ? 200 : 503, r.reason);
  }

  MetricsServer* const server_;
  Options opts_;
  Fd listen_fd_;
  const Fd wake_fd_;  // eventfd: Stop() and finished answers wake the connection thread
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> open_{0};
  // Owned by the connection thread.
  std::map<uint64_t, Conn> conns_;
  uint64_t next_id_ = 1;
  Clock::time_point accept_paused_until_{};
  Clock::time_point last_accept_warning_{};
  std::thread io_thread_;
  AnswerQueue metrics_;
  AnswerQueue ready_;
  std::mutex done_mu_;
  std::vector<std::pair<uint64_t, Answer>> done_;
};

namespace {

// A listening, non-blocking TCP socket on address (SO_REUSEADDR only: SO_REUSEPORT would let a
// second netqosd, or anything else, share the port and split the scrapes between them).
Result<Fd> Listen(BindAddress& address) {
  const std::string where = "metrics: cannot listen on " + address.Text() + ": ";
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(address.port);
  if (const int rc = ::getaddrinfo(address.host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    return Unavailable(where + ::gai_strerror(rc));
  }
  int err = 0;
  Fd fd;
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    fd.reset(::socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) {
      err = errno;
      continue;
    }
    int yes = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd.get(), 128) == 0) break;
    err = errno;
    fd.reset();
  }
  ::freeaddrinfo(res);
  if (!fd) {
    return Unavailable(where + Errno(err) +
                       " (is the port in use, or the address not on this node?)");
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len) == 0) {
    address.port = bound.ss_family == AF_INET6
                       ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                       : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  }
  return fd;
}

}  // namespace

MetricsServer::MetricsServer(Options options) : options_(std::move(options)) {}

Result<std::unique_ptr<MetricsServer>> MetricsServer::Start(Options options) {
  BindAddress address = options.bind_address;
  std::unique_ptr<MetricsServer> s(new MetricsServer(std::move(options)));
  NETQOS_ASSIGN_OR_RETURN(Fd listen_fd, Listen(address));
  s->address_ = address;
  Fd wake_fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake_fd) return Internal("metrics: eventfd: " + Errno(errno));
  s->Beat();
  s->listener_ = std::make_unique<Listener>(s.get(), std::move(listen_fd), std::move(wake_fd));
  s->ticker_thread_ = std::thread([self = s.get()] { self->TickerLoop(); });
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
  if (listener_) listener_->Stop();
  if (ticker_thread_.joinable()) ticker_thread_.join();
}

size_t MetricsServer::open_connections() const {
  return listener_ ? listener_->open_connections() : 0;
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
