// The NRI session against a fake runtime on a real unix socket (fake_nri_runtime.h): what it
// registers and subscribes to, the events it hands to the port before replying, its time budget,
// reconnecting after a runtime restart, and input no runtime should send.
#include "nri_plugin/nri_session.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fake_nri_runtime.h"
#include "nri/v1alpha1/api.pb.h"
#include "nri_plugin/nri_events.h"

namespace {

namespace api = ::nri::pkg::api::v1alpha1;
using netqos::StatusCode;
using netqos::nri_plugin::ContainerEvent;
using netqos::nri_plugin::NriContainer;
using netqos::nri_plugin::NriPod;
using netqos::nri_plugin::NriSession;
using netqos::nri_plugin::NriSessionOptions;
using netqos::nri_plugin::PodEvent;
using netqos::nri_test::FakeNriRuntime;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

class RecordingEvents : public netqos::nri_plugin::NriEvents {
 public:
  explicit RecordingEvents(milliseconds delay = milliseconds(0)) : delay_(delay) {}

  void OnSynchronize(const std::vector<NriPod>& pods,
                     const std::vector<NriContainer>& containers) override {
    std::this_thread::sleep_for(delay_);
    std::string line = "Synchronize";
    for (const NriPod& pod : pods) line += " pod:" + pod.uid;
    for (const NriContainer& c : containers) line += " container:" + c.id;
    Record(line);
  }
  void OnPodEvent(PodEvent event, const NriPod& pod) override {
    std::this_thread::sleep_for(delay_);
    Record(std::string(netqos::nri_plugin::PodEventName(event)) + " " + pod.uid + " " +
           pod.namespace_name + "/" + pod.name + " ips=" + (pod.ips.empty() ? "" : pod.ips[0]));
  }
  void OnContainerEvent(ContainerEvent event, const NriPod& pod,
                        const NriContainer& container) override {
    std::this_thread::sleep_for(delay_);
    Record(std::string(netqos::nri_plugin::ContainerEventName(event)) + " " + pod.uid + " " +
           container.id + " " + container.cgroups_path);
  }

  std::vector<std::string> log() const {
    std::lock_guard lock(mu_);
    return log_;
  }

 private:
  void Record(std::string line) {
    std::lock_guard lock(mu_);
    log_.push_back(std::move(line));
  }

  milliseconds delay_;
  mutable std::mutex mu_;
  std::vector<std::string> log_;
};

// A port that, as netqos's bridge does, refuses a start while a capped pod's container has not
// been placed by its handler; every other container may start.
class GatekeeperEvents : public RecordingEvents {
 public:
  GatekeeperEvents(std::set<std::string> capped_uids, bool places,
                   milliseconds delay = milliseconds(0))
      : RecordingEvents(delay), capped_(std::move(capped_uids)), places_(places) {}

  void OnContainerEvent(ContainerEvent event, const NriPod& pod,
                        const NriContainer& container) override {
    RecordingEvents::OnContainerEvent(event, pod, container);
    std::lock_guard lock(mu_);
    if (event == ContainerEvent::kStart && places_) placed_.insert(container.id);
  }
  netqos::Status StartRefusal(const NriPod& pod, const NriContainer& container) override {
    std::lock_guard lock(mu_);
    ++asked_;
    if (capped_.count(pod.uid) == 0 || placed_.count(container.id) != 0) {
      return netqos::Status::Ok();
    }
    return netqos::FailedPrecondition("class of container " + container.id + " not in place");
  }
  int asked() const {
    std::lock_guard lock(mu_);
    return asked_;
  }

 private:
  const std::set<std::string> capped_;
  const bool places_;
  mutable std::mutex mu_;
  std::set<std::string> placed_;
  int asked_ = 0;
};

// A port that records the annotations of the pods it is handed, one line per event.
class AnnotationEvents : public netqos::nri_plugin::NriEvents {
 public:
  void OnSynchronize(const std::vector<NriPod>& pods, const std::vector<NriContainer>&) override {
    for (const NriPod& pod : pods) Record("Synchronize", pod);
  }
  void OnPodEvent(PodEvent event, const NriPod& pod) override {
    Record(netqos::nri_plugin::PodEventName(event), pod);
  }
  void OnContainerEvent(ContainerEvent event, const NriPod& pod, const NriContainer&) override {
    Record(netqos::nri_plugin::ContainerEventName(event), pod);
  }

  std::vector<std::string> log() const {
    std::lock_guard lock(mu_);
    return log_;
  }

 private:
  void Record(const std::string& what, const NriPod& pod) {
    std::string line = what + " " + pod.uid;
    for (const auto& [key, value] : pod.annotations) line += " " + key + "=" + value;
    std::lock_guard lock(mu_);
    log_.push_back(std::move(line));
  }

  mutable std::mutex mu_;
  std::vector<std::string> log_;
};

NriSessionOptions TestOptions(const std::string& socket, milliseconds budget = milliseconds(1000),
                              size_t max_queued_events = 1024, bool fail_closed = false) {
  NriSessionOptions options;
  options.fail_closed = fail_closed;
  options.max_queued_events = max_queued_events;
  options.socket_path = socket;
  options.event_budget = budget;
  options.registration_timeout = milliseconds(3000);
  options.backoff_initial = milliseconds(20);
  options.backoff_max = milliseconds(100);
  return options;
}

// The session on its own thread for the test's lifetime.
class RunningSession {
 public:
  RunningSession(const std::string& socket, netqos::nri_plugin::NriEvents& events,
                 milliseconds budget = milliseconds(1000), size_t max_queued_events = 1024,
                 bool fail_closed = false)
      : RunningSession(TestOptions(socket, budget, max_queued_events, fail_closed), events) {}
  RunningSession(const NriSessionOptions& options, netqos::nri_plugin::NriEvents& events) {
    session_ = std::make_unique<NriSession>(options, events);
    thread_ = std::thread([this] { session_->Run(); });
  }
  ~RunningSession() {
    session_->Stop();
    thread_.join();
  }
  NriSession& operator*() { return *session_; }
  NriSession* operator->() { return session_.get(); }

  // The session records the error after the connection closed: wait for it.
  std::string WaitLastError() {
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (session_->last_error().empty() && Clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    return session_->last_error();
  }

 private:
  std::unique_ptr<NriSession> session_;
  std::thread thread_;
};

api::PodSandbox MakePod(const std::string& id, const std::string& uid) {
  api::PodSandbox pod;
  pod.set_id(id);
  pod.set_uid(uid);
  pod.set_namespace_("default");
  pod.set_name("web-0");
  pod.add_ips("10.1.2.3");
  pod.mutable_linux()->set_cgroup_parent("/kubepods/burstable/pod" + uid);
  return pod;
}

api::Container MakeContainer(const std::string& id, const std::string& pod_id,
                             const std::string& cgroups_path) {
  api::Container container;
  container.set_id(id);
  container.set_pod_sandbox_id(pod_id);
  container.set_name("app");
  container.mutable_linux()->set_cgroups_path(cgroups_path);
  return container;
}

}  // namespace

TEST_CASE("nri session: registers as netqos with a two-digit index") {
  FakeNriRuntime runtime;
  RecordingEvents events;
  RunningSession session(runtime.path(), events);
  runtime.Accept();
  const api::RegisterPluginRequest request = runtime.ServeRegister();
  CHECK(request.plugin_name() == "netqos");
  CHECK(request.plugin_idx() == "50");
  CHECK_FALSE(request.nri_version().empty());
}

TEST_CASE("nri session: Configure subscribes to the pod and container life events only") {
  FakeNriRuntime runtime;
  RecordingEvents events;
  RunningSession session(runtime.path(), events);
  const api::ConfigureResponse response = runtime.Handshake();
  // Bit (event - 1) for each event of api.proto's enum Event.
  const int32_t want = (1 << (1 - 1))      // RUN_POD_SANDBOX
                       | (1 << (2 - 1))    // STOP_POD_SANDBOX
                       | (1 << (3 - 1))    // REMOVE_POD_SANDBOX
                       | (1 << (4 - 1))    // CREATE_CONTAINER
                       | (1 << (6 - 1))    // START_CONTAINER
                       | (1 << (10 - 1))   // STOP_CONTAINER
                       | (1 << (11 - 1));  // REMOVE_CONTAINER
  CHECK(response.events() == want);
  CHECK(session->stats().configured == 1);
}

TEST_CASE("nri session: a split Synchronize reaches the port once with everything") {
  FakeNriRuntime runtime;
  RecordingEvents events;
  RunningSession session(runtime.path(), events);
  runtime.Handshake();

  api::SynchronizeRequest first;
  *first.add_pods() = MakePod("sandbox1", "uid-1");
  first.set_more(true);
  const uint32_t s1 = runtime.Call("Synchronize", first);
  auto r1 = runtime.Reply(s1);
  REQUIRE(r1.has_value());
  REQUIRE(r1->status.ok());
  api::SynchronizeResponse partial;
  REQUIRE(partial.ParseFromString(r1->payload));
  CHECK(partial.more());  // NRI closes a plugin whose reply to a partial message says otherwise
  CHECK(events.log().empty());

  api::SynchronizeRequest last;
  *last.add_pods() = MakePod("sandbox2", "uid-2");
  *last.add_containers() = MakeContainer("ctr1", "sandbox1", "/kubepods/burstable/poduid-1/ctr1");
  const uint32_t s2 = runtime.Call("Synchronize", last);
  auto r2 = runtime.Reply(s2);
  REQUIRE(r2.has_value());
  REQUIRE(r2->status.ok());
  api::SynchronizeResponse done;
  REQUIRE(done.ParseFromString(r2->payload));
  CHECK_FALSE(done.more());
  CHECK(done.update_size() == 0);
  CHECK(events.log() == std::vector<std::string>{"Synchronize pod:uid-1 pod:uid-2 container:ctr1"});
}

TEST_CASE("nri session: CreateContainer reaches the port before the runtime gets its reply") {
  FakeNriRuntime runtime;
  RecordingEvents events(milliseconds(200));
  RunningSession session(runtime.path(), events);
  runtime.Handshake();

  api::CreateContainerRequest create;
  *create.mutable_pod() = MakePod("sandbox1", "uid-1");
  *create.mutable_container() =
      MakeContainer("ctr1", "sandbox1", "kubepods-burstable-poduid_1.slice:cri-containerd:ctr1");
  const auto start = Clock::now();
  const uint32_t stream = runtime.Call("CreateContainer", create);
  auto reply = runtime.Reply(stream);
  const auto took = Clock::now() - start;
  REQUIRE(reply.has_value());
  REQUIRE(reply->status.ok());
  // The handler ran to its end before the reply left: its line is there already.
  CHECK(events.log() ==
        std::vector<std::string>{
            "CreateContainer uid-1 ctr1 kubepods-burstable-poduid_1.slice:cri-containerd:ctr1"});
  CHECK(took >= milliseconds(200));
  api::CreateContainerResponse response;
  REQUIRE(response.ParseFromString(reply->payload));
  CHECK_FALSE(response.has_adjust());  // netqos changes nothing in the container
  CHECK(session->stats().late_replies == 0);
}

TEST_CASE("nri session: a handler past its budget still gets the runtime its reply, counted late") {
  FakeNriRuntime runtime;
  RecordingEvents events(milliseconds(1500));
  RunningSession session(runtime.path(), events, milliseconds(100));
  runtime.Handshake();

  api::RunPodSandboxRequest run;
  *run.mutable_pod() = MakePod("sandbox1", "uid-1");
  const auto start = Clock::now();
  const uint32_t stream = runtime.Call("RunPodSandbox", run);
  auto reply = runtime.Reply(stream, milliseconds(1000));
  REQUIRE(reply.has_value());
  CHECK(reply->status.ok());
  CHECK(Clock::now() - start < milliseconds(1000));
  CHECK(session->stats().late_replies == 1);
  CHECK(events.log().empty());  // the handler is still sleeping
}

TEST_CASE("nri session: the budget shrinks to half the runtime's request timeout") {
  FakeNriRuntime runtime;
  RecordingEvents events(milliseconds(1500));
  RunningSession session(runtime.path(), events, milliseconds(1000));
  runtime.Handshake(/*request_timeout_ms=*/200);

  api::StopContainerRequest stop;
  *stop.mutable_pod() = MakePod("sandbox1", "uid-1");
  *stop.mutable_container() = MakeContainer("ctr1", "sandbox1", "/kubepods/poduid-1/ctr1");
  const auto start = Clock::now();
  const uint32_t stream = runtime.Call("StopContainer", stop);
  auto reply = runtime.Reply(stream, milliseconds(1000));
  REQUIRE(reply.has_value());
  CHECK(Clock::now() - start < milliseconds(600));  // the 1000 ms asked for would not fit
  CHECK(session->stats().late_replies == 1);
  CHECK(session->stats().runtime_request_timeout_ms == 200);
  CHECK(session->stats().event_budget_ms == 100);
}

TEST_CASE("nri session: a runtime that sends no request timeout gets half of NRI's default") {
  // containerd 1.7 sends none, and closes a plugin that answers after its 2 s: a budget of 5 s
  // asked for must not outlive that.
  FakeNriRuntime runtime;
  RecordingEvents events(milliseconds(3000));
  RunningSession session(runtime.path(), events, milliseconds(5000));
  runtime.Handshake(/*request_timeout_ms=*/0);

  api::StopContainerRequest stop;
  *stop.mutable_pod() = MakePod("sandbox1", "uid-1");
  *stop.mutable_container() = MakeContainer("ctr1", "sandbox1", "/kubepods/poduid-1/ctr1");
  const auto start = Clock::now();
  const uint32_t stream = runtime.Call("StopContainer", stop);
  auto reply = runtime.Reply(stream, milliseconds(2500));
  REQUIRE(reply.has_value());
  const auto took = Clock::now() - start;
  CHECK(took >= milliseconds(900));
  CHECK(took < milliseconds(1900));  // 1 s, well inside the runtime's 2 s
  CHECK(session->stats().late_replies == 1);
  CHECK(session->stats().runtime_request_timeout_ms == 0);
  CHECK(session->stats().event_budget_ms == 1000);
}

TEST_CASE("nri session: an older runtime's StateChange events reach the port") {
  FakeNriRuntime runtime;
  RecordingEvents events;
  RunningSession session(runtime.path(), events);
  runtime.Handshake();

  api::StateChangeEvent start;
  start.set_event(api::START_CONTAINER);
  *start.mutable_pod() = MakePod("sandbox1", "uid-1");
  *start.mutable_container() = MakeContainer("ctr1", "sandbox1", "/kubepods/poduid-1/ctr1");
  auto r1 = runtime.Reply(runtime.Call("StateChange", start));
  REQUIRE(r1.has_value());
  CHECK(r1->status.ok());

  api::StateChangeEvent remove_pod;
  remove_pod.set_event(api::REMOVE_POD_SANDBOX);
  *remove_pod.mutable_pod() = MakePod("sandbox1", "uid-1");
  auto r2 = runtime.Reply(runtime.Call("StateChange", remove_pod));
  REQUIRE(r2.has_value());
  CHECK(r2->status.ok());

  // An event netqos did not subscribe to is acknowledged and goes nowhere.
  api::StateChangeEvent post_start;
  post_start.set_event(api::POST_START_CONTAINER);
  *post_start.mutable_pod() = MakePod("sandbox1", "uid-1");
  auto r3 = runtime.Reply(runtime.Call("StateChange", post_start));
  REQUIRE(r3.has_value());
  CHECK(r3->status.ok());

  CHECK(events.log() ==
        std::vector<std::string>{"StartContainer uid-1 ctr1 /kubepods/poduid-1/ctr1",
                                 "RemovePodSandbox uid-1 default/web-0 ips=10.1.2.3"});
}

TEST_CASE("nri session: a method it does not serve is Unimplemented so the runtime falls back") {
  FakeNriRuntime runtime;
  RecordingEvents events;
  RunningSession session(runtime.path(), events);
  runtime.Handshake();
  api::UpdateContainerRequest update;
  auto reply = runtime.Reply(runtime.Call("UpdateContainer", update));
  REQUIRE(reply.has_value());
  CHECK(reply->status.code() == StatusCode::kUnimplemented);
  CHECK(events.log().empty());
}

TEST_CASE("nri session: reconnects and registers again after the runtime restarts") {
  FakeNriRuntime runtime;
  RecordingEvents events;
  RunningSession session(runtime.path(), events);
  runtime.Handshake();
  runtime.Restart();
  runtime.Handshake();
  CHECK(session->stats().connects == 2);
  CHECK(session->stats().configured == 2);
  CHECK(session->stats().dropped_connections == 1);

  api::CreateContainerRequest create;
  *create.mutable_pod() = MakePod("sandbox1", "uid-1");
  *create.mutable_container() = MakeContainer("ctr1", "sandbox1", "/kubepods/poduid-1/ctr1");
  auto reply = runtime.Reply(runtime.Call("CreateContainer", create));
  REQUIRE(reply.has_value());
  CHECK(events.log().size() == 1);
}

TEST_CASE("nri session: an event with a hostile id or path is answered without the port") {
  FakeNriRuntime runtime;
  RecordingEvents events;
  RunningSession session(runtime.path(), events);
  runtime.Handshake();

  api::CreateContainerRequest traversal;
  *traversal.mutable_pod() = MakePod("sandbox1", "uid-1");
  *traversal.mutable_container() = MakeContainer("ctr1", "sandbox1", "/kubepods/../../etc/ctr1");
  auto r1 = runtime.Reply(runtime.Call("CreateContainer", traversal));
  REQUIRE(r1.has_value());
  CHECK(r1->status.ok());  // a pod is never failed over what netqos cannot read

  api::CreateContainerRequest slash_id;
  *slash_id.mutable_pod() = MakePod("sandbox1", "uid-1");
  *slash_id.mutable_container() = MakeContainer("a/b", "sandbox1", "/kubepods/poduid-1/ab");
  auto r2 = runtime.Reply(runtime.Call("CreateContainer", slash_id));
  REQUIRE(r2.has_value());

  api::CreateContainerRequest other_pod;
  *other_pod.mutable_pod() = MakePod("sandbox1", "uid-1");
  *other_pod.mutable_container() = MakeContainer("ctr2", "sandbox9", "/kubepods/poduid-1/ctr2");
  auto r3 = runtime.Reply(runtime.Call("CreateContainer", other_pod));
  REQUIRE(r3.has_value());

  CHECK(events.log().empty());
  CHECK(session->stats().invalid_events == 3);
  CHECK(session->stats().dropped_connections == 0);
}

TEST_CASE("nri session: the port sees only the pod annotations the options keep") {
  FakeNriRuntime runtime;
  AnnotationEvents events;
  NriSessionOptions options = TestOptions(runtime.path());
  options.annotation_keys =
      std::set<std::string, std::less<>>{"katalyst.kubewharf.io/qos_level", "netqos.io/burst"};
  RunningSession session(options, events);
  runtime.Handshake();

  // Over 100 KiB of annotations netqos does not read, beside the two it does.
  api::PodSandbox pod = MakePod("sandbox1", "uid-1");
  auto& annotations = *pod.mutable_annotations();
  for (int i = 0; i < 100; ++i) {
    annotations["example.com/bookkeeping-" + std::to_string(i)] = std::string(512, 'u');
  }
  annotations["kubectl.kubernetes.io/last-applied-configuration"] = std::string(64 * 1024, 'l');
  annotations["katalyst.kubewharf.io/qos_level"] = "shared_cores";
  annotations["netqos.io/burst"] = "64Ki";

  api::SynchronizeRequest sync;
  *sync.add_pods() = pod;
  auto r1 = runtime.Reply(runtime.Call("Synchronize", sync));
  REQUIRE(r1.has_value());
  REQUIRE(r1->status.ok());
  api::RunPodSandboxRequest run;
  *run.mutable_pod() = pod;
  auto r2 = runtime.Reply(runtime.Call("RunPodSandbox", run));
  REQUIRE(r2.has_value());
  REQUIRE(r2->status.ok());
  api::CreateContainerRequest create;
  *create.mutable_pod() = pod;
  *create.mutable_container() = MakeContainer("ctr1", "sandbox1", "/kubepods/poduid-1/ctr1");
  auto r3 = runtime.Reply(runtime.Call("CreateContainer", create));
  REQUIRE(r3.has_value());
  REQUIRE(r3->status.ok());

  const std::string kept = " katalyst.kubewharf.io/qos_level=shared_cores netqos.io/burst=64Ki";
  CHECK(events.log() == std::vector<std::string>{"Synchronize uid-1" + kept,
                                                 "RunPodSandbox uid-1" + kept,
                                                 "CreateContainer uid-1" + kept});
  CHECK(session->stats().invalid_events == 0);
}

TEST_CASE("nri session: an oversized mux frame drops the connection with an error naming it") {
  FakeNriRuntime runtime;
  RecordingEvents events;
  RunningSession session(runtime.path(), events);
  runtime.Handshake();
  runtime.SendRaw(std::string("\x00\x00\x00\x01\xff\xff\xff\xff", 8));
  CHECK(runtime.WaitClosed());
  const std::string error = session.WaitLastError();
  CHECK_THAT(error, Catch::Contains("4294967295 bytes exceeds"));
  CHECK_THAT(error, Catch::Contains("dropping the connection"));
}

TEST_CASE("nri session: a payload that is not its method's message drops the connection") {
  FakeNriRuntime runtime;
  RecordingEvents events;
  RunningSession session(runtime.path(), events);
  runtime.Handshake();
  runtime.CallRaw("CreateContainer", std::string("\xff\xff\xff\xff\x0f", 5));
  CHECK(runtime.WaitClosed());
  CHECK_THAT(session.WaitLastError(),
             Catch::Contains("not a nri.pkg.api.v1alpha1.CreateContainerRequest"));
  CHECK(events.log().empty());
}

TEST_CASE("nri session: an event before Configure drops the connection") {
  FakeNriRuntime runtime;
  RecordingEvents events;
  RunningSession session(runtime.path(), events);
  runtime.Accept();
  runtime.ServeRegister();
  api::RunPodSandboxRequest run;
  *run.mutable_pod() = MakePod("sandbox1", "uid-1");
  runtime.Call("RunPodSandbox", run);
  CHECK(runtime.WaitClosed());
  CHECK_THAT(session.WaitLastError(), Catch::Contains("RunPodSandbox before Configure"));
}

TEST_CASE("nri session: a refused registration drops the connection and says why") {
  FakeNriRuntime runtime;
  RecordingEvents events;
  RunningSession session(runtime.path(), events);
  runtime.Accept();
  runtime.ServeRegister(netqos::InvalidArgument("invalid plugin index"));
  CHECK(runtime.WaitClosed());
  CHECK_THAT(session.WaitLastError(), Catch::Contains("refused RegisterPlugin as 50-netqos"));
  CHECK_THAT(session->last_error(), Catch::Contains("invalid plugin index"));
}

TEST_CASE("nri session: garbage bytes on the socket drop the connection, then it reconnects") {
  FakeNriRuntime runtime;
  RecordingEvents events;
  RunningSession session(runtime.path(), events);
  runtime.Handshake();
  std::string garbage;
  uint32_t x = 12345;
  for (int i = 0; i < 4096; ++i) {
    x = x * 1103515245u + 12345u;
    garbage.push_back(static_cast<char>(x >> 16));
  }
  runtime.SendRaw(garbage);
  CHECK(runtime.WaitClosed());
  CHECK_FALSE(session.WaitLastError().empty());
  runtime.Handshake();  // the listener is still there: the session comes back
  CHECK(session->stats().configured == 2);
}

TEST_CASE("nri session: events behind a stuck handler past the queue bound are answered at once") {
  FakeNriRuntime runtime;
  RecordingEvents events(milliseconds(1500));
  RunningSession session(runtime.path(), events, milliseconds(300), /*max_queued_events=*/2);
  runtime.Handshake();
  api::RunPodSandboxRequest run;
  *run.mutable_pod() = MakePod("sandbox1", "uid-1");
  // The first is taken by the handler thread (and sleeps there), the next two wait in the queue.
  for (int i = 0; i < 3; ++i) {
    auto reply = runtime.Reply(runtime.Call("RunPodSandbox", run), milliseconds(1000));
    REQUIRE(reply.has_value());
    if (i == 0) std::this_thread::sleep_for(milliseconds(50));  // the handler has taken it
  }
  const auto start = Clock::now();
  auto shed = runtime.Reply(runtime.Call("RunPodSandbox", run), milliseconds(1000));
  REQUIRE(shed.has_value());
  CHECK(shed->status.ok());
  CHECK(Clock::now() - start < milliseconds(200));  // not even the 300 ms budget
  CHECK(session->stats().shed_events == 1);
  CHECK(session->stats().events == 3);
}

api::StartContainerRequest StartRequest(const std::string& pod_id, const std::string& uid,
                                        const std::string& container_id) {
  api::StartContainerRequest start;
  *start.mutable_pod() = MakePod(pod_id, uid);
  *start.mutable_container() =
      MakeContainer(container_id, pod_id, "/kubepods/pod" + uid + "/" + container_id);
  return start;
}

TEST_CASE("nri session: fail-closed answers an unplaced capped container's start with the error") {
  FakeNriRuntime runtime;
  GatekeeperEvents events({"uid-1"}, /*places=*/false);
  RunningSession session(runtime.path(), events, milliseconds(1000), 1024, /*fail_closed=*/true);
  runtime.Handshake();

  auto reply = runtime.Reply(runtime.Call("StartContainer", StartRequest("sb1", "uid-1", "ctr1")));
  REQUIRE(reply.has_value());
  CHECK(reply->status.code() == StatusCode::kFailedPrecondition);
  CHECK(reply->status.message() == "class of container ctr1 not in place");
  CHECK(session->stats().refused_starts == 1);
  // The handler ran all the same: the enforcer keeps trying to place the class.
  CHECK(events.log().size() == 1);

  // Only the start is refused: creating the container changes nothing in the network.
  api::CreateContainerRequest create;
  *create.mutable_pod() = MakePod("sb1", "uid-1");
  *create.mutable_container() = MakeContainer("ctr2", "sb1", "/kubepods/poduid-1/ctr2");
  auto created = runtime.Reply(runtime.Call("CreateContainer", create));
  REQUIRE(created.has_value());
  CHECK(created->status.ok());
  CHECK(session->stats().refused_starts == 1);
}

TEST_CASE("nri session: fail-closed lets a placed container and an uncapped one start") {
  FakeNriRuntime runtime;
  GatekeeperEvents placing({"uid-1"}, /*places=*/true);
  RunningSession session(runtime.path(), placing, milliseconds(1000), 1024, /*fail_closed=*/true);
  runtime.Handshake();
  auto placed = runtime.Reply(runtime.Call("StartContainer", StartRequest("sb1", "uid-1", "ctr1")));
  REQUIRE(placed.has_value());
  CHECK(placed->status.ok());
  CHECK(placing.asked() == 1);
  CHECK(session->stats().refused_starts == 0);
}

TEST_CASE("nri session: fail-closed never refuses a container of a pod netqos does not cap") {
  FakeNriRuntime runtime;
  GatekeeperEvents events({"uid-capped"}, /*places=*/false);
  RunningSession session(runtime.path(), events, milliseconds(1000), 1024, /*fail_closed=*/true);
  runtime.Handshake();
  auto reply = runtime.Reply(runtime.Call("StartContainer", StartRequest("sb2", "uid-2", "ctr2")));
  REQUIRE(reply.has_value());
  CHECK(reply->status.ok());
  CHECK(events.asked() == 1);
  CHECK(session->stats().refused_starts == 0);
}

TEST_CASE("nri session: fail-closed refuses a capped start whose handler ran past its budget") {
  FakeNriRuntime runtime;
  GatekeeperEvents events({"uid-1"}, /*places=*/true, milliseconds(1500));
  RunningSession session(runtime.path(), events, milliseconds(100), 1024, /*fail_closed=*/true);
  runtime.Handshake();
  const auto start = Clock::now();
  auto late = runtime.Reply(runtime.Call("StartContainer", StartRequest("sb1", "uid-1", "ctr1")),
                            milliseconds(1000));
  REQUIRE(late.has_value());
  CHECK(Clock::now() - start < milliseconds(1000));
  CHECK(late->status.code() == StatusCode::kFailedPrecondition);
  // An uncapped container behind the stuck handler is late too, and starts.
  auto uncapped = runtime.Reply(
      runtime.Call("StartContainer", StartRequest("sb2", "uid-2", "ctr2")), milliseconds(1000));
  REQUIRE(uncapped.has_value());
  CHECK(uncapped->status.ok());
  CHECK(session->stats().late_replies == 2);
  CHECK(session->stats().refused_starts == 1);
}

TEST_CASE("nri session: fail-closed refuses an older runtime's StateChange start as well") {
  FakeNriRuntime runtime;
  GatekeeperEvents events({"uid-1"}, /*places=*/false);
  RunningSession session(runtime.path(), events, milliseconds(1000), 1024, /*fail_closed=*/true);
  runtime.Handshake();
  api::StateChangeEvent start;
  start.set_event(api::START_CONTAINER);
  *start.mutable_pod() = MakePod("sb1", "uid-1");
  *start.mutable_container() = MakeContainer("ctr1", "sb1", "/kubepods/poduid-1/ctr1");
  auto reply = runtime.Reply(runtime.Call("StateChange", start));
  REQUIRE(reply.has_value());
  CHECK(reply->status.code() == StatusCode::kFailedPrecondition);
}

TEST_CASE("nri session: fail-open (the default) starts a container the port would refuse") {
  FakeNriRuntime runtime;
  GatekeeperEvents events({"uid-1"}, /*places=*/false);
  RunningSession session(runtime.path(), events);
  runtime.Handshake();
  auto reply = runtime.Reply(runtime.Call("StartContainer", StartRequest("sb1", "uid-1", "ctr1")));
  REQUIRE(reply.has_value());
  CHECK(reply->status.ok());
  CHECK(events.asked() == 0);
  CHECK(session->stats().refused_starts == 0);
}

TEST_CASE("nri session: counts events by kind, their reply times and whether it is connected") {
  FakeNriRuntime runtime;
  RecordingEvents events;
  RunningSession session(runtime.path(), events);
  CHECK_FALSE(session->stats().connected);
  runtime.Handshake();
  CHECK(session->stats().connected);

  api::RunPodSandboxRequest run;
  *run.mutable_pod() = MakePod("sb1", "uid-1");
  REQUIRE(runtime.Reply(runtime.Call("RunPodSandbox", run)).has_value());
  REQUIRE(runtime.Reply(runtime.Call("StartContainer", StartRequest("sb1", "uid-1", "c1"))));
  REQUIRE(runtime.Reply(runtime.Call("StartContainer", StartRequest("sb1", "uid-1", "c2"))));
  using netqos::nri_plugin::NriEventKind;
  const auto& handled = session->stats().handled;
  CHECK(handled[static_cast<size_t>(NriEventKind::kRunPodSandbox)] == 1);
  CHECK(handled[static_cast<size_t>(NriEventKind::kStartContainer)] == 2);
  CHECK(handled[static_cast<size_t>(NriEventKind::kCreateContainer)] == 0);
  CHECK(std::string(netqos::nri_plugin::NriEventKindName(NriEventKind::kStartContainer)) ==
        "StartContainer");
  const netqos::HistogramCounts replies = session->stats().ReplySeconds();
  CHECK(replies.count() == 3);
  CHECK(replies.sum > 0);

  runtime.CloseConnection();
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (session->stats().connected && Clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  CHECK_FALSE(session->stats().connected);
}
