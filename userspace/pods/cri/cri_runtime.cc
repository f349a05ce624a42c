#include "pods/cri/cri_runtime.h"

#include <grpcpp/grpcpp.h>

#include "runtime/v1/api.grpc.pb.h"

namespace netqos::cri {
namespace {

Status FromGrpc(const grpc::Status& s, const std::string& what) {
  const std::string msg = what + ": " + s.error_message();
  switch (s.error_code()) {
    case grpc::StatusCode::NOT_FOUND:
      return NotFound(msg);
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
      return Status(StatusCode::kPermissionDenied, msg);
    case grpc::StatusCode::INVALID_ARGUMENT:
      return InvalidArgument(msg);
    case grpc::StatusCode::UNIMPLEMENTED:
      return FailedPrecondition(msg + " (the runtime does not serve CRI runtime.v1)");
    default:
      return Unavailable(msg);
  }
}

class GrpcCriRuntime : public CriRuntime {
 public:
  explicit GrpcCriRuntime(GrpcCriRuntimeOptions options) : options_(std::move(options)) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(options_.max_message_bytes);
    stub_ = runtime::v1::RuntimeService::NewStub(
        grpc::CreateCustomChannel(options_.endpoint, grpc::InsecureChannelCredentials(), args));
  }

  Result<runtime::v1::VersionResponse> Version() override {
    runtime::v1::VersionRequest req;
    req.set_version("v1");
    return Call<runtime::v1::VersionResponse>(
        "Version", [&](grpc::ClientContext* c, runtime::v1::VersionResponse* r) {
          return stub_->Version(c, req, r);
        });
  }

  Result<runtime::v1::ListPodSandboxResponse> ListPodSandbox() override {
    runtime::v1::ListPodSandboxRequest req;
    return Call<runtime::v1::ListPodSandboxResponse>(
        "ListPodSandbox", [&](grpc::ClientContext* c, runtime::v1::ListPodSandboxResponse* r) {
          return stub_->ListPodSandbox(c, req, r);
        });
  }

  Result<runtime::v1::PodSandboxStatusResponse> PodSandboxStatus(
      const std::string& sandbox_id) override {
    runtime::v1::PodSandboxStatusRequest req;
    req.set_pod_sandbox_id(sandbox_id);
    req.set_verbose(true);
    return Call<runtime::v1::PodSandboxStatusResponse>(
        "PodSandboxStatus " + sandbox_id,
        [&](grpc::ClientContext* c, runtime::v1::PodSandboxStatusResponse* r) {
          return stub_->PodSandboxStatus(c, req, r);
        });
  }

  Result<runtime::v1::ListContainersResponse> ListContainers() override {
    runtime::v1::ListContainersRequest req;
    return Call<runtime::v1::ListContainersResponse>(
        "ListContainers", [&](grpc::ClientContext* c, runtime::v1::ListContainersResponse* r) {
          return stub_->ListContainers(c, req, r);
        });
  }

 private:
  template <typename Resp, typename Fn>
  Result<Resp> Call(const std::string& what, Fn fn) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + options_.timeout);
    Resp resp;
    grpc::Status s = fn(&ctx, &resp);
    if (!s.ok()) return FromGrpc(s, "CRI " + what + " on " + options_.endpoint);
    return resp;
  }

  GrpcCriRuntimeOptions options_;
  std::unique_ptr<runtime::v1::RuntimeService::Stub> stub_;
};

}  // namespace

std::unique_ptr<CriRuntime> NewGrpcCriRuntime(GrpcCriRuntimeOptions options) {
  return std::make_unique<GrpcCriRuntime>(std::move(options));
}

}  // namespace netqos::cri
