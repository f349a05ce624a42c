// The NRI session's life against a real containerd with NRI (a private instance, see
// support/private_containerd.h): the runtime restarted under a running pod, netqos restarted
// (a new session) under one, and a netqos slower than the runtime's request timeout. Hidden ([.])
// like nri_containerd_test.cc: Debian 12's containerd (1.6) has no NRI; the suite runs them with
// Debian 13's 1.7 and unstable's 2.1 (tests/cri_integration/nri_real_runtime.sh).
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "cri_integration/nri_recording_events.h"
#include "support/private_containerd.h"

using netqos::nri_plugin::ContainerEvent;
using netqos::nri_plugin::NriSessionOptions;
using netqos::testing::CgroupHasProcess;
using netqos::testing::Eventually;
using netqos::testing::PrivateContainerd;
using netqos::testing::RecordingEvents;
using netqos::testing::RunningSession;

namespace {

NriSessionOptions OptionsFor(const PrivateContainerd& ctrd) {
  REQUIRE(Eventually([&] { return std::filesystem::exists(ctrd.nri_socket()); },
                     std::chrono::seconds(5)));  // none: this containerd has no NRI (1.7+)
  NriSessionOptions options;
  options.socket_path = ctrd.nri_socket();
  return options;
}

PrivateContainerd::Pod HostPod(const std::string& uid, const std::string& name) {
  return PrivateContainerd::Pod{uid, "default", name, "", true, {}, ""};
}

// Container "app" started in a new sandbox of `pod` while netqos holds the next CreateContainer
// event for `handler`, and how long the runtime took to start it.
struct HeldStart {
  std::string container;
  std::chrono::steady_clock::duration took;
};
HeldStart StartWithCreateHeld(PrivateContainerd& ctrd, RecordingEvents& events,
                              const PrivateContainerd::Pod& pod, std::chrono::seconds handler) {
  events.HoldNext(ContainerEvent::kCreate, handler);
  const std::string sandbox = ctrd.RunSandbox(pod);
  const auto before = std::chrono::steady_clock::now();
  std::string container = ctrd.StartContainer(sandbox, "app");
  return {std::move(container), std::chrono::steady_clock::now() - before};
}

}  // namespace

TEST_CASE("nri session: a restarted containerd is rejoined and synchronizes the running pod",
          "[.][nri][containerd][lifecycle]") {
  PrivateContainerd ctrd(/*with_nri=*/true);
  RecordingEvents events;
  RunningSession running(OptionsFor(ctrd), events);
  REQUIRE(Eventually([&] { return running.stats().configured == 1; }));
  const auto pod = HostPod("0b6f1d2e-3c4a-4b5c-8d6e-7f8091a2b3c4", "nri-restart");
  const std::string sandbox = ctrd.RunSandbox(pod);
  const std::string container = ctrd.StartContainer(sandbox, "app");
  REQUIRE(Eventually([&] { return events.log().size() >= 4; }));  // Synchronize, Run, Create, Start

  ctrd.Restart();
  INFO("containerd's log:\n" << ctrd.Log());
  INFO("last error: " << running.session().last_error());
  // The old connection closed; the session dialled again and registered anew, and the runtime
  // listed what survived its restart: the pod and its running container.
  REQUIRE(Eventually([&] { return running.stats().configured == 2; }, std::chrono::seconds(30)));
  REQUIRE(Eventually([&] { return events.log().size() >= 5; }));
  CHECK(events.log()[4] == "Synchronize pod " + pod.uid + " container app cgroup exists");
  CHECK(events.ids().back() == container);
  CHECK(running.stats().dropped_connections == 1);
  CHECK(running.stats().connects >= 2);
  CHECK(running.stats().invalid_events == 0);
  CHECK(running.stats().late_replies == 0);

  // And the new connection carries the events of what comes next.
  const std::string second = ctrd.StartContainer(sandbox, "sidecar");
  CHECK(Eventually([&] { return events.log().size() >= 7; }));
  CHECK(events.log().back() == "StartContainer " + pod.uid + " sidecar cgroup exists");
  CHECK(events.ids().back() == second);
}

TEST_CASE("nri session: a new session synchronizes the pods and containers already running",
          "[.][nri][containerd][lifecycle]") {
  PrivateContainerd ctrd(/*with_nri=*/true);
  const auto pod = HostPod("5d4c3b2a-1908-4f7e-a6d5-c4b3a2918070", "nri-replug");
  std::string sandbox, container;
  {
    RecordingEvents first;
    RunningSession running(OptionsFor(ctrd), first);
    REQUIRE(Eventually([&] { return running.stats().configured == 1; }));
    sandbox = ctrd.RunSandbox(pod);
    container = ctrd.StartContainer(sandbox, "app");
    REQUIRE(Eventually([&] { return first.log().size() >= 4; }));
  }  // netqos stops: the plugin's connection closes

  // A container started while no plugin is connected is listed too.
  const std::string later = ctrd.StartContainer(sandbox, "late");
  RecordingEvents events;
  RunningSession running(OptionsFor(ctrd), events);
  INFO("containerd's log:\n" << ctrd.Log());
  REQUIRE(Eventually([&] { return !events.log().empty(); }));
  const std::vector<std::string> want = {"Synchronize pod " + pod.uid +
                                         " container app cgroup exists container late cgroup "
                                         "exists"};
  const std::vector<std::string> want_other_order = {
      "Synchronize pod " + pod.uid + " container late cgroup exists container app cgroup exists"};
  const auto log = events.log();
  CHECK((log == want || log == want_other_order));
  auto ids = events.ids();
  std::sort(ids.begin(), ids.end());
  auto want_ids = std::vector<std::string>{container, later};
  std::sort(want_ids.begin(), want_ids.end());
  CHECK(ids == want_ids);
  CHECK(running.stats().configured == 1);
  CHECK(running.stats().invalid_events == 0);
}

TEST_CASE("nri session: a handler slower than containerd's timeout is answered at its budget",
          "[.][nri][containerd][lifecycle]") {
  PrivateContainerd ctrd(/*with_nri=*/true);
  RecordingEvents events;
  // The default budget (1 s), below containerd's request timeout (2 s by default).
  RunningSession running(OptionsFor(ctrd), events);
  REQUIRE(Eventually([&] { return running.stats().configured == 1; }));

  constexpr auto kHandler = std::chrono::seconds(6);
  const auto pod = HostPod("9a8b7c6d-5e4f-4321-8fed-cba987654321", "nri-slow");
  const auto [container, took] = StartWithCreateHeld(ctrd, events, pod, kHandler);
  INFO("containerd's log:\n" << ctrd.Log());
  INFO("last error: " << running.session().last_error());
  // Created and started without waiting for the handler, and running.
  CHECK(took < kHandler);
  REQUIRE(Eventually([&] { return events.log().size() >= 3; }));  // Synchronize, Run, Create
  CHECK(events.log()[2] == "CreateContainer " + pod.uid + " app cgroup missing");
  events.Release();
  REQUIRE(Eventually([&] { return events.log().size() >= 4; }));
  CHECK(events.log()[3] == "StartContainer " + pod.uid + " app cgroup exists");
  CHECK(events.ids().back() == container);
  CHECK(CgroupHasProcess(events.cgroups_path()));
  CHECK(events.held() == 1);
  // Both replies went out at the budget (StartContainer's event waited behind the held one), so
  // containerd never timed the plugin out and kept its connection.
  CHECK(running.stats().late_replies == 2);
  CHECK(running.stats().dropped_connections == 0);
  CHECK(running.stats().connects == 1);
}

// containerd 1.7 (NRI before v0.7) does not send its request timeout in Configure, and closes a
// plugin that answers after it (2 s, NRI's default): the session then holds any budget to half
// of NRI's default, so a budget asked for above it neither delays the container nor loses the
// connection. (Before that cap containerd dropped the plugin here, and it had to register again.)
TEST_CASE("nri session: a budget above containerd's timeout is held below it and keeps the plugin",
          "[.][nri][containerd][lifecycle]") {
  PrivateContainerd ctrd(/*with_nri=*/true);
  RecordingEvents events;
  NriSessionOptions options = OptionsFor(ctrd);
  options.event_budget = std::chrono::seconds(10);
  RunningSession running(options, events);
  REQUIRE(Eventually([&] { return running.stats().configured == 1; }));

  constexpr auto kHandler = std::chrono::seconds(6);
  const auto pod = HostPod("2f3e4d5c-6b7a-4988-9766-554433221100", "nri-overbudget");
  const auto [container, took] = StartWithCreateHeld(ctrd, events, pod, kHandler);
  INFO("containerd's log:\n" << ctrd.Log());
  INFO("last error: " << running.session().last_error());
  CHECK(took < kHandler);
  events.Release();
  REQUIRE(Eventually([&] { return events.log().size() >= 4; }));  // ... Create, Start
  // Answered at the held budget, inside containerd's timeout: the connection stayed.
  CHECK(running.stats().late_replies >= 1);
  CHECK(running.stats().dropped_connections == 0);
  CHECK(running.stats().connects == 1);
  CHECK(running.stats().configured == 1);
  CHECK(events.held() == 1);
  const auto ids = events.ids();
  CHECK(std::find(ids.begin(), ids.end(), container) != ids.end());
  // The held budget: 1.7 sends no timeout, 2 sends its default (2 s); half of 2 s either way.
  CHECK(running.stats().runtime_request_timeout_ms == (ctrd.major_version() >= 2 ? 2000u : 0u));
  CHECK(running.stats().event_budget_ms == 1000);
}

// containerd 2 (NRI v0.12 and later) sends its request timeout in Configure. Configured shorter
// than netqos's default budget (900 ms against 1 s), it must be what the session answers within:
// at the default budget containerd would time the plugin out and close its connection. 1.7 sends
// none and is left out ([containerd2], tests/cri_integration/nri_real_runtime.sh).
TEST_CASE("nri session: containerd 2's request timeout, sent in Configure, sets the budget",
          "[.][nri][containerd][lifecycle][containerd2]") {
  constexpr auto kRuntimeTimeout = std::chrono::milliseconds(900);
  PrivateContainerd ctrd(/*with_nri=*/true, kRuntimeTimeout);
  REQUIRE(ctrd.major_version() >= 2);
  RecordingEvents events;
  RunningSession running(OptionsFor(ctrd), events);  // the default budget: 1 s
  REQUIRE(Eventually([&] { return running.stats().configured == 1; }));
  CHECK(running.stats().runtime_request_timeout_ms == 900);
  CHECK(running.stats().event_budget_ms == 450);

  constexpr auto kHandler = std::chrono::seconds(4);
  const auto pod = HostPod("6e5d4c3b-2a19-4087-b6c5-d4e3f2a1b0c9", "nri-runtime-timeout");
  const std::string container = StartWithCreateHeld(ctrd, events, pod, kHandler).container;
  INFO("containerd's log:\n" << ctrd.Log());
  INFO("last error: " << running.session().last_error());
  events.Release();
  REQUIRE(Eventually([&] { return events.log().size() >= 4; }));  // ... Create, Start
  CHECK(events.log()[3] == "StartContainer " + pod.uid + " app cgroup exists");
  CHECK(events.ids().back() == container);
  // CreateContainer, and StartContainer queued behind it, were answered at 450 ms, inside
  // containerd's 900: it kept the plugin.
  CHECK(running.stats().late_replies == 2);
  CHECK(running.stats().dropped_connections == 0);
  CHECK(running.stats().connects == 1);
  CHECK(running.stats().configured == 1);
  CHECK(ctrd.Log().find("closing plugin") == std::string::npos);
}
