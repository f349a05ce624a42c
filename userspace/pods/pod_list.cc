#include "pods/pod_list.h"

#include <nlohmann/json.hpp>

#include "common/json_depth.h"

namespace netqos::pods {
namespace {

using nlohmann::json;

// The string at obj[key], or "" when absent or not a string.
std::string StringField(const json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

const json* ObjectField(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_object()) return nullptr;
  return &*it;
}

void AppendContainers(const json& status, const char* key, bool init, PodInfo* pod) {
  auto it = status.find(key);
  if (it == status.end() || !it->is_array()) return;
  for (const auto& cs : *it) {
    if (!cs.is_object()) continue;
    ContainerInfo c;
    c.name = StringField(cs, "name");
    c.init = init;
    SplitContainerId(StringField(cs, "containerID"), &c.runtime, &c.id);
    pod->containers.push_back(std::move(c));
  }
}

PodInfo ParsePod(const json& item) {
  PodInfo pod;
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

}  // namespace

void SplitContainerId(const std::string& container_id, std::string* runtime, std::string* id) {
  const auto sep = container_id.find("://");
  if (sep == std::string::npos) {
    runtime->clear();
    *id = container_id;
    return;
  }
  *runtime = container_id.substr(0, sep);
  *id = container_id.substr(sep + 3);
}

Result<std::vector<PodInfo>> ParsePodList(const std::string& json_text, const std::string& source) {
  if (JsonTooDeep(json_text)) {
    return InvalidArgument("pod list from " + source + ": " + JsonTooDeepText());
  }
  const json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgument("pod list from " + source + ": malformed JSON");
  if (!doc.is_object()) {
    return InvalidArgument("pod list from " + source + ": not a JSON object");
  }
  auto items = doc.find("items");
  if (items == doc.end() || items->is_null()) return std::vector<PodInfo>{};  // empty list
  if (!items->is_array()) {
    return InvalidArgument("pod list from " + source + ": \"items\" is not an array");
  }
  std::vector<PodInfo> pods;
  pods.reserve(items->size());
  for (const auto& item : *items) {
    if (item.is_object()) pods.push_back(ParsePod(item));
  }
  return pods;
}

}  // namespace netqos::pods
