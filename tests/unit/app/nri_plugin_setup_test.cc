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
#include "app/enforcement_setup.h"
#include "enforce/pod_annotation_keys.h"
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
  CHECK_FALSE(options.fail_closed);

  auto closed = Parse({"--nri-socket=/var/run/nri/nri.sock", "--nri-fail-closed"});
  REQUIRE(closed.config);
  CHECK(netqos::app::NriSessionOptionsOf(*closed.config).fail_closed);
}

TEST_CASE("nri flags: the session keeps only the pod annotations the enforcer reads") {
  auto parsed = Parse({"--nri-socket=/var/run/nri/nri.sock",
                       "--network-resource-plugin-net-class-annotation-key=example.com/class"});
  REQUIRE(parsed.config);
  const auto options = netqos::app::NriSessionOptionsOf(*parsed.config);
  REQUIRE(options.annotation_keys.has_value());
  CHECK(*options.annotation_keys == netqos::enforce::PodAnnotationKeys(parsed.config->policy));
  CHECK(options.annotation_keys->contains("example.com/class"));
  CHECK(options.annotation_keys->contains("kubernetes.io/egress-bandwidth"));
  CHECK_FALSE(
      options.annotation_keys->contains("kubectl.kubernetes.io/last-applied-configuration"));
  // The pod source keeps the same ones: both feed the enforcer's pod list.
  CHECK(netqos::app::PodSourceOptionsOf(*parsed.config).annotation_keys == options.annotation_keys);
}

TEST_CASE("nri flags: a relative socket, a budget out of range or no enforcer are refused") {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--nri-socket=nri.sock"},
           {"--nri-socket=/run/nri.sock", "--nri-event-budget-ms=0"},
           {"--nri-socket=/run/nri.sock", "--nri-event-budget-ms=60001"},
           {"--nri-socket=/run/nri.sock", "--enforcement=none"},
           {"--nri-fail-closed"}}) {
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

  runtime.Handshake();

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

TEST_CASE(
    "nri bridge: fail-closed refuses only a capped pod's start the enforcer did not confirm") {
  FakeEnforcer enforcer;
  enforcer.answer = false;
  NriEnforcerBridge bridge(
      enforcer.Callback(), milliseconds(250),
      [](const netqos::nri_plugin::NriPod& pod) { return pod.uid == "uid-capped"; });
  netqos::nri_plugin::NriPod capped;
  capped.uid = "uid-capped";
  capped.namespace_name = "team";
  capped.name = "web-0";
  netqos::nri_plugin::NriPod free_pod;
  free_pod.uid = "uid-free";
  netqos::nri_plugin::NriContainer container;
  container.id = "ctr1";
  using netqos::nri_plugin::ContainerEvent;

  bridge.OnContainerEvent(ContainerEvent::kStart, capped, container);
  const netqos::Status refused = bridge.StartRefusal(capped, container);
  CHECK(refused.code() == netqos::StatusCode::kFailedPrecondition);
  CHECK(refused.message().find("container ctr1 of pod team/web-0") != std::string::npos);
  CHECK(refused.message().find("250 ms") != std::string::npos);
  CHECK(bridge.StartRefusal(free_pod, container).ok());

  // Confirmed by the enforcer: it starts, and the confirmation is used once.
  enforcer.answer = true;
  bridge.OnContainerEvent(ContainerEvent::kStart, capped, container);
  CHECK(bridge.StartRefusal(capped, container).ok());
  CHECK_FALSE(bridge.StartRefusal(capped, container).ok());

  // A confirmation of a container that then stops is forgotten with it.
  bridge.OnContainerEvent(ContainerEvent::kStart, capped, container);
  bridge.OnContainerEvent(ContainerEvent::kStop, capped, container);
  CHECK_FALSE(bridge.StartRefusal(capped, container).ok());
}

TEST_CASE("nri bridge: without a capped predicate nothing is ever refused") {
  FakeEnforcer enforcer;
  enforcer.answer = false;
  NriEnforcerBridge bridge(enforcer.Callback(), milliseconds(250));
  netqos::nri_plugin::NriPod pod;
  pod.uid = "uid-1";
  netqos::nri_plugin::NriContainer container;
  container.id = "ctr1";
  bridge.OnContainerEvent(netqos::nri_plugin::ContainerEvent::kStart, pod, container);
  CHECK(bridge.StartRefusal(pod, container).ok());
}

TEST_CASE("nri bridge: a pod is capped when one of its allocations has bandwidth") {
  netqos::core::PodEntries entries;
  entries["uid-zero"]["app"].egress = 0;
  entries["uid-in"]["app"].ingress = 10;
  entries["uid-out"]["side"].egress = 0;
  entries["uid-out"]["app"].egress = 100;
  using netqos::app::HasBandwidthAllocation;
  CHECK_FALSE(HasBandwidthAllocation(entries, "uid-zero"));
  CHECK_FALSE(HasBandwidthAllocation(entries, "uid-absent"));
  CHECK(HasBandwidthAllocation(entries, "uid-in"));
  CHECK(HasBandwidthAllocation(entries, "uid-out"));
}

// The whole path: the runtime's StartContainer fails when the enforcer cannot place a capped
// container's class, and succeeds for a pod netqos does not cap.
TEST_CASE("nri plugin: fail-closed makes the runtime's StartContainer of a capped pod fail") {
  netqos::nri_test::FakeNriRuntime runtime;
  FakeEnforcer enforcer;
  enforcer.answer = false;
  netqos::nri_plugin::NriSessionOptions options;
  options.socket_path = runtime.path();
  options.event_budget = milliseconds(500);
  options.fail_closed = true;
  NriPlugin plugin(options, enforcer.Callback(),
                   [](const netqos::nri_plugin::NriPod& pod) { return pod.uid == "uid-1"; });

  runtime.Handshake();

  auto start_of = [&](const std::string& sandbox, const std::string& uid, const std::string& id) {
    api::StartContainerRequest start;
    start.mutable_pod()->set_id(sandbox);
    start.mutable_pod()->set_uid(uid);
    start.mutable_container()->set_id(id);
    start.mutable_container()->set_pod_sandbox_id(sandbox);
    return runtime.Reply(runtime.Call("StartContainer", start));
  };
  auto refused = start_of("sandbox1", "uid-1", "ctr1");
  REQUIRE(refused.has_value());
  CHECK(refused->status.code() == netqos::StatusCode::kFailedPrecondition);
  CHECK(refused->status.message().find("ctr1") != std::string::npos);
  auto uncapped = start_of("sandbox2", "uid-2", "ctr2");
  REQUIRE(uncapped.has_value());
  CHECK(uncapped->status.ok());
  CHECK(plugin.stats().refused_starts == 1);
}

TEST_CASE("nri bridge: a pod capped by its annotations or by a level ceiling counts as capped") {
  using netqos::app::CappedByNetqos;
  netqos::core::PodEntries none;
  netqos::nri_plugin::NriPod pod;
  pod.uid = "uid-1";
  CHECK_FALSE(CappedByNetqos(none, pod, false));
  CHECK(CappedByNetqos(none, pod, true));  // --qos-level-shaping holds a level below its link

  netqos::core::PodEntries allocated;
  allocated["uid-1"]["app"].egress = 10;
  CHECK(CappedByNetqos(allocated, pod, false));

  pod.annotations["kubernetes.io/egress-bandwidth"] = "10M";
  CHECK(CappedByNetqos(none, pod, false));
  pod.annotations = {{"kubernetes.io/ingress-bandwidth", "1G"}};
  CHECK(CappedByNetqos(none, pod, false));
  // Refused (below the kubelet's minimum): held all the same, rather than started uncapped.
  pod.annotations = {{"kubernetes.io/ingress-bandwidth", "1"}};
  CHECK(CappedByNetqos(none, pod, false));
  pod.annotations = {{"example.com/egress-bandwidth", "10M"}};
  CHECK_FALSE(CappedByNetqos(none, pod, false));
}

TEST_CASE("nri flags: level ceilings below the link are what make every pod count as capped") {
  CHECK_FALSE(netqos::app::HasLevelCeilings(*Parse({}).config));
  CHECK_FALSE(
      netqos::app::HasLevelCeilings(*Parse({"--qos-level-shaping=reclaimed=100:1000:3"}).config));
  CHECK(netqos::app::HasLevelCeilings(*Parse({"--qos-level-shaping=reclaimed=100:500:3"}).config));
}

TEST_CASE("nri bridge: a pod reads as the pod list would have it") {
  using netqos::nri_plugin::PodNetwork;
  netqos::nri_plugin::NriPod pod;
  pod.id = "sandbox1";
  pod.uid = "0f1e2d3c-0000-4000-8000-000000000001";
  pod.namespace_name = "team";
  pod.name = "web-0";
  pod.ips = {"10.244.0.7"};
  pod.network = PodNetwork::kOwn;
  pod.annotations = {{"a", "b"}};
  pod.cgroup_parent = "/kubepods/burstable/pod0f1e2d3c-0000-4000-8000-000000000001";
  const netqos::pods::PodInfo info = netqos::app::PodInfoOf(pod);
  CHECK(info.uid == pod.uid);
  CHECK(info.ns == "team");
  CHECK(info.name == "web-0");
  CHECK(info.qos_class == "Burstable");
  CHECK(info.annotations == pod.annotations);
  CHECK(info.ips == pod.ips);
  CHECK_FALSE(info.host_network);

  pod.network = PodNetwork::kHost;
  pod.cgroup_parent = "kubepods-besteffort-pod0f1e2d3c_0000_4000_8000_000000000001.slice";
  const netqos::pods::PodInfo host = netqos::app::PodInfoOf(pod);
  CHECK(host.host_network);
  CHECK(host.ips.empty());
  CHECK(host.qos_class == "BestEffort");
  pod.network = PodNetwork::kUnknown;
  CHECK(netqos::app::PodInfoOf(pod).ips.empty());
  CHECK_FALSE(netqos::app::PodInfoOf(pod).host_network);
}

// What the bridge hands the enforcer's pod list, as text.
struct FeedLog : netqos::app::RuntimeFeed {
  std::vector<std::string> calls;
  void Pod(netqos::pods::PodInfo pod) override {
    std::string ips;
    for (const auto& ip : pod.ips) ips += " " + ip;
    calls.push_back("pod " + pod.uid + ips);
  }
  void Container(const netqos::pods::PodInfo& pod, netqos::pods::ContainerInfo container) override {
    calls.push_back("container " + pod.uid + " " + container.name + " " + container.id);
  }
  void PodRemoved(const std::string& uid) override { calls.push_back("pod removed " + uid); }
  void ContainerRemoved(const std::string& uid, const std::string& id) override {
    calls.push_back("container removed " + uid + " " + id);
  }
};

TEST_CASE("nri bridge: the runtime's pods and containers reach the enforcer's pod list") {
  FakeEnforcer enforcer;
  FeedLog log;
  NriEnforcerBridge bridge(enforcer.Callback(), milliseconds(250), {}, &log);
  using netqos::nri_plugin::ContainerEvent;
  using netqos::nri_plugin::PodEvent;
  using netqos::nri_plugin::PodNetwork;
  netqos::nri_plugin::NriPod pod;
  pod.id = "sandbox1";
  pod.uid = "uid-own";
  pod.ips = {"10.244.0.7", "fd00::7"};
  pod.network = PodNetwork::kOwn;
  netqos::nri_plugin::NriContainer app;
  app.id = "ctr1";
  app.pod_sandbox_id = "sandbox1";
  app.name = "app";
  bridge.OnPodEvent(PodEvent::kRun, pod);
  bridge.OnContainerEvent(ContainerEvent::kCreate, pod, app);
  bridge.OnContainerEvent(ContainerEvent::kStart, pod, app);
  bridge.OnPodEvent(PodEvent::kStop, pod);  // nothing: the pod keeps what it had until removed
  bridge.OnContainerEvent(ContainerEvent::kStop, pod, app);
  bridge.OnContainerEvent(ContainerEvent::kRemove, pod, app);
  bridge.OnPodEvent(PodEvent::kRemove, pod);

  netqos::nri_plugin::NriPod host = pod;
  host.id = "sandbox2";
  host.uid = "uid-host";
  host.network = PodNetwork::kHost;  // the node's addresses: never claimed
  netqos::nri_plugin::NriContainer orphan = app;
  orphan.id = "ctr9";
  orphan.pod_sandbox_id = "sandbox-gone";  // a pod Synchronize does not list: not handed on
  bridge.OnSynchronize({pod, host}, {app, orphan});

  CHECK(log.calls == std::vector<std::string>{
                         "pod uid-own 10.244.0.7 fd00::7",
                         "container uid-own app ctr1",
                         "container uid-own app ctr1",
                         "container removed uid-own ctr1",
                         "pod removed uid-own",
                         "pod uid-own 10.244.0.7 fd00::7",
                         "pod uid-host",
                         "container uid-own app ctr1",
                     });
  std::lock_guard lock(enforcer.mu);
  CHECK(enforcer.asked == std::vector<std::string>{"ctr1"});
}
