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

// "auto" -> "unix://<first existing socket of `candidates`>", else NotFound listing them.
// "unix:///abs/path" or "/abs/path" -> "unix:///abs/path" (not checked: the runtime may start
// later). Anything else (tcp, relative paths) is InvalidArgument naming the value.
Result<std::string> ResolveCriEndpoint(
    const std::string& flag, const std::vector<std::string>& candidates = WellKnownCriSockets());

}  // namespace netqos::cri
