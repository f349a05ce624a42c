// Fetches the kubelet's pod list (GET /pods): plain http (the read-only port, 10255) or https
// (10250) with a bearer token read from a file on every request, so a rotated token is used.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "cgroup/pod_list.h"
#include "common/status.h"

namespace netqos::cgroup {

struct KubeletUrl {
  std::string scheme;  // "http" or "https"
  std::string host;
  int port = 0;
  std::string path;  // with its leading '/', "/" when absent
};

// Parses "http[s]://host[:port][/path]"; the default ports are 80 and 443. Anything else is
// InvalidArgument naming the URL.
Result<KubeletUrl> ParseKubeletUrl(const std::string& url);

struct KubeletPodsClientOptions {
  std::string url = "http://127.0.0.1:10255/pods";
  // https only: "Authorization: Bearer <contents>" (trailing whitespace trimmed).
  std::string token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  // https only: skip verification of the kubelet's serving certificate (its default one is
  // self-signed). Off unless asked for.
  bool insecure_skip_tls_verify = false;
  std::chrono::milliseconds timeout{5000};
};

class KubeletPodsClient {
 public:
  // Validates the URL; no connection is made yet.
  static Result<std::unique_ptr<KubeletPodsClient>> Create(KubeletPodsClientOptions options);

  // One GET. Errors name the URL: Unavailable for connection failures and non-200 answers,
  // PermissionDenied for 401/403, InvalidArgument for a body that is not a PodList, NotFound or
  // PermissionDenied when the token file cannot be read.
  Result<std::vector<PodInfo>> ListPods() const;

  const std::string& url() const { return options_.url; }

 private:
  KubeletPodsClient(KubeletPodsClientOptions options, KubeletUrl url)
      : options_(std::move(options)), parsed_(std::move(url)) {}
  Result<std::string> ReadToken() const;

  KubeletPodsClientOptions options_;
  KubeletUrl parsed_;
};

}  // namespace netqos::cgroup
