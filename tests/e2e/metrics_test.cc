// The metrics endpoint of the real netqosd (--metrics-bind-address): /metrics parsed with the
// strict text-format parser, RPC counters that move by exactly the calls made, NIC gauges equal
// to what `netqosctl capacity --json` reports, /healthz and /readyz; and --log-format=json lines
// carrying each allocation decision as fields.
#include <httplib.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "e2e/kubelet_harness.h"
#include "support/prom_parser.h"
#include "support/promtool_lint.h"

namespace {

using netqos::e2e::Harness;
using netqos::e2e::Req;
using netqos::testing::ParsePrometheusText;
using netqos::testing::PromDocument;
namespace rp = ::resourceplugin::v1alpha1;

std::vector<std::string> MetricsFlags() {
  auto flags = netqos::e2e::FixtureFlags();
  flags.push_back("--metrics-bind-address=127.0.0.1:0");
  return flags;
}

class Scraper {
 public:
  explicit Scraper(int port) : client_("127.0.0.1", port) {
    client_.set_connection_timeout(5, 0);
    client_.set_read_timeout(10, 0);
  }
  std::string Text() {
    auto r = client_.Get("/metrics");
    REQUIRE(r);
    REQUIRE(r->status == 200);
    CHECK(r->get_header_value("Content-Type") == "text/plain; version=0.0.4; charset=utf-8");
    return r->body;
  }
  PromDocument Metrics() {
    const std::string text = Text();
    INFO(text);
    return ParsePrometheusText(text);  // throws, naming the line, on any violation
  }
  std::pair<int, std::string> Get(const std::string& path) {
    auto r = client_.Get(path.c_str());
    REQUIRE(r);
    return {r->status, r->body};
  }

 private:
  httplib::Client client_;
};

// Calls per (method, code) between two scrapes.
double Delta(const PromDocument& before, const PromDocument& after, const std::string& method,
             const std::string& code) {
  const netqos::testing::PromLabels l = {{"method", method}, {"code", code}};
  return after.ValueOr0("netqos_rpc_requests_total", l) -
         before.ValueOr0("netqos_rpc_requests_total", l);
}
double CountDelta(const PromDocument& before, const PromDocument& after,
                  const std::string& method) {
  return after.Value("netqos_rpc_duration_seconds_count", {{"method", method}}) -
         before.Value("netqos_rpc_duration_seconds_count", {{"method", method}});
}
double AllCodes(const PromDocument& doc, const std::string& method) {
  double sum = 0;
  for (const auto& s : doc.Samples("netqos_rpc_requests_total", {{"method", method}}))
    sum += s.value;
  return sum;
}

}  // namespace

TEST_CASE("e2e: metrics endpoint counts RPCs exactly and matches netqosctl capacity") {
  Harness h;
  h.Start(MetricsFlags());
  const int port = h.WaitMetricsPort();
  INFO(h.daemon().Log());
  REQUIRE(port > 0);
  Scraper scraper(port);

  auto [health_code, health] = scraper.Get("/healthz");
  CHECK(health_code == 200);
  CHECK_THAT(health, Catch::StartsWith("ok"));
  auto [ready_code, ready] = scraper.Get("/readyz");
  CHECK(ready_code == 200);
  CHECK_THAT(ready, Catch::Contains("enforcement=none"));

  const PromDocument before = scraper.Metrics();
  CHECK(before.Value("netqos_up") == 1);
  // build_info carries what `netqosd --version` prints: "netqosd 0.1.0 commit=… date=…".
  {
    netqos::testing::TempDir dir;
    const auto v = netqos::testing::RunCommand({NETQOSD_PATH, "--version"}, dir.file("out"));
    std::smatch m;
    REQUIRE(
        std::regex_search(v.output, m, std::regex("^netqosd (\\S+) commit=(\\S+) date=(\\S+)")));
    const auto known = [](std::string s) { return s == "unknown" ? std::string() : s; };
    CHECK(m[1].str() == NETQOS_VERSION_TEXT);
    CHECK(before.Value("netqos_build_info", {{"version", m[1].str()},
                                             {"commit", known(m[2])},
                                             {"build_date", known(m[3])}}) == 1);
  }
  CHECK(before.Value("netqos_enforcement_mode", {{"mode", "none"}}) == 1);
  const double now_s =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  CHECK(before.Value("netqos_heartbeat_timestamp_seconds") == Approx(now_s).margin(5));
  CHECK(before.Value("netqos_ready") == 1);  // what /readyz answered
  CHECK(before.Value("netqos_start_time_seconds") == Approx(now_s).margin(60));
  // The process_* families, read from the daemon's /proc/self.
  CHECK(before.Value("process_resident_memory_bytes") > 1e6);
  CHECK(before.Value("process_virtual_memory_bytes") >=
        before.Value("process_resident_memory_bytes"));
  CHECK(before.Value("process_start_time_seconds") == Approx(now_s).margin(60));
  CHECK(before.Value("process_cpu_seconds_total") >= 0);
  CHECK(before.Value("process_open_fds") > 3);
  CHECK(before.Value("process_max_fds") >= before.Value("process_open_fds"));
  CHECK(before.Value("netqos_checkpoint_flush_failed") == 0);
  CHECK(before.Value("netqos_metrics_scrapes_total", {{"code", "200"}}) >= 0);

  // The kubelet's calls: 3 hints, 2 allocations, 1 refused allocation, 1 removal, 1 options.
  auto stub = h.Plugin();
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext ctx;
    rp::ResourceHintsResponse resp;
    auto req =
        Req::Container("hint-" + std::to_string(i), rp::ContainerType::MAIN, "shared_cores", 1000);
    REQUIRE(stub->GetTopologyHints(&ctx, req, &resp).ok());
  }
  for (const char* uid : {"pod-a", "pod-b"}) {
    grpc::ClientContext ctx;
    rp::ResourceAllocationResponse resp;
    auto req = Req::Container(uid, rp::ContainerType::MAIN, "shared_cores", 700);
    REQUIRE(stub->Allocate(&ctx, req, &resp).ok());
  }
  {
    grpc::ClientContext ctx;
    rp::ResourceAllocationResponse resp;
    auto req = Req::Container("", rp::ContainerType::MAIN, "shared_cores", 700);  // no pod uid
    auto st = stub->Allocate(&ctx, req, &resp);
    REQUIRE(st.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  }
  {
    grpc::ClientContext ctx;
    rp::RemovePodRequest req;
    req.set_pod_uid("pod-b");
    rp::RemovePodResponse resp;
    REQUIRE(stub->RemovePod(&ctx, req, &resp).ok());
  }
  {
    grpc::ClientContext ctx;
    rp::ResourcePluginOptions resp;
    REQUIRE(stub->GetResourcePluginOptions(&ctx, rp::Empty(), &resp).ok());
  }

  const PromDocument after = scraper.Metrics();
  CHECK(Delta(before, after, "GetTopologyHints", "OK") == 3);
  CHECK(Delta(before, after, "Allocate", "OK") == 2);
  CHECK(Delta(before, after, "Allocate", "INVALID_ARGUMENT") == 1);
  CHECK(Delta(before, after, "RemovePod", "OK") == 1);
  CHECK(Delta(before, after, "GetResourcePluginOptions", "OK") == 1);
  CHECK(CountDelta(before, after, "GetTopologyHints") == 3);
  CHECK(CountDelta(before, after, "Allocate") == 3);
  CHECK(CountDelta(before, after, "RemovePod") == 1);
  for (const char* untouched : {"GetPodTopologyHints", "AllocateForPod", "PreStartContainer",
                                "GetTopologyAwareAllocatableResources"}) {
    INFO(untouched);
    CHECK(AllCodes(after, untouched) == AllCodes(before, untouched));
    CHECK(CountDelta(before, after, untouched) == 0);
  }
  CHECK(after.Value("netqos_rpc_duration_seconds_sum", {{"method", "Allocate"}}) > 0);
  // Each acknowledged change was flushed (one at a time here: the calls did not overlap), and
  // the scrape before this one was counted.
  const double flushed = after.Value("netqos_checkpoint_flush_records_sum") -
                         before.Value("netqos_checkpoint_flush_records_sum");
  CHECK(flushed == 3);  // two Allocate, one RemovePod
  CHECK(after.Value("netqos_checkpoint_flush_duration_seconds_count") -
            before.Value("netqos_checkpoint_flush_duration_seconds_count") ==
        3);
  CHECK(after.Value("netqos_metrics_scrapes_total", {{"code", "200"}}) -
            before.Value("netqos_metrics_scrapes_total", {{"code", "200"}}) ==
        1);

  // NIC gauges against the operator CLI (which itself makes one resource plugin call).
  auto cap = h.Ctl({"capacity", "--json"});
  REQUIRE(cap.exit_code == 0);
  const auto doc = nlohmann::json::parse(cap.output);
  const PromDocument books = scraper.Metrics();
  CHECK(AllCodes(books, "GetTopologyAwareAllocatableResources") -
            AllCodes(after, "GetTopologyAwareAllocatableResources") ==
        1);
  REQUIRE(doc["nics"].size() == books.Samples("netqos_nic_healthy").size());
  REQUIRE(doc["nics"].size() == 2);
  for (const auto& nic : doc["nics"]) {
    const std::string id = nic["nic"];
    INFO("nic " << id);
    const netqos::testing::PromLabels l = {{"nic", id}};
    CHECK(books.Value("netqos_nic_healthy", l) == (nic["healthy"].get<bool>() ? 1 : 0));
    CHECK(books.Value("netqos_nic_allocations", l) == nic["containers"].get<double>());
    for (const char* dir : {"egress", "ingress"}) {
      const auto& bw = nic[dir];
      const netqos::testing::PromLabels d = {{"nic", id}, {"direction", dir}};
      constexpr double kBytesPerMbit = 1e6 / 8;  // netqosctl prints Mbps
      CHECK(books.Value("netqos_nic_capacity_bytes_per_second", d) ==
            bw["capacity"].get<double>() * kBytesPerMbit);
      CHECK(books.Value("netqos_nic_reserved_bytes_per_second", d) ==
            bw["reservation"].get<double>() * kBytesPerMbit);
      CHECK(books.Value("netqos_nic_allocatable_bytes_per_second", d) ==
            bw["allocatable"].get<double>() * kBytesPerMbit);
      CHECK(books.Value("netqos_nic_allocated_bytes_per_second", d) ==
            bw["allocated"].get<double>() * kBytesPerMbit);
    }
  }
  // pod-a's 700 Mbit/s on eth0 (--nic-selection=first); pod-b was removed.
  CHECK(books.Value("netqos_nic_allocated_bytes_per_second",
                    {{"nic", "eth0"}, {"direction", "egress"}}) == 700e6 / 8);
  CHECK(books.Value("netqos_nic_allocations", {{"nic", "eth0"}}) == 1);
  // The failed Allocate is labelled with its code, not its message.
  CHECK(books.Value("netqos_rpc_last_error_info",
                    {{"method", "Allocate"}, {"code", "INVALID_ARGUMENT"}}) == 1);

  // Prometheus's own linter on a real scrape, every family present (RPC failures included):
  // any finding (a non-base unit, a counter without _total, ...) fails.
  const auto lint = netqos::testing::PromtoolCheckMetrics(scraper.Text());
  INFO("promtool check metrics: " << lint.output);
  if (netqos::testing::PromtoolRan(lint)) {
    CHECK(lint.exit_code == 0);
    CHECK(lint.output.empty());
  }

  // A clean stop: the listener goes away with the daemon.
  CHECK(h.daemon().Stop(SIGTERM) == 0);
  CHECK_FALSE(httplib::Client("127.0.0.1", port).Get("/healthz"));
}

// The check above must be able to fail: promtool reports a name in bits, in the form netqosd's
// NIC families had before they moved to bytes.
TEST_CASE("e2e: promtool check metrics reports a non-base unit") {
  const auto lint = netqos::testing::PromtoolCheckMetrics(
      "# HELP netqos_nic_egress_capacity_bits_per_second Capacity.\n"
      "# TYPE netqos_nic_egress_capacity_bits_per_second gauge\n"
      "netqos_nic_egress_capacity_bits_per_second{nic=\"eth0\"} 1e+10\n");
  INFO(lint.output);
  if (!netqos::testing::PromtoolRan(lint)) return;
  CHECK(lint.exit_code != 0);
  CHECK_THAT(lint.output, Catch::Contains("use base unit \"bytes\" instead of \"bits\""));
}

TEST_CASE("e2e: metrics are off unless asked for") {
  Harness h;
  h.Start();
  CHECK_THAT(h.daemon().Log(), !Catch::Contains("metrics serving"));
}

TEST_CASE(
    "e2e: json logs carry each allocation decision with pod, container, NIC, Mbps and class") {
  Harness h;
  auto flags = netqos::e2e::FixtureFlags();
  flags.push_back("--log-format=json");
  h.Start(flags);
  auto stub = h.Plugin();
  grpc::ClientContext ctx;
  rp::ResourceAllocationResponse resp;
  auto req = Req::Container("pod-json", rp::ContainerType::MAIN, "shared_cores", 300);
  REQUIRE(stub->Allocate(&ctx, req, &resp).ok());
  REQUIRE(h.daemon().Stop(SIGTERM) == 0);

  std::istringstream lines(h.daemon().Log());
  std::string line;
  int decisions = 0, parsed = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    INFO(line);
    nlohmann::json j;
    REQUIRE_NOTHROW(j = nlohmann::json::parse(line));  // every line is one JSON object
    ++parsed;
    CHECK(j["ts"].is_string());
    CHECK(j["level"].is_string());
    CHECK(j["msg"].is_string());
    if (j["msg"] != "allocated") continue;
    ++decisions;
    CHECK(j["level"] == "info");
    CHECK(j["pod"] == "test/test");
    CHECK(j["uid"] == "pod-json");
    CHECK(j["container"] == "test");
    CHECK(j["nic"] == "eth0");
    CHECK(j["mbps"] == "300");
    CHECK(j["class_id"] == "22345");  // --network-resource-plugin-class-id-shared-cores
  }
  CHECK(parsed > 3);
  CHECK(decisions == 1);
}
