// The metrics listener against hostile clients, over real TCP on 127.0.0.1 with the production
// defaults: a request body above the limit is refused with 413 before it is read, a client that
// sends its request a byte at a time is cut off at the request deadline (408), and /healthz keeps
// answering while slow or idle clients hold connections (more of them than the connection cap)
// and while /metrics is stuck in a scrape. docs/security.md lists these rules.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "metrics/http_server.h"

using netqos::metrics::MetricsServer;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

std::unique_ptr<MetricsServer> StartOrFail(MetricsServer::Options o) {
  auto s = MetricsServer::Start(std::move(o));
  if (!s.ok()) FAIL(s.status().message());
  return std::move(*s);
}

MetricsServer::Options Defaults() {
  MetricsServer::Options o;
  o.bind_address = netqos::metrics::BindAddress{"127.0.0.1", 0};
  o.render = [] { return std::string("# HELP x X.\n# TYPE x gauge\nx 1\n"); };
  return o;
}

// One TCP connection to 127.0.0.1:port, written and read with raw syscalls.
class RawClient {
 public:
  explicit RawClient(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw std::runtime_error("socket: " + std::string(std::strerror(errno)));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      const int err = errno;
      ::close(fd_);
      throw std::runtime_error("connect: " + std::string(std::strerror(err)));
    }
  }
  ~RawClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  // False once the server has closed (EPIPE, ECONNRESET).
  bool Send(const std::string& data) {
    size_t off = 0;
    while (off < data.size()) {
      const ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }

  struct Got {
    std::string data;
    bool closed = false;  // the server closed its side (EOF or reset)
  };
  // Reads what arrives within `wait`, stopping early when the server closes.
  Got Read(milliseconds wait) {
    Got got;
    const auto end = Clock::now() + wait;
    for (;;) {
      const auto left = std::chrono::duration_cast<milliseconds>(end - Clock::now()).count();
      if (left <= 0) return got;
      pollfd p{fd_, POLLIN, 0};
      const int r = ::poll(&p, 1, static_cast<int>(left));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return got;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        got.closed = true;
        return got;
      }
      got.data.append(buf, static_cast<size_t>(n));
    }
  }

  // Whether the server has closed or answered (without waiting, without consuming).
  bool ServerActed() const {
    pollfd p{fd_, POLLIN | POLLRDHUP, 0};
    return ::poll(&p, 1, 0) > 0;
  }

 private:
  int fd_ = -1;
};

// GET /healthz from a well-behaved client (the kubelet's probe): an answer within 2 s or none.
httplib::Result Probe(int port, const std::string& path = "/healthz") {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(2, 0);
  c.set_read_timeout(2, 0);
  c.set_write_timeout(2, 0);
  return c.Get(path.c_str());
}

std::string StatusLine(const std::string& response) {
  return response.substr(0, response.find("\r\n"));
}

}  // namespace

TEST_CASE("metrics listener: a request body above 64 KiB is refused with 413 before it is read") {
  auto server = StartOrFail(Defaults());
  const int port = server->address().port;

  SECTION("GET and POST announcing 1 GiB, of which 1 KiB is sent") {
    for (const char* method : {"GET", "POST"}) {
      INFO(method);
      RawClient c(port);
      REQUIRE(c.Send(std::string(method) +
                     " /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1073741824\r\n\r\n" +
                     std::string(1024, 'x')));
      // The answer comes while the client still owes almost all of the body: the server did
      // not wait for (or buffer) it. Then the server closes the connection.
      const auto got = c.Read(milliseconds(5000));
      CHECK(StatusLine(got.data) == "HTTP/1.1 413 Content Too Large");
      CHECK(got.closed);
    }
  }
  SECTION("the limit is 65536 bytes") {
    for (size_t size : {size_t{0}, size_t{10}, size_t{65536}, size_t{65537}}) {
      INFO(size);
      RawClient c(port);
      REQUIRE(c.Send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " +
                     std::to_string(size) + "\r\n\r\n" + std::string(size, 'x')));
      const auto got = c.Read(milliseconds(5000));
      CHECK(StatusLine(got.data) ==
            (size <= 65536 ? "HTTP/1.1 200 OK" : "HTTP/1.1 413 Content Too Large"));
      CHECK(got.closed);
    }
  }
  SECTION("a chunked body, whose size is not announced, is refused unread") {
    for (const char* method : {"GET", "POST"}) {
      INFO(method);
      RawClient c(port);
      REQUIRE(c.Send(std::string(method) +
                     " /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "400\r\n" +
                     std::string(1024, 'x') + "\r\n"));
      const auto got = c.Read(milliseconds(5000));
      CHECK(StatusLine(got.data) == "HTTP/1.1 411 Length Required");
      CHECK(got.closed);
    }
  }
  // The listener still serves.
  auto h = Probe(port);
  REQUIRE(h);
  CHECK(h->status == 200);
}

TEST_CASE("metrics listener: a client sending its request a byte at a time is cut off with 408") {
  auto server = StartOrFail(Defaults());
  const int port = server->address().port;
  // A byte every 200 ms: far more often than any per-read timeout, so only a deadline for the
  // whole request ends it. The loop gives up after 12 s.
  SECTION("in the header") {
    RawClient c(port);
    REQUIRE(c.Send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "));
    RawClient::Got got;
    const auto start = Clock::now();
    while (!got.closed && Clock::now() - start < std::chrono::seconds(12)) {
      if (!c.Send("a")) {
        got.closed = true;
        break;
      }
      auto more = c.Read(milliseconds(200));
      got.data += more.data;
      got.closed = more.closed;
    }
    CHECK(got.closed);
    CHECK(StatusLine(got.data) == "HTTP/1.1 408 Request Timeout");
  }
  SECTION("in the request line") {
    RawClient c(port);
    RawClient::Got got;
    const auto start = Clock::now();
    while (!got.closed && Clock::now() - start < std::chrono::seconds(12)) {
      if (!c.Send("/")) {
        got.closed = true;
        break;
      }
      auto more = c.Read(milliseconds(200));
      got.data += more.data;
      got.closed = more.closed;
    }
    CHECK(got.closed);
  }
  auto h = Probe(port);
  REQUIRE(h);
  CHECK(h->status == 200);
}

TEST_CASE("metrics listener: /healthz answers while 32 slow clients hold connections") {
  auto server = StartOrFail(Defaults());
  const int port = server->address().port;
  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < 32; ++i) {
    slow.push_back(std::make_unique<RawClient>(port));
    REQUIRE(slow.back()->Send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "));
  }
  // Each slow client adds a header byte every 300 ms, as a slowloris does.
  std::atomic<bool> done{false};
  std::thread dribble([&] {
    while (!done) {
      for (auto& c : slow) c->Send("a");
      std::this_thread::sleep_for(milliseconds(300));
    }
  });
  std::this_thread::sleep_for(milliseconds(100));
  int answered = 0;
  for (int i = 0; i < 3; ++i) {
    auto h = Probe(port);
    if (h && h->status == 200) ++answered;
    std::this_thread::sleep_for(milliseconds(100));
  }
  // The slow clients were held all along (the server had not simply dropped them).
  int still_held = 0;
  for (auto& c : slow) still_held += c->ServerActed() ? 0 : 1;
  done = true;
  dribble.join();
  CHECK(answered == 3);
  CHECK(still_held == 32);
}

TEST_CASE("metrics listener: /healthz answers while more idle connections are open than the cap") {
  auto server = StartOrFail(Defaults());
  const int port = server->address().port;
  // 400 connections that send nothing at all. The listener holds at most its cap (128) of
  // them, closing the oldest for each new one; a probe sends its request at once and is served.
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 400; ++i) idle.push_back(std::make_unique<RawClient>(port));
  std::this_thread::sleep_for(milliseconds(100));
  for (int i = 0; i < 3; ++i) {
    auto h = Probe(port);
    REQUIRE(h);
    CHECK(h->status == 200);
  }
  CHECK(server->open_connections() <= MetricsServer::Options{}.max_connections);
  int closed = 0;
  for (auto& c : idle) closed += c->ServerActed() ? 1 : 0;
  CHECK(closed >= 400 - static_cast<int>(MetricsServer::Options{}.max_connections));
}

TEST_CASE("metrics listener: /healthz and /readyz answer while a scrape is stuck") {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> renders{0};
  auto o = Defaults();
  o.render = [&] {
    ++renders;
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return release; });  // a scrape blocked, as on a deadlocked lock
    return std::string("x 1\n");
  };
  auto server = StartOrFail(std::move(o));
  const int port = server->address().port;
  std::vector<std::unique_ptr<RawClient>> scrapes;
  for (int i = 0; i < 4; ++i) {
    scrapes.push_back(std::make_unique<RawClient>(port));
    REQUIRE(scrapes.back()->Send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  }
  const auto start = Clock::now();
  while (renders == 0 && Clock::now() - start < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  REQUIRE(renders >= 1);
  for (const char* path : {"/healthz", "/readyz", "/healthz"}) {
    INFO(path);
    auto h = Probe(port, path);
    CHECK(h);
    if (h) CHECK(h->status == 200);
  }
  {
    std::lock_guard lk(mu);
    release = true;
  }
  cv.notify_all();
  for (auto& s : scrapes) {
    const auto got = s->Read(milliseconds(5000));
    CHECK(StatusLine(got.data) == "HTTP/1.1 200 OK");
  }
}

TEST_CASE("metrics listener: heads above 8 KiB get 431, malformed ones 400, other methods 405") {
  auto server = StartOrFail(Defaults());
  const int port = server->address().port;
  struct Case {
    std::string request;
    std::string status_line;
  };
  const std::string filler(9000, 'a');
  for (const Case& c : std::vector<Case>{
           {"GET /healthz HTTP/1.1\r\nX-Big: " + filler + "\r\n\r\n",
            "HTTP/1.1 431 Request Header Fields Too Large"},
           {"GET /" + filler + " HTTP/1.1\r\n\r\n", "HTTP/1.1 431 Request Header Fields Too Large"},
           {"GET /healthz\r\n\r\n", "HTTP/1.1 400 Bad Request"},
           {"GET /healthz HTTP/2.0\r\n\r\n", "HTTP/1.1 400 Bad Request"},
           {"GET  /healthz HTTP/1.1\r\n\r\n", "HTTP/1.1 400 Bad Request"},
           {"GET /healthz HTTP/1.1\r\n folded: x\r\n\r\n", "HTTP/1.1 400 Bad Request"},
           {"GET /healthz HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", "HTTP/1.1 400 Bad Request"},
           {"GET /healthz HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxy",
            "HTTP/1.1 400 Bad Request"},
           {"GET /healthz HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
            "HTTP/1.1 413 Content Too Large"},
           {"DELETE /metrics HTTP/1.1\r\n\r\n", "HTTP/1.1 405 Method Not Allowed"},
           {"GET /nothing HTTP/1.1\r\n\r\n", "HTTP/1.1 404 Not Found"},
           {"GET /healthz?verbose=1 HTTP/1.1\r\n\r\n", "HTTP/1.1 200 OK"},
           {"GET /healthz HTTP/1.0\n\n", "HTTP/1.1 200 OK"},  // bare LF line ends
       }) {
    INFO(c.request.substr(0, 60));
    RawClient client(port);
    REQUIRE(client.Send(c.request));
    const auto got = client.Read(milliseconds(5000));
    CHECK(StatusLine(got.data) == c.status_line);
    CHECK(got.closed);
    CHECK_THAT(got.data, Catch::Contains("\r\nConnection: close\r\n"));
    if (c.status_line.find("405") != std::string::npos) {
      CHECK_THAT(got.data, Catch::Contains("\r\nAllow: GET, HEAD\r\n"));
    }
  }
}

TEST_CASE("metrics listener: HEAD answers the headers of GET without the body") {
  auto server = StartOrFail(Defaults());
  RawClient get(server->address().port);
  REQUIRE(get.Send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  const auto g = get.Read(milliseconds(5000));
  RawClient head(server->address().port);
  REQUIRE(head.Send("HEAD /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  const auto h = head.Read(milliseconds(5000));
  REQUIRE(g.closed);
  REQUIRE(h.closed);
  const std::string body = "# HELP x X.\n# TYPE x gauge\nx 1\n";
  CHECK(g.data.substr(g.data.size() - body.size()) == body);
  CHECK(h.data == g.data.substr(0, g.data.size() - body.size()));
  CHECK_THAT(h.data, Catch::Contains("\r\nContent-Length: " + std::to_string(body.size())));
}

TEST_CASE("metrics listener: a /metrics answer not computed in time is a 503") {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::mutex codes_mu;
  std::vector<int> codes;  // what on_scrape reported, answer by answer
  auto o = Defaults();
  o.response_timeout = milliseconds(300);
  o.render = [&] {
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return release; });
    return std::string("x 1\n");
  };
  o.on_scrape = [&](int code) {
    std::lock_guard lk(codes_mu);
    codes.push_back(code);
  };
  auto server = StartOrFail(std::move(o));
  RawClient c(server->address().port);
  REQUIRE(c.Send("GET /metrics HTTP/1.1\r\n\r\n"));
  const auto got = c.Read(milliseconds(5000));
  CHECK(StatusLine(got.data) == "HTTP/1.1 503 Service Unavailable");
  CHECK_THAT(got.data, Catch::Contains("not computed within 300 ms"));
  {
    std::lock_guard lk(mu);
    release = true;
  }
  cv.notify_all();
  // The late answer is dropped; the next scrape is served.
  auto m = Probe(server->address().port, "/metrics");
  REQUIRE(m);
  CHECK(m->status == 200);
  std::lock_guard lk(codes_mu);
  CHECK(codes == std::vector<int>{503, 200});  // the dropped late answer is not counted
}
