// The kubelet's pod list read as the daemon reads it, for the kubelet client's tests: one
// KubeletPodsClient::FetchPodList, the body parsed by pods::ParsePodList naming the URL (what
// pods/pod_list_reader.cc does with each changed list).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "pods/kubelet/kubelet_pods_client.h"
#include "pods/pod_list.h"

namespace netqos::testing {

inline Result<std::vector<pods::PodInfo>> FetchPods(const pods::KubeletPodsClient& client) {
  auto body = client.FetchPodList();
  if (!body.ok()) return body.status();
  return pods::ParsePodList(*body, client.url());
}

}  // namespace netqos::testing
