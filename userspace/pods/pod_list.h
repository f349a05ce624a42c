// A pod as enforcement needs it, whichever source listed it (pods/pod_source.h): identity, QoS
// class, annotations, the runtime ids of its started containers, and the pod's own addresses (for
// pods behind a CNI). Also the parser of the kubelet's PodList (GET /pods) into it.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace netqos::pods {

struct ContainerInfo {
  std::string name;
  std::string runtime;  // "containerd", "cri-o", "docker", ...; empty when not started yet
  std::string id;       // the containerID without its "<runtime>://" prefix; empty if not started
  bool init = false;    // from status.initContainerStatuses
  bool operator==(const ContainerInfo&) const = default;
};

struct PodInfo {
  std::string uid;
  std::string ns;
  std::string name;
  std::string qos_class;  // status.qosClass: "Guaranteed", "Burstable", "BestEffort" or empty
  std::map<std::string, std::string> annotations;
  std::vector<ContainerInfo> containers;  // init containers first, then regular ones
  bool host_network = false;  // spec.hostNetwork: then the pod's addresses are the node's
  std::string phase;          // status.phase: "Pending", "Running", "Succeeded", "Failed", ...
  // status.podIPs[].ip, else status.podIP; as the kubelet wrote them (not validated here).
  std::vector<std::string> ips;
  bool operator==(const PodInfo&) const = default;
};

// Splits "containerd://abc" into runtime "containerd" and id "abc". A value without "://" is
// taken as a bare id with an empty runtime.
void SplitContainerId(const std::string& container_id, std::string* runtime, std::string* id);

struct PodListOptions {
  // The annotation keys kept; nullopt keeps them all. A kubelet's pods carry annotations netqos
  // never reads (last applied configurations, controllers' bookkeeping), some of them kilobytes.
  // The CRI pod source and the NRI plugin keep the same way. The list is not checked against the
  // API server's 256 KiB bound on a pod's annotations, which every pod it lists has passed; the
  // runtime's sources check that bound on all annotations, kept or not (cri/cri_translate.h).
  std::optional<std::set<std::string, std::less<>>> annotation_keys;

  bool KeepsAnnotation(std::string_view key) const {
    return !annotation_keys || annotation_keys->contains(key);
  }
};

// Parses a PodList JSON document. Missing fields are left empty; items that are not objects are
// skipped; a missing or null "items" is an empty list; of a key given twice in one object, the
// last is read. Malformed JSON, a non-object document or a non-array "items" is InvalidArgument
// naming `source` (a URL or file name). The document is read as a stream of tokens and only the
// fields PodInfo holds are copied out: a real kubelet's pods (whole specs and statuses, managed
// fields) are never built as a tree.
Result<std::vector<PodInfo>> ParsePodList(const std::string& json_text, const std::string& source,
                                          const PodListOptions& options = {});

}  // namespace netqos::pods
