// Which CRI socket to read: the one given (--cri-socket), or, for "auto", the first of the
// well-known containerd and CRI-O sockets that exists.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace netqos::cri {

// Tried in order by "auto" (the /var/run spellings are symlinks to these on current distros).
inline const std::vector<std::string>& WellKnownCriSockets() {
  static const std::vector<std::string> kSockets = {"/run/containerd/containerd.sock",
                                                    "/run/crio/crio.sock"};
  return kSockets;
}

// --cri-socket as read: auto, or the endpoint to dial.
struct CriSocket {
  std::string endpoint;  // "unix:///abs/path"; empty: auto
  bool Auto() const { return endpoint.empty(); }
  bool operator==(const CriSocket&) const = default;
};

// Reads --cri-socket once, when the flags are read: "auto" -> auto; "unix:///abs/path" or
// "/abs/path" -> the endpoint "unix:///abs/path" (not checked: the runtime may start later).
// Anything else (tcp, relative paths) is InvalidArgument naming the value.
Result<CriSocket> ParseCriSocket(const std::string& flag);

// The endpoint to dial: the given one, or for auto "unix://<first existing socket of
// `candidates`>" (looked up each time: the runtime may come up after netqosd), else NotFound
// listing them.
Result<std::string> ResolveCriEndpoint(
    const CriSocket& socket, const std::vector<std::string>& candidates = WellKnownCriSockets());

}  // namespace netqos::cri
