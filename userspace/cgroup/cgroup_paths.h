// Where the kubelet puts pod and container cgroups, for the cgroupfs and systemd cgroup drivers,
// as candidate paths relative to the cgroup2 mount. Pure: which candidate exists, and its cgroup
// id, are read by cgroup/fs/cgroup_dirs.h.
#pragma once

#include <string>
#include <vector>

#include "common/named_enum.h"
#include "common/status.h"

namespace netqos::cgroup {

enum class CgroupDriver { kCgroupfs, kSystemd };
// Katalyst's spellings (--cgroup-type).
inline constexpr Choices<CgroupDriver, 2> kCgroupDriverNames{{
    {"cgroupfs", CgroupDriver::kCgroupfs},
    {"systemd", CgroupDriver::kSystemd},
}};

enum class PodQosClass { kGuaranteed, kBurstable, kBestEffort, kUnknown };

// "Guaranteed" / "Burstable" / "BestEffort" (status.qosClass); anything else is kUnknown.
PodQosClass ParsePodQosClass(const std::string& qos_class);

struct CgroupLayout {
  CgroupDriver driver = CgroupDriver::kCgroupfs;
  // Katalyst's --addition-cgroup-paths, relative to the mount ("/kubepods/offline"). Under a root
  // whose last component is a systemd slice ("x.slice") pods use the systemd names
  // (x-pod<uid_>.slice/<scope>); under any other root the cgroupfs names (pod<uid>/<id>).
  std::vector<std::string> additional_roots;
};

// The kubelet's cgroup roots under `mount` (absolute): kubepods.slice (systemd) or kubepods
// (cgroupfs), then each additional root, without duplicates. Every pod's cgroup is below one.
std::vector<std::string> KubeletRoots(const std::string& mount, const CgroupLayout& layout);

// Candidate pod cgroups, relative to the mount, most likely first:
//   cgroupfs: kubepods/pod<uid> (Guaranteed), kubepods/{burstable,besteffort}/pod<uid>
//   systemd:  kubepods.slice/kubepods-pod<uid_>.slice,
//             kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid_>.slice
// where <uid_> is the uid with '-' replaced by '_'. kUnknown gives all three classes, in the
// order Guaranteed, Burstable, BestEffort. Additional roots follow the built-in ones.
std::vector<std::string> PodCgroupCandidates(const CgroupLayout& layout, PodQosClass qos,
                                             const std::string& pod_uid);

// Candidate container cgroups: each pod candidate plus "/<id>" (cgroupfs; "/crio-<id>" for
// CRI-O, both for an unknown runtime) or
// "/<prefix>-<id>.scope" (systemd) with prefix cri-containerd (containerd), crio (cri-o) or
// docker (docker). An empty or unrecognised runtime under systemd gives all three prefixes.
std::vector<std::string> ContainerCgroupCandidates(const CgroupLayout& layout, PodQosClass qos,
                                                   const std::string& pod_uid,
                                                   const std::string& runtime,
                                                   const std::string& container_id);

// `relative` (a candidate above) under `base`, a mount without a trailing '/': the two joined by
// one '/', whatever slashes `relative` starts or ends with.
std::string CgroupPathUnder(const std::string& base, const std::string& relative);

}  // namespace netqos::cgroup
