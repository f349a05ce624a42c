#include "pods/cri/cri_endpoint.h"

#include <sys/stat.h>

namespace netqos::cri {

Result<CriSocket> ParseCriSocket(const std::string& flag) {
  if (flag == "auto") return CriSocket{};
  std::string path = flag;
  if (path.rfind("unix://", 0) == 0) path = path.substr(7);
  if (path.empty() || path[0] != '/') {
    return InvalidArgument("--cri-socket \"" + flag +
                           "\": want auto, unix:///abs/path.sock or /abs/path.sock");
  }
  return CriSocket{"unix://" + path};
}

Result<std::string> ResolveCriEndpoint(const CriSocket& socket,
                                       const std::vector<std::string>& candidates) {
  if (!socket.Auto()) return socket.endpoint;
  std::string tried;
  for (const auto& path : candidates) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) return "unix://" + path;
    tried += (tried.empty() ? "" : ", ") + path;
  }
  return NotFound("no container runtime socket found (tried " + tried +
                  "); give --cri-socket=unix:///path/to/runtime.sock, or "
                  "--pod-source=kubelet");
}

}  // namespace netqos::cri
