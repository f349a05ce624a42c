// netqosd as an NRI plugin: its flags, and the bridge that makes the runtime's StartContainer
// wait for the enforcer, over a fake runtime on a real unix socket.
#include "app/nri_plugin_setup.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "app/daemon_config.h"
#include "unit/nri/fake_nri_runtime.h"

namespace {

namespace api = ::nri::pkg::api::v1alpha1;
using netqos::app::NriEnforcerBridge;
using netqos::app::NriPlugin;
using std::chrono::milliseconds;

netqos::app::ParsedFlags Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "--topology-file=/dev/null");
  args.insert(args.begin(), "netqosd");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream err;
  std::streambuf* old = std::cerr.rdbuf(err.rdbuf());
  auto parsed = netqos::app::ParseDaemonFlags(static_cast<int>(argv.size()), argv.data());
  std::cerr.rdbuf(old);
  return parsed;
}

// What the bridge asked the enforcer, with the answer it gets.
struct FakeEnforcer {
  std::mutex mu;
  std::vector<std::string> asked;
  milliseconds wait{0};
  bool answer = true;
  NriEnforcerBridge::OnStarting Callback() {
    return [this](const std::string& id, milliseconds timeout) {
      std::lock_guard lock(mu);
      asked.push_back(id);
      wait = timeout;
      return answer;
    };
  }
};

}  // namespace

TEST_CASE("nri flags: off by default, a socket and a budget when given") {
  auto defaults = Parse({});
  REQUIRE(defaults.config);
  CHECK(defaults.config->nri_socket.empty());

  auto on = Parse({"--nri-socket=/var/run/nri/nri.sock", "--nri-event-budget-ms=300"});
  REQUIRE(on.config);
  const auto options = netqos::app::NriSessionOptionsOf(*on.config);
  CHECK(options.socket_path == "/var/run/nri/nri.sock");
  CHECK(options.event_budget == milliseconds(300));
  CHECK(options.plugin_name == "netqos");
}

TEST_CASE("nri flags: a relative socket, a budget out of range or no enforcer are refused") {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--nri-socket=nri.sock"},
           {"--nri-socket=/run/nri.sock", "--nri-event-budget-ms=0"},
           {"--nri-socket=/run/nri.sock", "--nri-event-budget-ms=60001"},
           {"--nri-socket=/run/nri.sock", "--enforcement=none"}}) {
    INFO(args.back());
    auto parsed = Parse(args);
    CHECK_FALSE(parsed.config);
    CHECK(parsed.exit_code == 2);
  }
}

TEST_CASE("nri bridge: only StartContainer waits for the enforcer, with the budget") {
  FakeEnforcer enforcer;
  NriEnforcerBridge bridge(enforcer.Callback(), milliseconds(250));
  netqos::nri_plugin::NriPod pod;
  pod.uid = "uid-1";
  netqos::nri_plugin::NriContainer container;
  container.id = "ctr1";
  using netqos::nri_plugin::ContainerEvent;
  for (ContainerEvent event : {ContainerEvent::kCreate, ContainerEvent::kStop,
                               ContainerEvent::kRemove, ContainerEvent::kStart}) {
    bridge.OnContainerEvent(event, pod, container);
  }
  bridge.OnPodEvent(netqos::nri_plugin::PodEvent::kRun, pod);
  CHECK(enforcer.asked == std::vector<std::string>{"ctr1"});
  CHECK(enforcer.wait == milliseconds(250));
}

TEST_CASE("nri plugin: the runtime's StartContainer is answered after the enforcer was asked") {
  netqos::nri_test::FakeNriRuntime runtime;
  FakeEnforcer enforcer;
  netqos::nri_plugin::NriSessionOptions options;
  options.socket_path = runtime.path();
  options.event_budget = milliseconds(1000);
  NriPlugin plugin(options, enforcer.Callback());

  runtime.Accept();
  runtime.ServeRegister();
  api::ConfigureRequest configure;
  configure.set_request_timeout(2000);
  auto configured = runtime.Reply(runtime.Call("Configure", configure));
  REQUIRE(configured.has_value());
  REQUIRE(configured->status.ok());

  api::StartContainerRequest start;
  start.mutable_pod()->set_id("sandbox1");
  start.mutable_pod()->set_uid("uid-1");
  start.mutable_container()->set_id("ctr1");
  start.mutable_container()->set_pod_sandbox_id("sandbox1");
  auto reply = runtime.Reply(runtime.Call("StartContainer", start));
  REQUIRE(reply.has_value());
  CHECK(reply->status.ok());
  std::lock_guard lock(enforcer.mu);
  CHECK(enforcer.asked == std::vector<std::string>{"ctr1"});
}
