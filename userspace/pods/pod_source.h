// The port through which enforcement learns the node's pods. Two adapters implement it: the
// container runtime's CRI socket (cri/cri_pod_source.h, the default: no cluster credential) and
// the kubelet's GET /pods (pods/pod_list_reader.h over pods/kubelet/kubelet_pods_client.h, opt-in).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "pods/pod_list.h"

namespace netqos::pods {

class PodSource {
 public:
  virtual ~PodSource() = default;

  // The node's pods when they differ from the last successful read, or when `force`; nullopt
  // when they are the same. A failure is returned and forgets the last read, so the next good
  // one counts as a change. Called from one thread at a time.
  virtual Result<std::optional<std::vector<PodInfo>>> Read(bool force) = 0;

  // Where the pods come from, for logs and errors ("cri:unix:///run/containerd/containerd.sock").
  virtual std::string Describe() const = 0;
};

}  // namespace netqos::pods
