#include "cgroup/cgroup_paths.h"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace netqos::cgroup {
namespace {

const char* QosDirName(PodQosClass qos) {
  switch (qos) {
    case PodQosClass::kBurstable:
      return "burstable";
    case PodQosClass::kBestEffort:
      return "besteffort";
    default:
      return "";
  }
}

std::vector<PodQosClass> ClassesFor(PodQosClass qos) {
  if (qos == PodQosClass::kUnknown) {
    return {PodQosClass::kGuaranteed, PodQosClass::kBurstable, PodQosClass::kBestEffort};
  }
  return {qos};
}

std::string UnderscoreUid(std::string uid) {
  for (char& c : uid) {
    if (c == '-') c = '_';
  }
  return uid;
}

std::string TrimSlashes(const std::string& p) {
  size_t b = 0, e = p.size();
  while (b < e && p[b] == '/') ++b;
  while (e > b && p[e - 1] == '/') --e;
  return p.substr(b, e - b);
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "a/b/x.slice" -> "x"; "" when the last component is not a slice.
std::string SliceStem(const std::string& root) {
  const auto slash = root.rfind('/');
  const std::string last = slash == std::string::npos ? root : root.substr(slash + 1);
  if (!EndsWith(last, ".slice")) return "";
  return last.substr(0, last.size() - 6);
}

// One pod candidate plus whether it uses systemd naming (for the container part).
struct PodCandidate {
  std::string path;
  bool systemd = false;
};

std::vector<PodCandidate> PodCandidatesWithStyle(const CgroupLayout& layout, PodQosClass qos,
                                                 const std::string& pod_uid) {
  std::vector<PodCandidate> out;
  const std::string uid_ = UnderscoreUid(pod_uid);
  for (PodQosClass c : ClassesFor(qos)) {
    const std::string q = QosDirName(c);
    if (layout.driver == CgroupDriver::kCgroupfs) {
      out.push_back(
          {q.empty() ? "kubepods/pod" + pod_uid : "kubepods/" + q + "/pod" + pod_uid, false});
    } else if (q.empty()) {
      out.push_back({"kubepods.slice/kubepods-pod" + uid_ + ".slice", true});
    } else {
      out.push_back(
          {"kubepods.slice/kubepods-" + q + ".slice/kubepods-" + q + "-pod" + uid_ + ".slice",
           true});
    }
  }
  for (const auto& raw : layout.additional_roots) {
    const std::string root = TrimSlashes(raw);
    const std::string stem = SliceStem(root);
    const std::string prefix = root.empty() ? "" : root + "/";
    if (layout.driver == CgroupDriver::kSystemd && !stem.empty()) {
      out.push_back({prefix + stem + "-pod" + uid_ + ".slice", true});
    } else {
      out.push_back({prefix + "pod" + pod_uid, false});
    }
  }
  return out;
}

std::vector<std::string> ScopePrefixes(const std::string& runtime) {
  if (runtime == "containerd") return {"cri-containerd"};
  if (runtime == "cri-o") return {"crio"};
  if (runtime == "docker") return {"docker"};
  return {"cri-containerd", "crio", "docker"};
}

}  // namespace

PodQosClass ParsePodQosClass(const std::string& qos_class) {
  if (qos_class == "Guaranteed") return PodQosClass::kGuaranteed;
  if (qos_class == "Burstable") return PodQosClass::kBurstable;
  if (qos_class == "BestEffort") return PodQosClass::kBestEffort;
  return PodQosClass::kUnknown;
}

std::vector<std::string> PodCgroupCandidates(const CgroupLayout& layout, PodQosClass qos,
                                             const std::string& pod_uid) {
  std::vector<std::string> out;
  for (auto& c : PodCandidatesWithStyle(layout, qos, pod_uid)) out.push_back(std::move(c.path));
  return out;
}

std::vector<std::string> ContainerCgroupCandidates(const CgroupLayout& layout, PodQosClass qos,
                                                   const std::string& pod_uid,
                                                   const std::string& runtime,
                                                   const std::string& container_id) {
  std::vector<std::string> out;
  for (const auto& pod : PodCandidatesWithStyle(layout, qos, pod_uid)) {
    if (!pod.systemd) {
      // containerd and docker name the directory by the bare id; CRI-O's cgroupfs manager
      // prefixes it with "crio-".
      if (runtime != "cri-o") out.push_back(pod.path + "/" + container_id);
      if (runtime != "containerd" && runtime != "docker") {
        out.push_back(pod.path + "/crio-" + container_id);
      }
      continue;
    }
    for (const auto& prefix : ScopePrefixes(runtime)) {
      out.push_back(pod.path + "/" + prefix + "-" + container_id + ".scope");
    }
  }
  return out;
}

std::vector<std::string> KubeletRoots(const std::string& mount, const CgroupLayout& layout) {
  std::vector<std::string> roots{
      mount + (layout.driver == CgroupDriver::kSystemd ? "/kubepods.slice" : "/kubepods")};
  for (std::string r : layout.additional_roots) {
    while (!r.empty() && r.front() == '/') r.erase(r.begin());
    while (!r.empty() && r.back() == '/') r.pop_back();
    const std::string full = r.empty() ? mount : mount + "/" + r;
    if (std::find(roots.begin(), roots.end(), full) == roots.end()) roots.push_back(full);
  }
  return roots;
}

std::string CgroupPathUnder(const std::string& base, const std::string& relative) {
  return base + "/" + TrimSlashes(relative);
}

}  // namespace netqos::cgroup
