// Fetches the kubelet's pod list (GET /pods): plain http (the read-only port, 10255) or https
// (10250) with a bearer token read from a file on every request, so a rotated token is used.
// A file:///abs/path.json URL reads a saved PodList (`curl .../pods > pods.json`) instead, on
// every call: for nodes and tests without a kubelet API, and for air-gapped debugging.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "common/status.h"

namespace netqos::pods {

struct KubeletUrl {
  std::string scheme;  // "http", "https" or "file"
  std::string host;    // "" for file
  int port = 0;        // 0 for file
  std::string path;    // with its leading '/', "/" when absent; the file's absolute path for file
  std::string text;    // the URL as it was given, which messages and logs name
  bool operator==(const KubeletUrl&) const = default;
};

// Parses "http[s]://host[:port][/path]" (the default ports are 80 and 443) and
// "file:///abs/path" (empty host; the path is taken literally, no %-escapes are decoded), once:
// netqosd when it reads --kubelet-pods-url, and the client takes the result.
// Anything else is InvalidArgument naming the URL.
Result<KubeletUrl> ParseKubeletUrl(const std::string& url);

// The largest pod list accepted, over http(s) or from a file. A node runs at most a few hundred
// pods (the kubelet's --max-pods defaults to 110); a pod's JSON in /pods is typically 5-20 KiB,
// and the API server keeps one under 1.5 MiB (etcd's request limit) and its annotations under
// 256 KiB. 500 pods of 256 KiB each is 125 MiB, far beyond real nodes; a larger body is a broken
// or hostile server, and is cut off while it streams rather than held in memory.
inline constexpr size_t kMaxPodListBytes = size_t{128} << 20;
// The token is a JWT of a few KiB at most.
inline constexpr size_t kMaxTokenFileBytes = size_t{64} << 10;

struct KubeletPodsClientOptions {
  KubeletUrl url;  // from ParseKubeletUrl
  // https only: "Authorization: Bearer <contents>" (trailing whitespace trimmed).
  std::string token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  // https only: skip verification of the kubelet's serving certificate (its default one is
  // self-signed). Off unless asked for.
  bool insecure_skip_tls_verify = false;
  // https only: the PEM file of the CA certificates the kubelet's serving certificate must chain
  // to, and nothing else (read on every request, so a rotated CA is used). Empty: OpenSSL's
  // defaults (SSL_CERT_FILE, SSL_CERT_DIR, else the system's store). Either way the certificate
  // must be valid now and name the URL's host (an IP address in its subjectAltName for an IP).
  std::string ca_file;
  std::chrono::milliseconds timeout{5000};
  // Lowered only by tests.
  size_t max_body_bytes = kMaxPodListBytes;
};

class KubeletPodsClient {
 public:
  // No connection is made yet. InvalidArgument when options.url is not one ParseKubeletUrl
  // gives (left empty, or a scheme other than http, https or file).
  static Result<std::unique_ptr<KubeletPodsClient>> Create(KubeletPodsClientOptions options);

  // One read of the pod list, the body unparsed: the enforcer's pod-list reader parses it
  // (pods::ParsePodList, InvalidArgument for a body that is not a PodList) only when it changed.
  // One GET. Errors name the URL: Unavailable for connection failures, refused certificates
  // (saying why: untrusted issuer, expired, not for this host) and non-200 answers,
  // PermissionDenied for 401/403, NotFound or PermissionDenied when the token file or the CA file
  // cannot be read, InvalidArgument for a CA file without a PEM certificate, ResourceExhausted for
  // a body over max_body_bytes (read no further than that).
  // file:// URLs: one read of the file (no token, no timeout); NotFound naming the file when it
  // does not exist, PermissionDenied when it cannot be read, ResourceExhausted for a file over
  // max_body_bytes (refused before it is read).
  Result<std::string> FetchPodList() const;

  const std::string& url() const { return options_.url.text; }

 private:
  explicit KubeletPodsClient(KubeletPodsClientOptions options) : options_(std::move(options)) {}
  Result<std::string> ReadToken() const;
  Status CheckCaFile() const;
  Result<std::string> ReadPodListFile() const;

  KubeletPodsClientOptions options_;
};

}  // namespace netqos::pods
