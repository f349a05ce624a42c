#include "pods/kubelet/kubelet_pods_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "common/bounded_file.h"

namespace netqos::pods {

Result<KubeletUrl> ParseKubeletUrl(const std::string& url) {
  KubeletUrl out;
  out.text = url;
  const auto sep = url.find("://");
  if (sep == std::string::npos) return InvalidArgument("kubelet URL " + url + ": no scheme");
  out.scheme = url.substr(0, sep);
  const std::string rest = url.substr(sep + 3);
  if (out.scheme == "file") {
    // file:///abs/path: the authority (between "//" and the path) must be empty.
    if (rest.empty() || rest[0] != '/') {
      return InvalidArgument("kubelet URL " + url +
                             ": a file URL has no host and an absolute path (file:///path)");
    }
    if (rest.find_first_not_of('/') == std::string::npos) {
      return InvalidArgument("kubelet URL " + url + ": no file path");
    }
    out.path = rest;
    return out;
  }
  if (out.scheme != "http" && out.scheme != "https") {
    return InvalidArgument("kubelet URL " + url + ": scheme must be http, https or file");
  }
  const auto slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  out.path = slash == std::string::npos ? "/" : rest.substr(slash);
  out.port = out.scheme == "https" ? 443 : 80;
  std::string host = authority;
  std::string port;
  if (!authority.empty() && authority[0] == '[') {  // [v6addr]:port
    const auto close = authority.find(']');
    if (close == std::string::npos) return InvalidArgument("kubelet URL " + url + ": bad host");
    host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return InvalidArgument("kubelet URL " + url + ": bad host");
      port = authority.substr(close + 2);
    }
  } else if (const auto colon = authority.rfind(':'); colon != std::string::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) return InvalidArgument("kubelet URL " + url + ": no host");
  if (!port.empty()) {
    int p = 0;
    for (char c : port) {
      if (c < '0' || c > '9' || p > 65535)
        return InvalidArgument("kubelet URL " + url + ": bad port");
      p = p * 10 + (c - '0');
    }
    if (p <= 0 || p > 65535) return InvalidArgument("kubelet URL " + url + ": bad port");
    out.port = p;
  }
  out.host = host;
  return out;
}

Result<std::unique_ptr<KubeletPodsClient>> KubeletPodsClient::Create(
    KubeletPodsClientOptions options) {
  const std::string& scheme = options.url.scheme;
  if (scheme != "http" && scheme != "https" && scheme != "file") {
    return InvalidArgument("kubelet URL \"" + options.url.text +
                           "\": scheme must be http, https or file, got \"" + scheme + "\"");
  }
  return std::unique_ptr<KubeletPodsClient>(new KubeletPodsClient(std::move(options)));
}

Result<std::string> KubeletPodsClient::ReadToken() const {
  auto read = ReadFileAtMost(options_.token_file, kMaxTokenFileBytes);
  if (!read.ok()) {
    const Status& st = read.status();
    if (st.code() == StatusCode::kOutOfRange) {
      return InvalidArgument("kubelet token file " + st.message());
    }
    return Status(
        st.code() == StatusCode::kNotFound ? StatusCode::kNotFound : StatusCode::kPermissionDenied,
        "cannot read the kubelet token file: " + st.message());
  }
  std::string token = std::move(read).value();
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  if (token.empty())
    return FailedPrecondition("kubelet token file " + options_.token_file + " is empty");
  return token;
}

// The CA file, checked before each https request so a bad one is named as such (OpenSSL would
// only say that loading certificates failed): it must be readable and hold a PEM certificate.
Status KubeletPodsClient::CheckCaFile() const {
  const std::string& path = options_.ca_file;
  const std::string what = "kubelet CA file " + path + " (--kubelet-ca-file)";
  FILE* f = std::fopen(path.c_str(), "re");
  if (f == nullptr) {
    const int err = errno;
    return Status(err == ENOENT ? StatusCode::kNotFound : StatusCode::kPermissionDenied,
                  what + ": " + std::strerror(err));
  }
  int certs = 0;
  while (X509* cert = PEM_read_X509(f, nullptr, nullptr, nullptr)) {
    ++certs;
    X509_free(cert);
  }
  ERR_clear_error();  // the read that ended the loop leaves an error queued
  std::fclose(f);
  if (certs == 0) return InvalidArgument(what + " holds no PEM certificate");
  return Status::Ok();
}

Result<std::string> KubeletPodsClient::ReadPodListFile() const {
  const std::string& file = options_.url.path;
  auto text = ReadFileAtMost(file, options_.max_body_bytes);
  if (text.ok()) return text;
  const Status& st = text.status();
  switch (st.code()) {
    case StatusCode::kOutOfRange:
      return ResourceExhausted("pod list file " + st.message());
    case StatusCode::kNotFound:
    case StatusCode::kPermissionDenied:
      return Status(st.code(), "cannot read the pod list file: " + st.message());
    default:
      return Unavailable("cannot read the pod list file: " + st.message());  // EISDIR: a directory
  }
}

Result<std::string> KubeletPodsClient::FetchPodList() const {
  const KubeletUrl& u = options_.url;
  if (u.scheme == "file") return ReadPodListFile();
  const std::string& url = u.text;
  httplib::Headers headers = {{"Accept", "application/json"}};
  const bool https = u.scheme == "https";
  if (https) {
    NETQOS_ASSIGN_OR_RETURN(std::string token, ReadToken());
    headers.emplace("Authorization", "Bearer " + token);
  }
  const bool verify = https && !options_.insecure_skip_tls_verify;
  if (verify && !options_.ca_file.empty()) NETQOS_RETURN_IF_ERROR(CheckCaFile());
  // An IPv6 address goes back into brackets, or its colons would be read as the port's.
  const std::string host = u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host;
  httplib::Client client(u.scheme + "://" + host + ":" + std::to_string(u.port));
  if (!client.is_valid()) return Unavailable("GET " + url + ": cannot set up the client");
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(options_.timeout);
  const auto usecs = std::chrono::duration_cast<std::chrono::microseconds>(options_.timeout - secs);
  client.set_connection_timeout(secs.count(), usecs.count());
  client.set_read_timeout(secs.count(), usecs.count());
  if (https) client.enable_server_certificate_verification(verify);
  if (verify) {
    // Only the CA file's certificates are trusted (httplib adds OpenSSL's defaults only when it
    // has no file).
    if (!options_.ca_file.empty()) client.set_ca_cert_path(options_.ca_file);
    // OpenSSL checks the host during the handshake, by RFC 6125's rules: an IP address must be
    // an iPAddress subjectAltName, a name a dNSName one, and the common name is never used.
    // (httplib's own later check falls back to the common name.)
    X509_VERIFY_PARAM* param = SSL_CTX_get0_param(client.ssl_context());
    in6_addr any{};
    const bool ip = ::inet_pton(AF_INET, u.host.c_str(), &any) == 1 ||
                    ::inet_pton(AF_INET6, u.host.c_str(), &any) == 1;
    const int set = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, u.host.c_str())
                       : X509_VERIFY_PARAM_set1_host(param, u.host.c_str(), 0);
    if (set != 1) return Unavailable("GET " + url + ": cannot set the host to verify");
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  }

  // The body is collected here rather than by httplib, so that it can be cut off at the limit
  // while it streams (httplib has no client-side limit) instead of after it was all held.
  std::string body;
  bool too_large = false;
  auto res = client.Get(u.path, headers, [&](const char* data, size_t n) {
    if (n > options_.max_body_bytes - body.size()) {
      too_large = true;
      return false;  // ends the request: httplib reports Error::Canceled
    }
    body.append(data, n);
    return true;
  });
  if (too_large) {
    return ResourceExhausted("GET " + url + ": the response body is " +
                             SizeLimitText(options_.max_body_bytes) +
                             " for a pod list; the rest was not read");
  }
  if (!res && res.error() == httplib::Error::SSLServerVerification) {
    const long v = client.get_openssl_verify_result();
    std::string why = v != X509_V_OK ? X509_verify_cert_error_string(v)
                                     : "the certificate does not name " + u.host;
    if (v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH) {
      why += " (the certificate does not name " + u.host + ")";
    }
    return Unavailable("GET " + url + ": the kubelet's serving certificate is refused: " + why +
                       "; trusted: " +
                       (options_.ca_file.empty()
                            ? std::string("OpenSSL's default CAs (SSL_CERT_FILE, SSL_CERT_DIR or "
                                          "the system store)")
                            : "--kubelet-ca-file " + options_.ca_file));
  }
  if (!res && res.error() == httplib::Error::SSLLoadingCerts) {
    return Unavailable("GET " + url + ": cannot load the CA certificates of " +
                       (options_.ca_file.empty() ? std::string("OpenSSL's defaults")
                                                 : "--kubelet-ca-file " + options_.ca_file));
  }
  if (!res) return Unavailable("GET " + url + ": " + httplib::to_string(res.error()));
  if (res->status == 401 || res->status == 403) {
    return Status(StatusCode::kPermissionDenied,
                  "GET " + url + ": HTTP " + std::to_string(res->status));
  }
  if (res->status != 200) {
    return Unavailable("GET " + url + ": HTTP " + std::to_string(res->status));
  }
  return body;
}

}  // namespace netqos::pods
