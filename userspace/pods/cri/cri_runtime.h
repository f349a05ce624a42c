// The four read-only CRI calls the pod source makes, as a port: the gRPC client over the
// runtime's unix socket implements it, unit tests put canned answers behind it.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/status.h"
#include "runtime/v1/api.pb.h"

namespace netqos::cri {

class CriRuntime {
 public:
  virtual ~CriRuntime() = default;
  virtual Result<runtime::v1::VersionResponse> Version() = 0;
  virtual Result<runtime::v1::ListPodSandboxResponse> ListPodSandbox() = 0;
  // Verbose, so that containerd adds its info JSON (the sandbox's cgroup parent).
  virtual Result<runtime::v1::PodSandboxStatusResponse> PodSandboxStatus(
      const std::string& sandbox_id) = 0;
  virtual Result<runtime::v1::ListContainersResponse> ListContainers() = 0;
};

struct GrpcCriRuntimeOptions {
  std::string endpoint;                     // "unix:///abs/path.sock"
  std::chrono::milliseconds timeout{5000};  // per call
  // The kubelet allows 16 MiB answers too: a list of hundreds of pods exceeds gRPC's 4 MiB.
  int max_message_bytes = 16 << 20;
};

// No connection is made yet; every call has its own deadline. Errors name the endpoint and the
// call, keeping gRPC's code (Unavailable when nothing listens).
std::unique_ptr<CriRuntime> NewGrpcCriRuntime(GrpcCriRuntimeOptions options);

}  // namespace netqos::cri
