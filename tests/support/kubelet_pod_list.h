// The kubelet's pod list read as the daemon reads it, for the kubelet client's tests: one
// KubeletPodsClient::FetchPodList, the body parsed by cgroup::ParsePodList naming the URL (what
// enforce/pod_list_reader.cc does with each changed list).
#pragma once

#include <string>
#include <vector>

#include "cgroup/kubelet_pods_client.h"
#include "cgroup/pod_list.h"
#include "common/status.h"

namespace netqos::testing {

inline Result<std::vector<cgroup::PodInfo>> FetchPods(const cgroup::KubeletPodsClient& client) {
  auto body = client.FetchPodList();
  if (!body.ok()) return body.status();
  return cgroup::ParsePodList(*body, client.url());
}

}  // namespace netqos::testing
