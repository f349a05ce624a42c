// netqosd as an NRI plugin: the real binary against a fake container runtime on a unix socket
// (tests/unit/nri/fake_nri_runtime.h). It registers, its netqos_nri_* families say so, and with
// --nri-fail-closed a container of a pod with an allocation is refused while enforcement cannot
// place classes, while a pod without one starts.
#include <httplib.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "e2e/kubelet_harness.h"
#include "unit/nri/fake_nri_runtime.h"

namespace {

namespace api = ::nri::pkg::api::v1alpha1;
using netqos::e2e::Harness;

bool HasLine(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

std::optional<netqos::nri::TtrpcReply> Start(netqos::nri_test::FakeNriRuntime& runtime,
                                             const std::string& uid, const std::string& id) {
  api::StartContainerRequest start;
  start.mutable_pod()->set_id("sandbox-" + id);
  start.mutable_pod()->set_uid(uid);
  start.mutable_pod()->set_namespace_("default");
  start.mutable_pod()->set_name("web");
  start.mutable_container()->set_id(id);
  start.mutable_container()->set_pod_sandbox_id("sandbox-" + id);
  return runtime.Reply(runtime.Call("StartContainer", start));
}

}  // namespace

TEST_CASE("e2e: with --nri-fail-closed a capped pod's start is refused while enforcement is down") {
  netqos::nri_test::FakeNriRuntime runtime;
  Harness h;
  // Enforcement that cannot start (its pin dir's parent is no bpffs): the enforcer never confirms
  // a class, without any privilege.
  const std::string not_bpffs = h.root() + "/not-bpffs";
  std::filesystem::create_directories(not_bpffs);
  std::ofstream(not_bpffs + "/a-file") << "x";
  std::vector<std::string> flags = netqos::e2e::FixtureFlags();
  flags.insert(flags.end(), {"--enforcement=bpf", "--bpf-pin-dir=" + not_bpffs + "/pins",
                             "--nri-socket=" + runtime.path(), "--nri-fail-closed",
                             "--nri-event-budget-ms=300", "--metrics-bind-address=127.0.0.1:0"});
  h.Start(flags);
  auto allocated = h.CtlAllocateWeb();  // pod p1: 500 Mbps
  INFO(allocated.output);
  REQUIRE(allocated.exit_code == 0);

  runtime.Handshake(2000, std::chrono::seconds(10));

  auto capped = Start(runtime, "p1", "ctr1");
  REQUIRE(capped.has_value());
  CHECK(capped->status.code() == netqos::StatusCode::kFailedPrecondition);
  CHECK_THAT(capped->status.message(), Catch::Contains("netqos could not confirm") &&
                                           Catch::Contains("container ctr1 of pod default/web"));
  auto free_pod = Start(runtime, "p2", "ctr2");
  REQUIRE(free_pod.has_value());
  CHECK(free_pod->status.ok());

  const int port = h.WaitMetricsPort();
  REQUIRE(port != 0);
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(10, 0);
  auto r = client.Get("/metrics");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  INFO(r->body);
  CHECK(HasLine(r->body, "netqos_nri_connected 1"));
  CHECK(HasLine(r->body, "netqos_nri_refused_starts_total 1"));
  CHECK(HasLine(r->body, "netqos_nri_events_total{kind=\"StartContainer\"} 2"));
  CHECK(HasLine(r->body, "netqos_nri_reply_seconds_count 2"));
  CHECK_THAT(h.daemon().Log(), Catch::Contains("nri: refusing StartContainer ctr1"));

  // netqosctl status: the runtime it registered with, the timeout that runtime sent and the
  // budget held below it, and what the session did.
  auto status = h.Ctl({"status", "-o", "json"});
  INFO(status.output);
  REQUIRE(status.exit_code == 0);
  const auto nri = nlohmann::json::parse(status.output).at("daemon").at("nri");
  CHECK(nri.at("connected") == true);
  CHECK(nri.at("socket") == runtime.path());
  CHECK(nri.at("runtime_name") == "fake-runtime");
  CHECK(nri.at("runtime_timeout_ms") == 2000);
  CHECK(nri.at("event_budget_ms") == 300);
  CHECK(nri.at("fail_closed") == true);
  CHECK(nri.at("refused_starts") == 1);
  CHECK(nri.at("events") == 2);
  auto text = h.Ctl({"status"});
  CHECK_THAT(text.output, Catch::Contains("NRI:") &&
                              Catch::Contains("registered with fake-runtime") &&
                              Catch::Contains("fail-closed, budget 300 ms (runtime's timeout "
                                              "2000 ms); 2 events, 0 answered late, 1 starts "
                                              "refused"));
}
