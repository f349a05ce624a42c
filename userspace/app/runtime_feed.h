// The port through which what the container runtime says of its pods and containers (NRI) reaches
// the enforcer's pod list, ahead of the pod source (enforce/runtime_pods.h).
#pragma once

#include <string>

#include "pods/pod_list.h"

namespace netqos::app {

// Where the bridge hands what the runtime says of pods and containers: EnforcementStart's, which
// passes it on to the enforcer (Enforcer::OnRuntimePod and the rest).
class RuntimeFeed {
 public:
  virtual ~RuntimeFeed() = default;
  virtual void Pod(pods::PodInfo pod) = 0;
  virtual void Container(const pods::PodInfo& pod, pods::ContainerInfo container) = 0;
  virtual void PodRemoved(const std::string& pod_uid) = 0;
  virtual void ContainerRemoved(const std::string& pod_uid, const std::string& container_id) = 0;
};

}  // namespace netqos::app
