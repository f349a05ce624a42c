// The pod annotations the enforcer reads, for the pod list parser to keep only those: the kubelet
// lists every annotation of every pod on the node, and most (last applied configurations,
// controllers' bookkeeping) mean nothing to netqos.
#pragma once

#include <functional>
#include <set>
#include <string>

#include "core/config.h"

namespace netqos::enforce {

// Every key ComputeDesiredState may look up in a pod's annotations under `policy`: the ones a
// tenant policy rules on (tenant_policy.h, the QoS level among them), the extra QoS level
// selectors (--pod-annotation-qos-level-<level>-selector) and the pod's net class id key
// (--network-resource-plugin-net-class-annotation-key).
std::set<std::string, std::less<>> PodAnnotationKeys(const core::PolicyConfig& policy);

}  // namespace netqos::enforce
