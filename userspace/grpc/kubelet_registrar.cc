#include "grpc/kubelet_registrar.h"

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>

#include "grpc/file_identity.h"
#include "grpc/translate.h"
#include "resourceplugin/v1alpha1/api.grpc.pb.h"

namespace netqos::grpcadapter {
namespace {

constexpr char kApiVersion[] = "v1alpha1";

}  // namespace

Result<std::unique_ptr<KubeletRegistrar>> KubeletRegistrar::Start(Options options) {
  if (options.kubelet_socket.empty()) return InvalidArgument("empty kubelet registration socket");
  return std::make_unique<KubeletRegistrar>(std::move(options));
}

KubeletRegistrar::KubeletRegistrar(Options options) : options_(std::move(options)) {
  thread_ = std::thread([this] { Loop(); });
}

KubeletRegistrar::KubeletRegistrar(std::string kubelet_socket, core::PluginOptions plugin_options)
    : KubeletRegistrar([&] {
        Options o;
        o.kubelet_socket = std::move(kubelet_socket);
        o.plugin_options = plugin_options;
        return o;
      }()) {}

KubeletRegistrar::~KubeletRegistrar() { Stop(); }

void KubeletRegistrar::Stop() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
    if (in_flight_) in_flight_->TryCancel();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool KubeletRegistrar::SleepFor(std::chrono::milliseconds d) {
  std::unique_lock lk(mu_);
  return !cv_.wait_for(lk, d, [this] { return stop_; });
}

Status KubeletRegistrar::RegisterOnce() {
  grpc::ChannelArguments args;
  // A private pool: after a kubelet restart we must dial the new socket, not reuse a connection.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto channel = grpc::CreateCustomChannel("unix:" + options_.kubelet_socket,
                                           grpc::InsecureChannelCredentials(), args);
  auto stub = ::resourceplugin::v1alpha1::Registration::NewStub(channel);
  ::resourceplugin::v1alpha1::RegisterRequest req;
  req.set_version(kApiVersion);
  req.set_endpoint(options_.endpoint);
  req.set_resource_name(options_.resource_name);
  ToProto(options_.plugin_options, req.mutable_options());
  ::resourceplugin::v1alpha1::Empty resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + options_.rpc_timeout);
  {
    std::lock_guard lk(mu_);
    if (stop_) return Status(StatusCode::kCancelled, "stopping");
    in_flight_ = &ctx;
  }
  grpc::Status s = stub->Register(&ctx, req, &resp);
  {
    std::lock_guard lk(mu_);
    in_flight_ = nullptr;
  }
  if (s.ok()) return Status::Ok();
  return Status(static_cast<StatusCode>(s.error_code()),
                "Register on " + options_.kubelet_socket + ": " + s.error_message());
}

void KubeletRegistrar::Loop() {
  auto backoff = options_.initial_backoff;
  FileIdentity registered_with;
  std::string last_error;
  while (true) {
    try {
      if (registered_.load()) {
        if (!SleepFor(options_.poll_interval)) return;
        if (IdentityOf(options_.kubelet_socket) == registered_with) continue;
        registered_.store(false);
        spdlog::info("kubelet registration socket changed, registering again socket={}",
                     options_.kubelet_socket);
        backoff = options_.initial_backoff;
        continue;
      }
      const auto before = IdentityOf(options_.kubelet_socket);
      Status s = RegisterOnce();
      if (s.ok()) {
        registered_with = before;
        registered_.store(true);
        registrations_.fetch_add(1);
        last_error.clear();
        spdlog::info("registered with kubelet socket={} resource={} endpoint={}",
                     options_.kubelet_socket, options_.resource_name, options_.endpoint);
        continue;
      }
      if (s.message() != last_error) {  // one warning per distinct failure, not per retry
        last_error = s.message();
        spdlog::warn("kubelet registration failed socket={} code={} error=\"{}\"; retrying",
                     options_.kubelet_socket, StatusCodeName(s.code()), s.message());
      }
      if (!SleepFor(backoff)) return;
      backoff = std::min(backoff * 2, options_.max_backoff);
    } catch (const std::exception& e) {
      spdlog::warn("kubelet registrar error=\"{}\"", e.what());
      if (!SleepFor(options_.max_backoff)) return;
    } catch (...) {
      spdlog::warn("kubelet registrar error=\"unknown exception\"");
      if (!SleepFor(options_.max_backoff)) return;
    }
  }
}

}  // namespace netqos::grpcadapter
