// The kinds of object an enforcement problem is about: the enforcer names each problem by its
// kind and object ("nic:eth0", "pod:ns/web"), and the metric netqos_enforcement_problems counts
// active problems by kind, every kind's series present at 0. One table here, so that a kind the
// enforcer reports is always one the metric knows.
#pragma once

#include <string>
#include <string_view>

#include "common/named_enum.h"

namespace netqos {

enum class ProblemKind {
  kAddress,        // a pod address claimed by two pods
  kAggregateMap,   // the namespace aggregate map
  kCarrierSlots,   // the veth carrier slots
  kCgroup,         // a container's cgroup
  kCgroupTree,     // the kubelet's cgroup tree
  kClassMap,       // the class map
  kContainer,      // a container's allocation or annotations
  kEdtMap,         // the EDT rate map
  kKubelet,        // the pod source
  kNic,            // a NIC and its shaping
  kPod,            // a pod's status or veth
  kPodAddressMap,  // the pod address map
  kPodList,        // an entry of the pod list
  kPodRoots,       // the guard on the kubelet's pod roots
  kVeth,           // a pod's veth
  kVeths,          // the list of pod veths
};

inline constexpr Choices<ProblemKind, 16> kProblemKinds{{
    {"address", ProblemKind::kAddress},
    {"aggregate-map", ProblemKind::kAggregateMap},
    {"carrier-slots", ProblemKind::kCarrierSlots},
    {"cgroup", ProblemKind::kCgroup},
    {"cgroup-tree", ProblemKind::kCgroupTree},
    {"class-map", ProblemKind::kClassMap},
    {"container", ProblemKind::kContainer},
    {"edt-map", ProblemKind::kEdtMap},
    {"kubelet", ProblemKind::kKubelet},
    {"nic", ProblemKind::kNic},
    {"pod", ProblemKind::kPod},
    {"pod-address-map", ProblemKind::kPodAddressMap},
    {"pod-list", ProblemKind::kPodList},
    {"pod-roots", ProblemKind::kPodRoots},
    {"veth", ProblemKind::kVeth},
    {"veths", ProblemKind::kVeths},
}};

inline std::string_view ProblemKindName(ProblemKind kind) {
  return ChoiceName(kind, kProblemKinds);
}

// How a problem is named in the log and in netqosctl status: the kind, then ":" and the object
// when the kind has several ("nic:eth0"); the kind alone when it names one thing ("class-map").
std::string ProblemKey(ProblemKind kind, std::string_view object);

}  // namespace netqos
