#include "pods/pod_list.h"

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/json_depth.h"

namespace netqos::pods {
namespace {

using nlohmann::json;

// Where the parser stands: the object or array whose members or elements come next.
enum class Node : uint8_t {
  kDocument,     // the PodList object
  kItems,        // its "items"
  kPod,          // an object in "items"
  kMetadata,     // a pod's "metadata"
  kAnnotations,  // metadata.annotations
  kSpec,         // a pod's "spec"
  kStatus,       // a pod's "status"
  kPodIps,       // status.podIPs
  kPodIp,        // an object in status.podIPs
  kStatuses,     // status.initContainerStatuses or status.containerStatuses
  kContainer,    // an object in one of those
};

// What the next value is to PodInfo; kIgnored values (and everything inside them) are skipped.
enum class Slot : uint8_t {
  kIgnored,
  kRoot,
  kItems,
  kPod,
  kMetadata,
  kUid,
  kNamespace,
  kName,
  kAnnotations,
  kAnnotation,
  kSpec,
  kHostNetwork,
  kStatus,
  kQosClass,
  kPhase,
  kPodIp,
  kPodIps,
  kPodIpEntry,
  kIp,
  kInitStatuses,
  kStatuses,
  kContainer,
  kContainerName,
  kContainerId,
};

// The handler of nlohmann's token stream (its SAX interface). Values are copied out as they pass;
// nothing else is kept, so a pod's spec and status cost only the scan. A key given twice in an
// object resets what it fills when it is seen, so the last one counts, as it would in a tree.
class PodListHandler {
 public:
  explicit PodListHandler(const PodListOptions& options) : options_(options) {}

  bool null() { return Scalar(true); }
  bool boolean(bool value) {
    if (skip_depth_ == 0 && CurrentSlot() == Slot::kHostNetwork) pod_.host_network = value;
    return Scalar(false);
  }
  bool number_integer(json::number_integer_t /*value*/) { return Scalar(false); }
  bool number_unsigned(json::number_unsigned_t /*value*/) { return Scalar(false); }
  bool number_float(json::number_float_t /*value*/, const json::string_t& /*text*/) {
    return Scalar(false);
  }
  bool binary(json::binary_t& /*value*/) { return Scalar(false); }
  bool string(json::string_t& value);

  bool start_object(std::size_t /*elements*/);
  bool key(json::string_t& key);
  bool end_object();
  bool start_array(std::size_t /*elements*/);
  bool end_array();

  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& /*error*/) {
    return false;
  }

  bool is_object() const { return is_object_; }
  bool items_not_array() const { return items_not_array_; }
  std::vector<PodInfo> TakePods() {
    pods_.shrink_to_fit();  // grown by doubling; it is kept until the next change
    return std::move(pods_);
  }

 private:
  struct Frame {
    Node node;
    Slot slot;  // an object's: set by each key; an array's: what its elements are
    bool init = false;
  };

  Slot CurrentSlot() const { return frames_.empty() ? Slot::kRoot : frames_.back().slot; }
  // Every scalar: at the root, the document is not an object; as "items", not an array.
  bool Scalar(bool is_null) {
    if (skip_depth_ != 0) return true;
    const Slot slot = CurrentSlot();
    if (slot == Slot::kItems && !is_null) items_not_array_ = true;
    return true;
  }
  void Push(Node node, Slot slot, bool init = false) { frames_.push_back({node, slot, init}); }
  Slot KeySlot(Node node, const std::string& key);
  void FinishPod();

  const PodListOptions& options_;
  std::vector<Frame> frames_;  // as deep as the kept paths (the document's depth is checked first)
  size_t skip_depth_ = 0;      // > 0 inside a value nothing is kept from
  bool is_object_ = false;
  bool items_not_array_ = false;
  std::vector<PodInfo> pods_;

  // The pod being read, and what is only settled at its end.
  PodInfo pod_;
  std::vector<std::string> pod_ips_;  // status.podIPs
  std::string pod_ip_;                // status.podIP
  std::vector<ContainerInfo> init_containers_;
  std::vector<ContainerInfo> containers_;
  std::string ip_;            // of the podIPs entry being read
  std::string container_id_;  // of the container status being read
  ContainerInfo container_;   // the container status being read
  std::string annotation_;    // the kept annotation whose value comes next
};

Slot PodListHandler::KeySlot(Node node, const std::string& key) {
  switch (node) {
    case Node::kDocument:
      if (key == "items") {
        pods_.clear();
        items_not_array_ = false;
        return Slot::kItems;
      }
      return Slot::kIgnored;
    case Node::kPod:
      if (key == "metadata") {
        pod_.uid.clear();
        pod_.ns.clear();
        pod_.name.clear();
        pod_.annotations.clear();
        return Slot::kMetadata;
      }
      if (key == "spec") {
        pod_.host_network = false;
        return Slot::kSpec;
      }
      if (key == "status") {
        pod_.qos_class.clear();
        pod_.phase.clear();
        pod_ips_.clear();
        pod_ip_.clear();
        init_containers_.clear();
        containers_.clear();
        return Slot::kStatus;
      }
      return Slot::kIgnored;
    case Node::kMetadata:
      if (key == "uid") {
        pod_.uid.clear();
        return Slot::kUid;
      }
      if (key == "namespace") {
        pod_.ns.clear();
        return Slot::kNamespace;
      }
      if (key == "name") {
        pod_.name.clear();
        return Slot::kName;
      }
      if (key == "annotations") {
        pod_.annotations.clear();
        return Slot::kAnnotations;
      }
      return Slot::kIgnored;
    case Node::kAnnotations: {
      // Erased first: a key given twice is the last value's, and gone when that is no string.
      if (auto it = pod_.annotations.find(key); it != pod_.annotations.end()) {
        pod_.annotations.erase(it);
      }
      if (!options_.KeepsAnnotation(key)) return Slot::kIgnored;
      annotation_.assign(key);
      return Slot::kAnnotation;
    }
    case Node::kSpec:
      if (key == "hostNetwork") {
        pod_.host_network = false;
        return Slot::kHostNetwork;
      }
      return Slot::kIgnored;
    case Node::kStatus:
      if (key == "qosClass") {
        pod_.qos_class.clear();
        return Slot::kQosClass;
      }
      if (key == "phase") {
        pod_.phase.clear();
        return Slot::kPhase;
      }
      if (key == "podIP") {
        pod_ip_.clear();
        return Slot::kPodIp;
      }
      if (key == "podIPs") {
        pod_ips_.clear();
        return Slot::kPodIps;
      }
      if (key == "initContainerStatuses") {
        init_containers_.clear();
        return Slot::kInitStatuses;
      }
      if (key == "containerStatuses") {
        containers_.clear();
        return Slot::kStatuses;
      }
      return Slot::kIgnored;
    case Node::kPodIp:
      if (key == "ip") {
        ip_.clear();
        return Slot::kIp;
      }
      return Slot::kIgnored;
    case Node::kContainer:
      if (key == "name") {
        container_.name.clear();
        return Slot::kContainerName;
      }
      if (key == "containerID") {
        container_id_.clear();
        return Slot::kContainerId;
      }
      return Slot::kIgnored;
    case Node::kItems:
    case Node::kPodIps:
    case Node::kStatuses:
      break;  // arrays have no keys
  }
  return Slot::kIgnored;
}

bool PodListHandler::string(json::string_t& value) {
  if (skip_depth_ != 0) return true;
  switch (CurrentSlot()) {
    case Slot::kItems:
      items_not_array_ = true;
      break;
    case Slot::kUid:
      pod_.uid = value;
      break;
    case Slot::kNamespace:
      pod_.ns = value;
      break;
    case Slot::kName:
      pod_.name = value;
      break;
    case Slot::kAnnotation:
      pod_.annotations.insert_or_assign(std::move(annotation_), value);
      annotation_.clear();
      break;
    case Slot::kQosClass:
      pod_.qos_class = value;
      break;
    case Slot::kPhase:
      pod_.phase = value;
      break;
    case Slot::kPodIp:
      pod_ip_ = value;
      break;
    case Slot::kIp:
      ip_ = value;
      break;
    case Slot::kContainerName:
      container_.name = value;
      break;
    case Slot::kContainerId:
      container_id_ = value;
      break;
    default:
      break;
  }
  return true;
}

bool PodListHandler::key(json::string_t& key) {
  if (skip_depth_ != 0) return true;
  frames_.back().slot = KeySlot(frames_.back().node, key);
  return true;
}

bool PodListHandler::start_object(std::size_t /*elements*/) {
  if (skip_depth_ != 0) {
    ++skip_depth_;
    return true;
  }
  switch (CurrentSlot()) {
    case Slot::kRoot:
      is_object_ = true;
      Push(Node::kDocument, Slot::kIgnored);
      return true;
    case Slot::kItems:
      items_not_array_ = true;
      break;
    case Slot::kPod:
      pod_ = PodInfo{};
      pod_ips_.clear();
      pod_ip_.clear();
      init_containers_.clear();
      containers_.clear();
      Push(Node::kPod, Slot::kIgnored);
      return true;
    case Slot::kMetadata:
      Push(Node::kMetadata, Slot::kIgnored);
      return true;
    case Slot::kAnnotations:
      Push(Node::kAnnotations, Slot::kIgnored);
      return true;
    case Slot::kSpec:
      Push(Node::kSpec, Slot::kIgnored);
      return true;
    case Slot::kStatus:
      Push(Node::kStatus, Slot::kIgnored);
      return true;
    case Slot::kPodIpEntry:
      ip_.clear();
      Push(Node::kPodIp, Slot::kIgnored);
      return true;
    case Slot::kContainer:
      container_ = ContainerInfo{};
      container_id_.clear();
      Push(Node::kContainer, Slot::kIgnored, frames_.back().init);
      return true;
    default:
      break;
  }
  skip_depth_ = 1;
  return true;
}

bool PodListHandler::end_object() {
  if (skip_depth_ != 0) {
    --skip_depth_;
    return true;
  }
  const Frame done = frames_.back();
  frames_.pop_back();
  switch (done.node) {
    case Node::kPod:
      FinishPod();
      break;
    case Node::kPodIp:
      if (!ip_.empty()) pod_ips_.push_back(std::move(ip_));
      ip_.clear();
      break;
    case Node::kContainer:
      container_.init = done.init;
      SplitContainerId(container_id_, &container_.runtime, &container_.id);
      (done.init ? init_containers_ : containers_).push_back(std::move(container_));
      container_ = ContainerInfo{};
      break;
    default:
      break;
  }
  return true;
}

bool PodListHandler::start_array(std::size_t /*elements*/) {
  if (skip_depth_ != 0) {
    ++skip_depth_;
    return true;
  }
  switch (CurrentSlot()) {
    case Slot::kItems:
      Push(Node::kItems, Slot::kPod);
      return true;
    case Slot::kPodIps:
      Push(Node::kPodIps, Slot::kPodIpEntry);
      return true;
    case Slot::kInitStatuses:
      Push(Node::kStatuses, Slot::kContainer, /*init=*/true);
      return true;
    case Slot::kStatuses:
      Push(Node::kStatuses, Slot::kContainer, /*init=*/false);
      return true;
    default:
      break;
  }
  skip_depth_ = 1;
  return true;
}

bool PodListHandler::end_array() {
  if (skip_depth_ != 0) {
    --skip_depth_;
    return true;
  }
  frames_.pop_back();
  return true;
}

void PodListHandler::FinishPod() {
  if (!pod_ips_.empty()) {
    pod_.ips = std::move(pod_ips_);
  } else if (!pod_ip_.empty()) {
    pod_.ips.push_back(std::move(pod_ip_));
  }
  pod_.containers = std::move(init_containers_);
  pod_.containers.insert(pod_.containers.end(), std::make_move_iterator(containers_.begin()),
                         std::make_move_iterator(containers_.end()));
  pods_.push_back(std::move(pod_));
  pod_ = PodInfo{};
  pod_ips_.clear();
  pod_ip_.clear();
  init_containers_.clear();
  containers_.clear();
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

Result<std::vector<PodInfo>> ParsePodList(const std::string& json_text, const std::string& source,
                                          const PodListOptions& options) {
  if (JsonTooDeep(json_text)) {
    return InvalidArgument("pod list from " + source + ": " + JsonTooDeepText());
  }
  PodListHandler handler(options);
  if (!json::sax_parse(json_text, &handler)) {
    return InvalidArgument("pod list from " + source + ": malformed JSON");
  }
  if (!handler.is_object()) {
    return InvalidArgument("pod list from " + source + ": not a JSON object");
  }
  if (handler.items_not_array()) {
    return InvalidArgument("pod list from " + source + ": \"items\" is not an array");
  }
  return handler.TakePods();
}

}  // namespace netqos::pods
