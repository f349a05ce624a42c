// Turns the runtime's answers (ListPodSandbox, PodSandboxStatus, ListContainers) into the pods
// enforcement needs. Pure: no I/O. Everything the runtime says is taken as hostile: ids and uids
// that would be joined into cgroup paths are checked, sizes are bounded, and what fails a check
// is left out with a reason instead of being trusted.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "pods/pod_list.h"
#include "runtime/v1/api.pb.h"

namespace netqos::cri {

// The kubelet's labels on every sandbox and container it creates.
inline constexpr char kPodUidLabel[] = "io.kubernetes.pod.uid";
inline constexpr char kPodNamespaceLabel[] = "io.kubernetes.pod.namespace";
inline constexpr char kPodNameLabel[] = "io.kubernetes.pod.name";
inline constexpr char kContainerNameLabel[] = "io.kubernetes.container.name";

// Bounds on what one sandbox may carry (the API server allows 256 KiB of annotations per pod).
// The annotation bound counts every annotation the runtime sent, kept or not: the kubelet copies
// all of a pod's annotations into its sandbox, so a sandbox past the API server's limit was not
// made from a pod the cluster admitted, and is left out like one with a forged id. The kubelet
// pod source's pods all passed that limit at the API server, so a pod either source lists is one
// the other would list too. Memory is not what the bound is for: whatever the sizes, only the
// kept annotations are copied (TranslatePods' `options`).
inline constexpr size_t kMaxAnnotationBytes = 256 * 1024;
inline constexpr size_t kMaxPodIps = 16;

// What PodSandboxStatus adds to a sandbox: read once per sandbox, since none of it changes while
// the sandbox lives.
struct SandboxDetails {
  bool host_network = false;     // network namespace mode NODE
  std::vector<std::string> ips;  // network.ip, then additional_ips
  std::string qos_class;  // from the cgroup parent; "" when unknown (every class is then tried)
};

// From one PodSandboxStatus answer: the details of `pod_uid`'s sandbox. The QoS class comes from
// containerd's verbose info (JSON under "info": config.linux.cgroup_parent) when present.
SandboxDetails DetailsFromStatus(const runtime::v1::PodSandboxStatusResponse& status,
                                 const std::string& pod_uid);

// The pod's QoS class from the cgroup parent the kubelet gave its sandbox, either driver:
//   .../kubepods/pod<uid> (Guaranteed), .../kubepods/{burstable,besteffort}/pod<uid>,
//   ...kubepods-pod<uid_>.slice, ...kubepods-{burstable,besteffort}-pod<uid_>.slice.
// "" when the parent has another shape or names another pod.
std::string QosClassFromCgroupParent(const std::string& cgroup_parent, const std::string& pod_uid);

struct CriPodList {
  std::vector<pods::PodInfo> pods;  // sorted by uid; containers sorted by name, then id
  // Sandboxes and containers left out, each with why ("sandbox <id>: pod uid label ... ").
  std::vector<std::string> rejected;
  size_t not_kubernetes = 0;  // sandboxes without the kubelet's labels (other CRI clients)
};

// `details` by sandbox id (a sandbox without them is listed without addresses and with an
// unknown QoS class); `runtime` is the runtime's name ("containerd", "cri-o"), given to every
// container like the kubelet's "<runtime>://" prefix.
//
// A pod's sandbox is its newest ready one (a pod whose sandbox was recreated has older, not ready
// ones); a pod with no ready sandbox is listed with no addresses and phase "Unknown". Only
// created and running containers are listed (exited ones have no cgroup). The CRI cannot tell an
// init container from a regular one, so every container has init=false: a running init
// container is classified with its pod, like a regular one.
//
// Only the annotation keys in `options.annotation_keys` are copied into the pods (nullopt copies
// them all), as the kubelet pod list's parser does: a sandbox carries all of its pod's
// annotations, most of which netqos never reads.
CriPodList TranslatePods(const runtime::v1::ListPodSandboxResponse& sandboxes,
                         const std::map<std::string, SandboxDetails>& details,
                         const runtime::v1::ListContainersResponse& containers,
                         const std::string& runtime, const pods::PodListOptions& options = {});

// Whether `id` can be a sandbox or container id: 1 to 128 lowercase hex digits (what containerd
// and CRI-O hand out; it is joined into cgroup paths).
bool IsRuntimeId(const std::string& id);

}  // namespace netqos::cri
