#include "nri_plugin/nri_session.h"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <optional>
#include <utility>
#include <vector>

#include "nri/mux_frame.h"
#include "nri/ttrpc_call.h"
#include "nri/ttrpc_frame.h"
#include "nri/v1alpha1/api.pb.h"
#include "nri_plugin/nri_translate.h"

namespace netqos::nri_plugin {
namespace api = ::nri::pkg::api::v1alpha1;
using Clock = std::chrono::steady_clock;

namespace {

constexpr char kPluginService[] = "nri.pkg.api.v1alpha1.Plugin";
constexpr char kRuntimeService[] = "nri.pkg.api.v1alpha1.Runtime";
// Written in RegisterPlugin: the NRI API this plugin was built against (proto/nri/v1alpha1).
constexpr char kNriVersion[] = "v0.12.2";
// NRI's request timeout when the runtime does not send its own in Configure.
constexpr std::chrono::milliseconds kDefaultRuntimeTimeout{2000};

// What the runtime calls itself, for logs and netqosctl: printable ASCII, at most 64 characters.
std::string PrintableText(const std::string& text) {
  std::string out;
  for (char c : text.substr(0, 64)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return out;
}

Status Errno(const std::string& what) { return Unavailable(what + ": " + std::strerror(errno)); }

void Wake(int fd) {
  const uint64_t one = 1;
  // An eventfd counter cannot overflow from these few writes; a failed write only delays a wake.
  [[maybe_unused]] ssize_t n = write(fd, &one, sizeof(one));
}

void Drain(int fd) {
  uint64_t value = 0;
  [[maybe_unused]] ssize_t n = read(fd, &value, sizeof(value));
}

// Writes all of `bytes`; the socket's send timeout bounds a runtime that stops reading.
Status SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return Unavailable("writing to the runtime timed out (it stopped reading)");
      }
      return Errno("writing to the runtime");
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

template <typename T>
Result<T> Parse(const std::string& method, const std::string& payload) {
  T message;
  if (!message.ParseFromString(payload)) {
    return DataLoss(method + ": the runtime sent " + std::to_string(payload.size()) +
                    " bytes that are not a " + message.GetTypeName());
  }
  return message;
}

}  // namespace

const char* NriEventKindName(NriEventKind kind) {
  switch (kind) {
    case NriEventKind::kSynchronize:
      return "Synchronize";
    case NriEventKind::kRunPodSandbox:
      return "RunPodSandbox";
    case NriEventKind::kStopPodSandbox:
      return "StopPodSandbox";
    case NriEventKind::kRemovePodSandbox:
      return "RemovePodSandbox";
    case NriEventKind::kCreateContainer:
      return "CreateContainer";
    case NriEventKind::kStartContainer:
      return "StartContainer";
    case NriEventKind::kStopContainer:
      return "StopContainer";
    case NriEventKind::kRemoveContainer:
      return "RemoveContainer";
  }
  return "event";
}

namespace {

NriEventKind KindOf(PodEvent event) {
  switch (event) {
    case PodEvent::kRun:
      return NriEventKind::kRunPodSandbox;
    case PodEvent::kStop:
      return NriEventKind::kStopPodSandbox;
    case PodEvent::kRemove:
      return NriEventKind::kRemovePodSandbox;
  }
  return NriEventKind::kRunPodSandbox;
}

NriEventKind KindOf(ContainerEvent event) {
  switch (event) {
    case ContainerEvent::kCreate:
      return NriEventKind::kCreateContainer;
    case ContainerEvent::kStart:
      return NriEventKind::kStartContainer;
    case ContainerEvent::kStop:
      return NriEventKind::kStopContainer;
    case ContainerEvent::kRemove:
      return NriEventKind::kRemoveContainer;
  }
  return NriEventKind::kCreateContainer;
}

}  // namespace

void NriSessionStats::ObserveReply(std::chrono::steady_clock::duration took) {
  const std::chrono::duration<double> seconds = took;
  std::lock_guard lock(mu_);
  reply_seconds_.Observe(seconds.count());
}

HistogramCounts NriSessionStats::ReplySeconds() const {
  std::lock_guard lock(mu_);
  return reply_seconds_;
}

NriSession::NriSession(NriSessionOptions options, NriEvents& events)
    : options_(std::move(options)), events_(events) {
  stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  done_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  handler_ = std::thread([this] { HandlerLoop(); });
}

NriSession::~NriSession() {
  Stop();
  {
    std::lock_guard lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  handler_.join();
  if (stop_fd_ >= 0) close(stop_fd_);
  if (done_fd_ >= 0) close(done_fd_);
}

void NriSession::Stop() {
  stopping_ = true;
  Wake(stop_fd_);
}

NriRuntime NriSession::runtime() const {
  std::lock_guard lock(mu_);
  return runtime_;
}

void NriSession::SetRuntime(NriRuntime runtime) {
  std::lock_guard lock(mu_);
  runtime_ = std::move(runtime);
}

std::string NriSession::last_error() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

void NriSession::SetLastError(const Status& status) {
  std::lock_guard lock(mu_);
  last_error_ = status.message();
}

void NriSession::HandlerLoop() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return quit_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    try {
      job.work();
    } catch (const std::exception& e) {
      spdlog::error("nri: an event handler threw: {}", e.what());
    }
    {
      std::lock_guard lock(mu_);
      finished_through_ = job.id;
    }
    Wake(done_fd_);
  }
}

uint64_t NriSession::Submit(std::function<void()> work) {
  uint64_t id = 0;
  {
    std::lock_guard lock(mu_);
    if (jobs_.size() >= options_.max_queued_events) return 0;
    id = next_job_++;
    jobs_.push_back(Job{id, std::move(work)});
  }
  cv_.notify_one();
  return id;
}

bool NriSession::JobDone(uint64_t id) const {
  std::lock_guard lock(mu_);
  return finished_through_ >= id;
}

void NriSession::Run() {
  auto backoff = options_.backoff_initial;
  while (!stopping_) {
    Status result;
    const uint64_t configured_before = stats_.configured;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (options_.socket_path.size() >= sizeof(addr.sun_path)) {
      result = InvalidArgument("nri socket path '" + options_.socket_path + "' is longer than " +
                               std::to_string(sizeof(addr.sun_path) - 1) + " bytes");
    } else if (fd < 0) {
      result = Errno("creating a unix socket");
    } else {
      std::memcpy(addr.sun_path, options_.socket_path.data(), options_.socket_path.size());
      if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        result = Errno("connecting to the runtime's nri socket " + options_.socket_path);
      } else {
        ++stats_.connects;
        result = Serve(fd);
        stats_.connected = false;
        if (!stopping_) ++stats_.dropped_connections;
      }
    }
    if (fd >= 0) close(fd);
    if (stopping_) break;
    SetLastError(result);
    spdlog::warn("nri: {} (retrying in {} ms)", result.message(), backoff.count());
    if (stats_.configured > configured_before) backoff = options_.backoff_initial;
    pollfd stop{stop_fd_, POLLIN, 0};
    poll(&stop, 1, static_cast<int>(backoff.count()));
    backoff = std::min(backoff * 2, options_.backoff_max);
  }
}

// The state of one connection, and the handling of each call on it.
struct NriSession::Connection {
  Connection(NriSession& s, int socket_fd) : session(s), fd(socket_fd) {}

  NriSession& session;
  int fd;
  nri::MuxDecoder mux;
  nri::TtrpcDecoder plugin_conn;   // requests from the runtime
  nri::TtrpcDecoder runtime_conn;  // responses to netqos's calls
  uint32_t last_request_stream = 0;
  uint32_t register_stream = 0;
  bool configured = false;
  std::chrono::milliseconds budget{0};
  Clock::time_point configure_deadline{};
  // A split Synchronize (more = true) is collected until its last part.
  std::vector<NriPod> sync_pods;
  std::vector<NriContainer> sync_containers;
  size_t sync_objects = 0;

  // A StartContainer's pod and container, kept to ask the port at reply time whether it may
  // start (fail-closed sessions only).
  struct Start {
    NriPod pod;
    NriContainer container;
  };
  struct Pending {
    uint32_t stream = 0;
    uint64_t job = 0;
    Clock::time_point received;
    Clock::time_point deadline;
    std::string what;
    std::optional<Start> start;
  };
  std::vector<Pending> pending;  // in job order

  Status Send(uint32_t conn_id, Result<std::string> ttrpc_message) {
    if (!ttrpc_message.ok()) return ttrpc_message.status();
    Result<std::string> frames = nri::EncodeMuxFrames(conn_id, *ttrpc_message);
    if (!frames.ok()) return frames.status();
    return SendAll(fd, *frames);
  }

  Status Reply(uint32_t stream, const Status& status, std::string_view payload = {}) {
    return Send(nri::kPluginServiceConnId, nri::EncodeTtrpcResponse(stream, status, payload));
  }

  Status Register() {
    api::RegisterPluginRequest request;
    request.set_plugin_name(session.options_.plugin_name);
    request.set_plugin_idx(session.options_.plugin_index);
    request.set_nri_version(kNriVersion);
    register_stream = 1;
    return Send(nri::kRuntimeServiceConnId,
                nri::EncodeTtrpcRequest(register_stream, kRuntimeService, "RegisterPlugin", request,
                                        session.options_.registration_timeout));
  }

  // What the runtime gets for an event: success (an empty message: every response netqos sends
  // to an event carries no adjustment), except for a StartContainer a fail-closed session's port
  // refuses.
  Status Verdict(const std::optional<Start>& start, const std::string& what) {
    if (!start || !session.options_.fail_closed) return Status::Ok();
    Status refusal;
    try {
      refusal = session.events_.StartRefusal(start->pod, start->container);
    } catch (const std::exception& e) {
      // Whether the container needs a class is then unknown: it starts, as any container netqos
      // does not cap.
      spdlog::error("nri: deciding whether {} may start threw: {}", what, e.what());
      return Status::Ok();
    }
    if (refusal.ok()) return refusal;
    ++session.stats_.refused_starts;
    spdlog::warn("nri: refusing {} (--nri-fail-closed): {}", what, refusal.message());
    return refusal;
  }

  // Hands `work` to the handler thread; the reply goes out when it returned or at the budget.
  Status Defer(uint32_t stream, NriEventKind kind, std::string what, std::function<void()> work,
               std::optional<Start> start = std::nullopt) {
    const auto received = Clock::now();
    const uint64_t job = session.Submit(std::move(work));
    if (job == 0) {
      ++session.stats_.shed_events;
      spdlog::warn("nri: {} answered without handling it: {} events wait for a stuck handler", what,
                   session.options_.max_queued_events);
      return Reply(stream, Verdict(start, what));
    }
    ++session.stats_.events;
    ++session.stats_.handled[static_cast<size_t>(kind)];
    pending.push_back(
        Pending{stream, job, received, received + budget, std::move(what), std::move(start)});
    return Status::Ok();
  }

  Status FlushReplies() {
    const auto now = Clock::now();
    size_t n = 0;
    for (; n < pending.size(); ++n) {
      const Pending& p = pending[n];
      if (!session.JobDone(p.job)) {
        if (now < p.deadline) break;
        ++session.stats_.late_replies;
        spdlog::warn("nri: {} took longer than its {} ms budget; replied to the runtime anyway",
                     p.what, budget.count());
      }
      Status verdict = Verdict(p.start, p.what);
      // Counted before the reply leaves, so that whoever sees the reply sees the count.
      session.stats_.ObserveReply(Clock::now() - p.received);
      NETQOS_RETURN_IF_ERROR(Reply(p.stream, verdict));
    }
    pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(n));
    return Status::Ok();
  }

  // An event whose content failed validation: the runtime still gets a success (netqos must
  // never fail a pod's creation over what it reads), the port nothing.
  Status RefuseEvent(uint32_t stream, const std::string& method, const Status& why) {
    ++session.stats_.invalid_events;
    spdlog::warn("nri: ignoring {}: {}", method, why.message());
    return Reply(stream, Status::Ok());
  }

  Status PodEventCall(uint32_t stream, const std::string& method, PodEvent event,
                      const api::PodSandbox& wire_pod) {
    Result<NriPod> pod = TranslatePod(wire_pod, session.options_.annotation_keys);
    if (!pod.ok()) return RefuseEvent(stream, method, pod.status());
    NriEvents& events = session.events_;
    // Named before the move below: the order in which arguments are evaluated is unspecified.
    std::string what = method + " " + pod->id;
    return Defer(stream, KindOf(event), std::move(what),
                 [&events, event, p = std::move(*pod)] { events.OnPodEvent(event, p); });
  }

  Status ContainerEventCall(uint32_t stream, const std::string& method, ContainerEvent event,
                            const api::PodSandbox& wire_pod, const api::Container& wire_ctr) {
    Result<NriPod> pod = TranslatePod(wire_pod, session.options_.annotation_keys);
    if (!pod.ok()) return RefuseEvent(stream, method, pod.status());
    Result<NriContainer> container = TranslateContainer(wire_ctr);
    if (!container.ok()) return RefuseEvent(stream, method, container.status());
    if (container->pod_sandbox_id != pod->id) {
      return RefuseEvent(stream, method,
                         InvalidArgument("container " + container->id + " names pod sandbox " +
                                         container->pod_sandbox_id + " but came with " + pod->id));
    }
    NriEvents& events = session.events_;
    std::string what = method + " " + container->id;
    std::optional<Start> start;
    if (event == ContainerEvent::kStart) start = Start{*pod, *container};
    return Defer(
        stream, KindOf(event), std::move(what),
        [&events, event, p = std::move(*pod), c = std::move(*container)] {
          events.OnContainerEvent(event, p, c);
        },
        std::move(start));
  }

  Status Configure(const nri::TtrpcCall& call) {
    NETQOS_ASSIGN_OR_RETURN(api::ConfigureRequest request,
                            Parse<api::ConfigureRequest>(call.method, call.payload));
    // A runtime on NRI's API before v0.12 (containerd 1.7) does not send its timeout; it uses
    // NRI's default, and closes the connection to a plugin that answers later (the container
    // then starts without waiting, and the plugin must register again).
    const bool sent = request.request_timeout() > 0;
    const std::chrono::milliseconds runtime_timeout =
        sent ? std::chrono::milliseconds(request.request_timeout()) : kDefaultRuntimeTimeout;
    if (budget > runtime_timeout / 2) {
      budget = std::max(std::chrono::milliseconds(1), runtime_timeout / 2);
      spdlog::info("nri: event budget lowered to {} ms, half the runtime's request timeout{}",
                   budget.count(), sent ? "" : " (NRI's default: the runtime sent none)");
    }
    api::ConfigureResponse response;
    response.set_events(NetqosEventMask());
    // Counted before the reply leaves, so that whoever sees the reply sees the count.
    session.stats_.runtime_request_timeout_ms =
        sent ? static_cast<uint64_t>(request.request_timeout()) : 0;
    session.stats_.event_budget_ms = static_cast<uint64_t>(budget.count());
    NriRuntime runtime;
    runtime.name = PrintableText(request.runtime_name());
    runtime.version = PrintableText(request.runtime_version());
    session.SetRuntime(runtime);
    configured = true;
    ++session.stats_.configured;
    session.stats_.connected = true;
    NETQOS_RETURN_IF_ERROR(
        Send(nri::kPluginServiceConnId, nri::EncodeTtrpcResponse(call.stream_id, response)));
    spdlog::info(
        "nri: registered with {} {} as {}-{} runtime_request_timeout_ms={} event_budget_ms={}",
        runtime.name, runtime.version, session.options_.plugin_index, session.options_.plugin_name,
        sent ? std::to_string(request.request_timeout()) : "none", budget.count());
    return Status::Ok();
  }

  Status Synchronize(const nri::TtrpcCall& call) {
    NETQOS_ASSIGN_OR_RETURN(api::SynchronizeRequest request,
                            Parse<api::SynchronizeRequest>(call.method, call.payload));
    sync_objects += static_cast<size_t>(request.pods_size() + request.containers_size());
    if (sync_objects > kMaxSyncObjects) {
      return ResourceExhausted("Synchronize: more than " + std::to_string(kMaxSyncObjects) +
                               " pods and containers");
    }
    for (const api::PodSandbox& wire : request.pods()) {
      Result<NriPod> pod = TranslatePod(wire, session.options_.annotation_keys);
      if (pod.ok()) {
        sync_pods.push_back(std::move(*pod));
      } else {
        ++session.stats_.invalid_events;
        spdlog::warn("nri: Synchronize: ignoring a pod: {}", pod.status().message());
      }
    }
    for (const api::Container& wire : request.containers()) {
      Result<NriContainer> container = TranslateContainer(wire);
      if (container.ok()) {
        sync_containers.push_back(std::move(*container));
      } else {
        ++session.stats_.invalid_events;
        spdlog::warn("nri: Synchronize: ignoring a container: {}", container.status().message());
      }
    }
    if (request.more()) {
      // NRI requires the reply to a partial Synchronize to say "more" back and change nothing.
      api::SynchronizeResponse response;
      response.set_more(true);
      return Send(nri::kPluginServiceConnId, nri::EncodeTtrpcResponse(call.stream_id, response));
    }
    NriEvents& events = session.events_;
    Status deferred =
        Defer(call.stream_id, NriEventKind::kSynchronize, "Synchronize",
              [&events, pods = std::move(sync_pods), containers = std::move(sync_containers)] {
                events.OnSynchronize(pods, containers);
              });
    sync_pods = {};
    sync_containers = {};
    sync_objects = 0;
    return deferred;
  }

  // NRI's API before v0.12 (containerd 1.7's) sends every event but CreateContainer,
  // UpdateContainer and StopContainer as a StateChange; from v0.12 on the runtime falls back to it
  // when a method answers Unimplemented.
  Status StateChange(const nri::TtrpcCall& call) {
    NETQOS_ASSIGN_OR_RETURN(api::StateChangeEvent event,
                            Parse<api::StateChangeEvent>(call.method, call.payload));
    switch (event.event()) {
      case api::RUN_POD_SANDBOX:
        return PodEventCall(call.stream_id, "RunPodSandbox", PodEvent::kRun, event.pod());
      case api::STOP_POD_SANDBOX:
        return PodEventCall(call.stream_id, "StopPodSandbox", PodEvent::kStop, event.pod());
      case api::REMOVE_POD_SANDBOX:
        return PodEventCall(call.stream_id, "RemovePodSandbox", PodEvent::kRemove, event.pod());
      case api::START_CONTAINER:
        return ContainerEventCall(call.stream_id, "StartContainer", ContainerEvent::kStart,
                                  event.pod(), event.container());
      case api::REMOVE_CONTAINER:
        return ContainerEventCall(call.stream_id, "RemoveContainer", ContainerEvent::kRemove,
                                  event.pod(), event.container());
      default:
        return Reply(call.stream_id, Status::Ok());  // not subscribed: nothing to do
    }
  }

  template <typename Request>
  Status PodRequest(const nri::TtrpcCall& call, PodEvent event) {
    NETQOS_ASSIGN_OR_RETURN(Request request, Parse<Request>(call.method, call.payload));
    return PodEventCall(call.stream_id, call.method, event, request.pod());
  }

  template <typename Request>
  Status ContainerRequest(const nri::TtrpcCall& call, ContainerEvent event) {
    NETQOS_ASSIGN_OR_RETURN(Request request, Parse<Request>(call.method, call.payload));
    return ContainerEventCall(call.stream_id, call.method, event, request.pod(),
                              request.container());
  }

  Status HandleCall(const nri::TtrpcCall& call) {
    if (call.stream_id <= last_request_stream) {
      return InvalidArgument("the runtime reused or lowered request stream id " +
                             std::to_string(call.stream_id) + " (last was " +
                             std::to_string(last_request_stream) + ")");
    }
    last_request_stream = call.stream_id;
    if (call.service != kPluginService) {
      return Reply(call.stream_id,
                   Unimplemented("service " + call.service.substr(0, 128) + " is not served here"));
    }
    const std::string& m = call.method;
    if (m == "Configure") return Configure(call);
    if (!configured) {
      return FailedPrecondition(m.substr(0, 64) + " before Configure");
    }
    if (m == "Synchronize") return Synchronize(call);
    if (m == "Shutdown") {
      spdlog::info("nri: the runtime asked the plugin to shut down");
      return Reply(call.stream_id, Status::Ok());
    }
    if (m == "StateChange") return StateChange(call);
    if (m == "RunPodSandbox") return PodRequest<api::RunPodSandboxRequest>(call, PodEvent::kRun);
    if (m == "StopPodSandbox") {
      return PodRequest<api::StopPodSandboxRequest>(call, PodEvent::kStop);
    }
    if (m == "RemovePodSandbox") {
      return PodRequest<api::RemovePodSandboxRequest>(call, PodEvent::kRemove);
    }
    if (m == "CreateContainer") {
      return ContainerRequest<api::CreateContainerRequest>(call, ContainerEvent::kCreate);
    }
    if (m == "StartContainer") {
      return ContainerRequest<api::StartContainerRequest>(call, ContainerEvent::kStart);
    }
    if (m == "StopContainer") {
      return ContainerRequest<api::StopContainerRequest>(call, ContainerEvent::kStop);
    }
    if (m == "RemoveContainer") {
      return ContainerRequest<api::RemoveContainerRequest>(call, ContainerEvent::kRemove);
    }
    // Unimplemented makes a newer runtime fall back to StateChange, as for an older plugin.
    return Reply(call.stream_id, Unimplemented("method " + m.substr(0, 128) + " is not served"));
  }

  Status HandleRuntimeMessage(const nri::TtrpcMessage& message) {
    NETQOS_ASSIGN_OR_RETURN(nri::TtrpcReply reply, nri::DecodeTtrpcResponse(message));
    if (reply.stream_id != register_stream) {
      return InvalidArgument("a response on stream " + std::to_string(reply.stream_id) +
                             " netqos did not call");
    }
    register_stream = 0;
    if (!reply.status.ok()) {
      return FailedPrecondition("the runtime refused RegisterPlugin as " +
                                session.options_.plugin_index + "-" + session.options_.plugin_name +
                                ": " + reply.status.message());
    }
    return Status::Ok();
  }

  Status OnBytes(std::string_view bytes) {
    mux.Feed(bytes);
    for (;;) {
      NETQOS_ASSIGN_OR_RETURN(std::optional<nri::MuxFrame> frame, mux.Next());
      if (!frame) break;
      if (frame->conn_id == nri::kPluginServiceConnId) {
        plugin_conn.Feed(frame->payload);
      } else if (frame->conn_id == nri::kRuntimeServiceConnId) {
        runtime_conn.Feed(frame->payload);
      }  // else: a connection NRI never opens; NRI's own reader drops such frames too
    }
    for (;;) {
      NETQOS_ASSIGN_OR_RETURN(std::optional<nri::TtrpcMessage> message, runtime_conn.Next());
      if (!message) break;
      NETQOS_RETURN_IF_ERROR(HandleRuntimeMessage(*message));
    }
    for (;;) {
      NETQOS_ASSIGN_OR_RETURN(std::optional<nri::TtrpcMessage> message, plugin_conn.Next());
      if (!message) break;
      NETQOS_ASSIGN_OR_RETURN(nri::TtrpcCall call, nri::DecodeTtrpcRequest(*message));
      NETQOS_RETURN_IF_ERROR(HandleCall(call));
    }
    return Status::Ok();
  }
};

Status NriSession::Serve(int fd) {
  const auto write_timeout =
      std::chrono::duration_cast<std::chrono::microseconds>(options_.write_timeout);
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(write_timeout.count() / 1000000);
  tv.tv_usec = static_cast<suseconds_t>(write_timeout.count() % 1000000);
  if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0) {
    return Errno("setting the nri socket's send timeout");
  }
  Connection conn(*this, fd);
  conn.budget = options_.event_budget;
  conn.configure_deadline = Clock::now() + options_.registration_timeout;
  NETQOS_RETURN_IF_ERROR(conn.Register());

  std::vector<char> buffer(64 * 1024);
  for (;;) {
    auto next = Clock::time_point::max();
    if (!conn.configured) next = conn.configure_deadline;
    if (!conn.pending.empty()) next = std::min(next, conn.pending.front().deadline);
    int timeout_ms = -1;
    if (next != Clock::time_point::max()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(next - Clock::now());
      timeout_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
    }
    pollfd fds[3] = {{fd, POLLIN, 0}, {stop_fd_, POLLIN, 0}, {done_fd_, POLLIN, 0}};
    if (poll(fds, 3, timeout_ms) < 0 && errno != EINTR) return Errno("polling the nri socket");
    if (stopping_) return Status::Ok();
    if (fds[2].revents & POLLIN) Drain(done_fd_);
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t n = recv(fd, buffer.data(), buffer.size(), MSG_DONTWAIT);
      if (n == 0) return Unavailable("the runtime closed the nri connection");
      if (n < 0 && errno != EAGAIN && errno != EINTR) return Errno("reading the nri socket");
      if (n > 0) {
        Status status = conn.OnBytes(std::string_view(buffer.data(), static_cast<size_t>(n)));
        if (!status.ok()) {
          return Status(status.code(),
                        "nri protocol error, dropping the connection: " + status.message());
        }
      }
    }
    NETQOS_RETURN_IF_ERROR(conn.FlushReplies());
    if (!conn.configured && Clock::now() >= conn.configure_deadline) {
      return Status(StatusCode::kDeadlineExceeded,
                    "the runtime did not configure the plugin within " +
                        std::to_string(options_.registration_timeout.count()) + " ms");
    }
  }
}

}  // namespace netqos::nri_plugin
