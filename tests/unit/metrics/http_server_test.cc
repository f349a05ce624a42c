// The metrics listener: /metrics, /healthz and /readyz over real loopback HTTP, a stale heartbeat
// turning /healthz to 503, and a port already in use.
#include "metrics/http_server.h"

#include <httplib.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

using netqos::metrics::BindAddress;
using netqos::metrics::MetricsServer;
using netqos::metrics::ProbeResult;

namespace {

std::unique_ptr<MetricsServer> StartOrFail(MetricsServer::Options o) {
  auto s = MetricsServer::Start(std::move(o));
  if (!s.ok()) FAIL(s.status().message());
  return std::move(*s);
}

}  // namespace

TEST_CASE("metrics server answers /metrics, /healthz and /readyz") {
  std::atomic<bool> ready{false};
  std::atomic<int> beats{0};
  MetricsServer::Options o;
  o.bind_address = BindAddress{"127.0.0.1", 0};
  o.render = [] { return std::string("# HELP x X.\n# TYPE x gauge\nx 1\n"); };
  o.ready = [&] { return ready ? ProbeResult{true, "ready"} : ProbeResult{false, "not yet"}; };
  o.on_heartbeat = [&](double) { ++beats; };
  std::atomic<int> scrapes_ok{0};
  std::atomic<int> scrapes_other{0};
  o.on_scrape = [&](int code) { ++(code == 200 ? scrapes_ok : scrapes_other); };
  o.heartbeat_interval = std::chrono::milliseconds(20);
  auto server = StartOrFail(std::move(o));
  CHECK(beats >= 1);  // one beat before serving
  REQUIRE(server->address().port > 0);

  httplib::Client client("127.0.0.1", server->address().port);
  auto m = client.Get("/metrics");
  REQUIRE(m);
  CHECK(m->status == 200);
  CHECK(m->body == "# HELP x X.\n# TYPE x gauge\nx 1\n");
  CHECK(m->get_header_value("Content-Type") == "text/plain; version=0.0.4; charset=utf-8");

  auto h = client.Get("/healthz");
  REQUIRE(h);
  CHECK(h->status == 200);
  CHECK_THAT(h->body, Catch::StartsWith("ok"));

  auto r = client.Get("/readyz");
  REQUIRE(r);
  CHECK(r->status == 503);
  CHECK(r->body == "not yet\n");
  ready = true;
  r = client.Get("/readyz");
  REQUIRE(r);
  CHECK(r->status == 200);

  auto missing = client.Get("/nothing");
  REQUIRE(missing);
  CHECK(missing->status == 404);

  // Only answers to /metrics are scrapes.
  CHECK(scrapes_ok == 1);
  CHECK(scrapes_other == 0);

  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(beats >= 3);  // the ticker keeps beating
  server->Stop();
  server->Stop();  // idempotent
  CHECK_FALSE(httplib::Client("127.0.0.1", server->address().port).Get("/healthz"));
}

TEST_CASE("a stuck liveness probe turns /healthz to 503") {
  std::mutex mu;
  std::condition_variable cv;
  bool stuck = false, release = false;
  MetricsServer::Options o;
  o.bind_address = BindAddress{"127.0.0.1", 0};
  o.render = [] { return std::string(); };
  o.liveness_probe = [&] {
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return !stuck || release; });
  };
  o.heartbeat_interval = std::chrono::milliseconds(10);
  o.heartbeat_timeout = std::chrono::milliseconds(150);
  auto server = StartOrFail(std::move(o));
  CHECK(server->Health().ok);
  {
    std::lock_guard lk(mu);
    stuck = true;  // the next probe blocks, as a deadlocked service lock would
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  httplib::Client client("127.0.0.1", server->address().port);
  auto h = client.Get("/healthz");
  REQUIRE(h);
  CHECK(h->status == 503);
  CHECK_THAT(h->body, Catch::Contains("heartbeat"));
  {
    std::lock_guard lk(mu);
    release = true;
  }
  cv.notify_all();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(server->Health().ok);
}

TEST_CASE("a metrics address already in use is an error naming it") {
  MetricsServer::Options o;
  o.bind_address = BindAddress{"127.0.0.1", 0};
  auto first = StartOrFail(o);
  MetricsServer::Options again;
  again.bind_address = BindAddress{"127.0.0.1", first->address().port};
  auto second = MetricsServer::Start(again);
  REQUIRE_FALSE(second.ok());
  CHECK_THAT(second.status().message(), Catch::Contains(again.bind_address.Text()));
}

TEST_CASE("metrics server listens on a host name and on IPv6 loopback") {
  MetricsServer::Options o;
  o.bind_address = BindAddress{"localhost", 0};
  auto by_name = StartOrFail(o);
  CHECK(by_name->address().port > 0);
  CHECK(by_name->address().host == "localhost");
  // localhost may resolve to ::1 first: ask for whichever address it bound.
  bool answered = false;
  for (const char* host : {"127.0.0.1", "::1"}) {
    httplib::Client c(host, by_name->address().port);
    c.set_connection_timeout(2, 0);
    if (auto h = c.Get("/healthz"); h && h->status == 200) answered = true;
  }
  CHECK(answered);

  o.bind_address = BindAddress{"::1", 0};
  auto v6 = MetricsServer::Start(o);
  if (!v6.ok()) {
    WARN("no IPv6 loopback here: " << v6.status().message());
    return;
  }
  CHECK((*v6)->address().Text() == "[::1]:" + std::to_string((*v6)->address().port));
  httplib::Client c("::1", (*v6)->address().port);
  auto h = c.Get("/healthz");
  REQUIRE(h);
  CHECK(h->status == 200);
}
