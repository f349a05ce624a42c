// The pod list parsed the way pods::ParsePodList did before it read the document as a stream:
// the whole document built as an nlohmann::json tree, the pods taken from it. Kept as an oracle
// for the streaming parser's tests (the same PodInfo from any document) and as the baseline of
// bench/pod_list_footprint_bench.cc. Not product code.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/json_depth.h"
#include "common/status.h"
#include "pods/pod_list.h"

namespace netqos::testing {
namespace pod_list_tree {

using nlohmann::json;

inline std::string StringField(const json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

inline const json* ObjectField(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_object()) return nullptr;
  return &*it;
}

inline void AppendContainers(const json& status, const char* key, bool init, pods::PodInfo* pod) {
  auto it = status.find(key);
  if (it == status.end() || !it->is_array()) return;
  for (const auto& cs : *it) {
    if (!cs.is_object()) continue;
    pods::ContainerInfo c;
    c.name = StringField(cs, "name");
    c.init = init;
    pods::SplitContainerId(StringField(cs, "containerID"), &c.runtime, &c.id);
    pod->containers.push_back(std::move(c));
  }
}

inline pods::PodInfo ParsePod(const json& item) {
  pods::PodInfo pod;
  if (const json* meta = ObjectField(item, "metadata")) {
    pod.uid = StringField(*meta, "uid");
    pod.ns = StringField(*meta, "namespace");
    pod.name = StringField(*meta, "name");
    if (const json* ann = ObjectField(*meta, "annotations")) {
      for (const auto& [k, v] : ann->items()) {
        if (v.is_string()) pod.annotations[k] = v.get<std::string>();
      }
    }
  }
  if (const json* spec = ObjectField(item, "spec")) {
    auto host = spec->find("hostNetwork");
    pod.host_network = host != spec->end() && host->is_boolean() && host->get<bool>();
  }
  if (const json* status = ObjectField(item, "status")) {
    pod.qos_class = StringField(*status, "qosClass");
    pod.phase = StringField(*status, "phase");
    if (auto ips = status->find("podIPs"); ips != status->end() && ips->is_array()) {
      for (const auto& ip : *ips) {
        const std::string text = StringField(ip, "ip");
        if (!text.empty()) pod.ips.push_back(text);
      }
    }
    if (pod.ips.empty()) {
      const std::string ip = StringField(*status, "podIP");
      if (!ip.empty()) pod.ips.push_back(ip);
    }
    AppendContainers(*status, "initContainerStatuses", true, &pod);
    AppendContainers(*status, "containerStatuses", false, &pod);
  }
  return pod;
}

}  // namespace pod_list_tree

// The pods of `json_text`, with the errors of pods::ParsePodList (the same messages).
inline Result<std::vector<pods::PodInfo>> ParsePodListTree(const std::string& json_text,
                                                           const std::string& source) {
  using pod_list_tree::json;
  if (JsonTooDeep(json_text)) {
    return InvalidArgument("pod list from " + source + ": " + JsonTooDeepText());
  }
  const json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgument("pod list from " + source + ": malformed JSON");
  if (!doc.is_object()) {
    return InvalidArgument("pod list from " + source + ": not a JSON object");
  }
  auto items = doc.find("items");
  if (items == doc.end() || items->is_null()) return std::vector<pods::PodInfo>{};
  if (!items->is_array()) {
    return InvalidArgument("pod list from " + source + ": \"items\" is not an array");
  }
  std::vector<pods::PodInfo> out;
  out.reserve(items->size());
  for (const auto& item : *items) {
    if (item.is_object()) out.push_back(pod_list_tree::ParsePod(item));
  }
  return out;
}

// `pods` with only the annotations whose keys are in `keys`: what the streaming parser keeps
// when given them.
inline std::vector<pods::PodInfo> WithAnnotations(std::vector<pods::PodInfo> pods,
                                                  const std::set<std::string, std::less<>>& keys) {
  for (auto& pod : pods) {
    std::erase_if(pod.annotations, [&](const auto& kv) { return !keys.contains(kv.first); });
  }
  return pods;
}

}  // namespace netqos::testing
