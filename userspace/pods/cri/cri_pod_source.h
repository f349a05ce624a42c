// The default pod source: the container runtime's CRI socket (containerd, CRI-O). The kubelet
// labels every sandbox and container with the pod's uid, namespace and name, so the runtime alone
// knows the node's pods; reading it needs no cluster credential (see docs/security.md).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pods/cri/cri_runtime.h"
#include "pods/cri/cri_translate.h"
#include "pods/pod_source.h"

namespace netqos::cri {

class CriPodSource : public pods::PodSource {
 public:
  // `endpoint` names the runtime in messages ("unix:///run/containerd/containerd.sock");
  // `options.annotation_keys` the annotations kept (TranslatePods).
  CriPodSource(std::unique_ptr<CriRuntime> runtime, std::string endpoint,
               pods::PodListOptions options = {})
      : runtime_(std::move(runtime)),
        endpoint_(std::move(endpoint)),
        options_(std::move(options)) {}

  // One ListPodSandbox and one ListContainers per read, plus a PodSandboxStatus for each ready
  // sandbox not seen before (its addresses, network mode and cgroup parent do not change while
  // it lives; one still without an address is asked again). The runtime's name is asked once.
  // Errors name the endpoint and the call. Sandboxes and containers that fail validation are
  // left out and reported by last_rejected().
  Result<std::optional<std::vector<pods::PodInfo>>> Read(bool force) override;
  std::string Describe() const override { return "cri:" + endpoint_; }

  // What the last read left out, and why (one line each), for the logs.
  const std::vector<std::string>& last_rejected() const { return rejected_; }
  size_t status_calls() const { return status_calls_; }  // PodSandboxStatus calls so far

 private:
  Result<std::vector<pods::PodInfo>> ReadAll();

  std::unique_ptr<CriRuntime> runtime_;
  std::string endpoint_;
  pods::PodListOptions options_;
  std::optional<std::string> runtime_name_;
  std::map<std::string, SandboxDetails> details_;  // by sandbox id, only for listed sandboxes
  std::optional<std::vector<pods::PodInfo>> last_;
  std::vector<std::string> rejected_;
  size_t status_calls_ = 0;
};

}  // namespace netqos::cri
