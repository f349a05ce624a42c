#include "cgroup/kubelet_pods_client.h"

#include <fcntl.h>
#include <httplib.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace netqos::cgroup {

Result<KubeletUrl> ParseKubeletUrl(const std::string& url) {
  KubeletUrl out;
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
      if (c < '0' || c > '9' || p > 65535) return InvalidArgument("kubelet URL " + url + ": bad port");
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
  NETQOS_ASSIGN_OR_RETURN(KubeletUrl parsed, ParseKubeletUrl(options.url));
  return std::unique_ptr<KubeletPodsClient>(
      new KubeletPodsClient(std::move(options), std::move(parsed)));
}

Result<std::string> KubeletPodsClient::ReadToken() const {
  std::ifstream in(options_.token_file);
  if (!in) {
    const int err = errno;
    return Status(err == ENOENT ? StatusCode::kNotFound : StatusCode::kPermissionDenied,
                  "kubelet token file " + options_.token_file + ": " + std::strerror(err));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string token = ss.str();
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  if (token.empty()) return FailedPrecondition("kubelet token file " + options_.token_file + " is empty");
  return token;
}

Result<std::string> KubeletPodsClient::ReadPodListFile() const {
  const std::string& file = parsed_.path;
  auto fail = [&](int err) {
    return Status(err == ENOENT                   ? StatusCode::kNotFound
                  : err == EACCES || err == EPERM ? StatusCode::kPermissionDenied
                                                  : StatusCode::kUnavailable,
                  "pod list file " + file + ": " + std::strerror(err));
  };
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(errno);
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return fail(err);  // EISDIR for a directory
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

Result<std::vector<PodInfo>> KubeletPodsClient::ListPods() const {
  NETQOS_ASSIGN_OR_RETURN(std::string body, FetchPodList());
  return ParsePodList(body, options_.url);
}

Result<std::string> KubeletPodsClient::FetchPodList() const {
  if (parsed_.scheme == "file") return ReadPodListFile();
  const std::string& url = options_.url;
  httplib::Headers headers = {{"Accept", "application/json"}};
  const bool https = parsed_.scheme == "https";
  if (https) {
    NETQOS_ASSIGN_OR_RETURN(std::string token, ReadToken());
    headers.emplace("Authorization", "Bearer " + token);
  }
  httplib::Client client(parsed_.scheme + "://" + parsed_.host + ":" +
                         std::to_string(parsed_.port));
  if (!client.is_valid()) return Unavailable("GET " + url + ": cannot set up the client");
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(options_.timeout);
  const auto usecs =
      std::chrono::duration_cast<std::chrono::microseconds>(options_.timeout - secs);
  client.set_connection_timeout(secs.count(), usecs.count());
  client.set_read_timeout(secs.count(), usecs.count());
  if (https) client.enable_server_certificate_verification(!options_.insecure_skip_tls_verify);

  auto res = client.Get(parsed_.path, headers);
  if (!res) return Unavailable("GET " + url + ": " + httplib::to_string(res.error()));
  if (res->status == 401 || res->status == 403) {
    return Status(StatusCode::kPermissionDenied,
                  "GET " + url + ": HTTP " + std::to_string(res->status));
  }
  if (res->status != 200) {
    return Unavailable("GET " + url + ": HTTP " + std::to_string(res->status));
  }
  return std::move(res->body);
}

}  // namespace netqos::cgroup
