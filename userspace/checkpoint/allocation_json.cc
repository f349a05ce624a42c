#include "checkpoint/allocation_json.h"

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/constants.h"
#include "core/numa_set.h"

namespace netqos::checkpoint {

using nlohmann::json;

namespace {

Status TypeError(const std::string& field, const char* want, const json& value) {
  return InvalidArgument(field + ": expected " + want + ", got " + value.type_name());
}

// Linux list format ("0-1,3"); Go's "nil" (an uninitialised CPUSet in a Katalyst checkpoint)
// is the empty set.
Result<core::NumaSet> ParseNumaField(std::string_view text, const std::string& field) {
  const auto first = text.find_first_not_of(" \t\r\n");
  text = first == std::string_view::npos
             ? std::string_view{}
             : text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
  if (text == "nil") return core::NumaSet{};
  auto nodes = core::ParseNumaList(text);
  if (!nodes.ok()) return nodes.status().Wrap(field);
  return nodes;
}

// Field readers: absent or null leaves the default, as Go's encoding/json does.
const json* Member(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

Status ReadString(const json& obj, const char* key, const std::string& where, std::string* out) {
  const json* v = Member(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_string()) return TypeError(where + "." + key, "a string", *v);
  *out = v->get<std::string>();
  return Status::Ok();
}

template <typename T>
Status ReadUnsigned(const json& obj, const char* key, const std::string& where, T* out) {
  const json* v = Member(obj, key);
  if (v == nullptr) return Status::Ok();
  // Go rejects negative numbers and fractions for unsigned fields; so do we.
  if (!v->is_number_unsigned() && !(v->is_number_integer() && v->get<int64_t>() >= 0)) {
    return TypeError(where + "." + key, "an unsigned integer", *v);
  }
  uint64_t raw = v->get<uint64_t>();
  if (raw > std::numeric_limits<T>::max()) {
    return InvalidArgument(where + "." + key + ": " + std::to_string(raw) + " is out of range");
  }
  *out = static_cast<T>(raw);
  return Status::Ok();
}

Status ReadStringMap(const json& obj, const char* key, const std::string& where,
                     core::StringMap* out) {
  const json* v = Member(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_object()) return TypeError(where + "." + key, "an object", *v);
  for (const auto& [k, val] : v->items()) {
    if (!val.is_string()) return TypeError(where + "." + key + "." + k, "a string", val);
    (*out)[k] = val.get<std::string>();
  }
  return Status::Ok();
}

void PutIfNotEmpty(json& j, const char* key, const std::string& value) {
  if (!value.empty()) j[key] = value;
}

}  // namespace

json AllocationToJson(const core::AllocationInfo& info) {
  json j = json::object();
  PutIfNotEmpty(j, "pod_uid", info.pod_uid);
  PutIfNotEmpty(j, "pod_namespace", info.pod_namespace);
  PutIfNotEmpty(j, "pod_name", info.pod_name);
  PutIfNotEmpty(j, "container_name", info.container_name);
  PutIfNotEmpty(j, "container_type", info.container_type);
  if (info.container_index != 0) j["container_index"] = info.container_index;
  PutIfNotEmpty(j, "pod_role", info.pod_role);
  PutIfNotEmpty(j, "pod_type", info.pod_type);
  j["labels"] = info.labels;
  j["annotations"] = info.annotations;
  j["qosLevel"] = info.qos_level;
  j["egress"] = info.egress;
  j["ingress"] = info.ingress;
  j["identifier"] = info.nic().Identifier();
  j["ns_name"] = info.ns_name;
  j["if_name"] = info.if_name;
  j["numa_node"] = core::FormatNumaList(info.numa_nodes);
  j["net_class_id"] = info.net_class_id;
  return j;
}

Result<core::AllocationInfo> AllocationFromJson(const json& j, const std::string& where) {
  if (!j.is_object()) return TypeError(where, "an object", j);
  core::AllocationInfo info;
  NETQOS_RETURN_IF_ERROR(ReadString(j, "pod_uid", where, &info.pod_uid));
  NETQOS_RETURN_IF_ERROR(ReadString(j, "pod_namespace", where, &info.pod_namespace));
  NETQOS_RETURN_IF_ERROR(ReadString(j, "pod_name", where, &info.pod_name));
  NETQOS_RETURN_IF_ERROR(ReadString(j, "container_name", where, &info.container_name));
  NETQOS_RETURN_IF_ERROR(ReadString(j, "container_type", where, &info.container_type));
  NETQOS_RETURN_IF_ERROR(ReadUnsigned(j, "container_index", where, &info.container_index));
  NETQOS_RETURN_IF_ERROR(ReadString(j, "pod_role", where, &info.pod_role));
  NETQOS_RETURN_IF_ERROR(ReadString(j, "pod_type", where, &info.pod_type));
  NETQOS_RETURN_IF_ERROR(ReadUnsigned(j, "egress", where, &info.egress));
  NETQOS_RETURN_IF_ERROR(ReadUnsigned(j, "ingress", where, &info.ingress));
  NETQOS_RETURN_IF_ERROR(ReadString(j, "if_name", where, &info.if_name));
  NETQOS_RETURN_IF_ERROR(ReadString(j, "ns_name", where, &info.ns_name));
  std::string numa;
  NETQOS_RETURN_IF_ERROR(ReadString(j, "numa_node", where, &numa));
  NETQOS_ASSIGN_OR_RETURN(info.numa_nodes, ParseNumaField(numa, where + ".numa_node"));
  NETQOS_RETURN_IF_ERROR(ReadStringMap(j, "labels", where, &info.labels));
  NETQOS_RETURN_IF_ERROR(ReadStringMap(j, "annotations", where, &info.annotations));
  NETQOS_RETURN_IF_ERROR(ReadString(j, "qosLevel", where, &info.qos_level));
  // Katalyst v0.5.3 stores no level: the request's (filtered) annotations carry it, and without
  // it enforcement cannot place the container.
  if (info.qos_level.empty()) {
    auto level = info.annotations.find(core::kQosLevelKey);
    if (level != info.annotations.end()) info.qos_level = level->second;
  }
  NETQOS_RETURN_IF_ERROR(ReadString(j, "net_class_id", where, &info.net_class_id));
  // "identifier" is derived from (ns_name, if_name); "ramp_up" and "owner_pool_name" are unused.
  return info;
}

json PodEntriesToJson(const core::PodEntries& entries) {
  json j = json::object();
  for (const auto& [uid, containers] : entries) {
    json& pod = j[uid] = json::object();
    for (const auto& [name, info] : containers) pod[name] = AllocationToJson(info);
  }
  return j;
}

Result<core::PodEntries> PodEntriesFromJson(const json& j, const std::string& where) {
  core::PodEntries entries;
  if (j.is_null()) return entries;
  if (!j.is_object()) return TypeError(where, "an object", j);
  for (const auto& [uid, containers] : j.items()) {
    const std::string pod_where = where + "." + uid;
    if (containers.is_null()) continue;
    if (!containers.is_object()) return TypeError(pod_where, "an object", containers);
    auto& pod = entries[uid];
    for (const auto& [name, alloc] : containers.items()) {
      // A Go nil *AllocationInfo is written as null; it carries nothing, so it is dropped.
      if (alloc.is_null()) continue;
      NETQOS_ASSIGN_OR_RETURN(pod[name], AllocationFromJson(alloc, pod_where + "." + name));
    }
    if (pod.empty()) entries.erase(uid);
  }
  return entries;
}

namespace {

// The SAX events of a pod_entries member, straight into PodEntries: {uid: {container: {field:
// value, "labels": {..}, "annotations": {..}}}}. Follows AllocationFromJson and
// PodEntriesFromJson (null is absent, a null pod or entry is dropped, an empty pod too, unknown
// scalar members are ignored); gives up (false) wherever they would report an error and on
// anything they would accept that AllocationToJson never writes (an unknown object or array).
class OwnPodEntriesReader {
 public:
  OwnPodEntriesReader(core::PodEntries* entries,
                      std::vector<std::pair<std::string, std::string>>* without_netns)
      : entries_(entries), without_netns_(without_netns) {}

  bool null() {
    if (depth_ == 1) return true;  // a null pod: dropped
    if (depth_ == 2) {             // a null entry: dropped, and it names no namespace
      without_netns_->emplace_back(uid_, name_);
      return true;
    }
    return depth_ == 3;  // a null field is absent
  }
  bool boolean(bool) { return depth_ == 3 && field_ == Field::kUnknown; }
  bool number_integer(json::number_integer_t) {
    // Only negative numbers come here: no unsigned field takes them.
    return depth_ == 3 && field_ == Field::kUnknown;
  }
  bool number_unsigned(json::number_unsigned_t v) {
    if (depth_ != 3) return false;
    switch (field_) {
      case Field::kContainerIndex:
        info_.container_index = v;
        return true;
      case Field::kEgress:
        return Narrow(v, &info_.egress);
      case Field::kIngress:
        return Narrow(v, &info_.ingress);
      case Field::kUnknown:
        return true;
      default:
        return false;
    }
  }
  bool number_float(json::number_float_t, const json::string_t&) {
    return depth_ == 3 && field_ == Field::kUnknown;
  }
  bool string(json::string_t& v) {
    if (depth_ == 4) {
      (*map_)[label_] = std::move(v);
      return true;
    }
    if (depth_ != 3) return false;
    std::string* out = StringField();
    if (out != nullptr) *out = std::move(v);
    return out != nullptr || field_ == Field::kUnknown;
  }
  bool binary(json::binary_t&) { return false; }
  bool start_object(std::size_t) {
    switch (depth_) {
      case 0:
        break;
      case 1:
        pod_ = &(*entries_)[uid_];
        break;
      case 2:
        info_ = core::AllocationInfo{};
        numa_.clear();
        has_netns_ = false;
        break;
      case 3:
        if (field_ == Field::kLabels) {
          map_ = &info_.labels;
        } else if (field_ == Field::kAnnotations) {
          map_ = &info_.annotations;
        } else {
          return false;
        }
        break;
      default:
        return false;
    }
    ++depth_;
    return true;
  }
  bool key(json::string_t& k) {
    switch (depth_) {
      case 1:
        uid_ = std::move(k);
        return true;
      case 2:
        name_ = std::move(k);
        return true;
      case 3:
        field_ = FieldOf(k);
        has_netns_ = has_netns_ || field_ == Field::kNsName;
        return true;
      case 4:
        label_ = std::move(k);
        return true;
      default:
        return false;
    }
  }
  bool end_object() {
    --depth_;
    if (depth_ == 1 && pod_->empty()) entries_->erase(uid_);
    if (depth_ == 3) field_ = Field::kUnknown;  // the map is done; the next key says what follows
    if (depth_ == 2) return FinishEntry();
    return true;
  }
  bool start_array(std::size_t) { return false; }
  bool end_array() { return false; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    return false;
  }

 private:
  enum class Field {
    kUnknown,
    kPodUid,
    kPodNamespace,
    kPodName,
    kContainerName,
    kContainerType,
    kContainerIndex,
    kPodRole,
    kPodType,
    kEgress,
    kIngress,
    kIfName,
    kNsName,
    kNumaNode,
    kLabels,
    kAnnotations,
    kQosLevel,
    kNetClassId,
  };

  static Field FieldOf(std::string_view k) {
    static const std::pair<std::string_view, Field> kFields[] = {
        {"pod_uid", Field::kPodUid},
        {"pod_namespace", Field::kPodNamespace},
        {"pod_name", Field::kPodName},
        {"container_name", Field::kContainerName},
        {"container_type", Field::kContainerType},
        {"container_index", Field::kContainerIndex},
        {"pod_role", Field::kPodRole},
        {"pod_type", Field::kPodType},
        {"egress", Field::kEgress},
        {"ingress", Field::kIngress},
        {"if_name", Field::kIfName},
        {"ns_name", Field::kNsName},
        {"numa_node", Field::kNumaNode},
        {"labels", Field::kLabels},
        {"annotations", Field::kAnnotations},
        {"qosLevel", Field::kQosLevel},
        {"net_class_id", Field::kNetClassId},
    };
    for (const auto& [name, field] : kFields) {
      if (k == name) return field;
    }
    return Field::kUnknown;
  }

  std::string* StringField() {
    switch (field_) {
      case Field::kPodUid:
        return &info_.pod_uid;
      case Field::kPodNamespace:
        return &info_.pod_namespace;
      case Field::kPodName:
        return &info_.pod_name;
      case Field::kContainerName:
        return &info_.container_name;
      case Field::kContainerType:
        return &info_.container_type;
      case Field::kPodRole:
        return &info_.pod_role;
      case Field::kPodType:
        return &info_.pod_type;
      case Field::kIfName:
        return &info_.if_name;
      case Field::kNsName:
        return &info_.ns_name;
      case Field::kNumaNode:
        return &numa_;
      case Field::kQosLevel:
        return &info_.qos_level;
      case Field::kNetClassId:
        return &info_.net_class_id;
      default:
        return nullptr;
    }
  }

  static bool Narrow(uint64_t v, uint32_t* out) {
    if (v > std::numeric_limits<uint32_t>::max()) return false;
    *out = static_cast<uint32_t>(v);
    return true;
  }

  // As AllocationFromJson finishes an entry.
  bool FinishEntry() {
    auto numa = ParseNumaField(numa_, "numa_node");
    if (!numa.ok()) return false;
    info_.numa_nodes = std::move(numa).value();
    if (info_.qos_level.empty()) {
      auto level = info_.annotations.find(core::kQosLevelKey);
      if (level != info_.annotations.end()) info_.qos_level = level->second;
    }
    if (!has_netns_) without_netns_->emplace_back(uid_, name_);
    (*pod_)[name_] = std::move(info_);
    return true;
  }

  core::PodEntries* entries_;
  std::vector<std::pair<std::string, std::string>>* without_netns_;
  int depth_ = 0;  // objects open: 1 in pod_entries, 2 in a pod, 3 in an entry, 4 in its map
  std::string uid_;
  std::string name_;
  std::string label_;
  Field field_ = Field::kUnknown;
  core::ContainerEntries* pod_ = nullptr;
  core::AllocationInfo info_;
  std::string numa_;
  bool has_netns_ = false;
  core::StringMap* map_ = nullptr;
};

}  // namespace

bool PodEntriesFromOwnText(std::string_view text, core::PodEntries* entries,
                           std::vector<std::pair<std::string, std::string>>* without_netns) {
  entries->clear();
  without_netns->clear();
  OwnPodEntriesReader reader(entries, without_netns);
  return json::sax_parse(text.data(), text.data() + text.size(), &reader);
}

json BandwidthToJson(const core::BandwidthInfo& info) {
  return json{{"Capacity", info.capacity},       {"SysReservation", info.sys_reservation},
              {"Reservation", info.reservation}, {"Allocatable", info.allocatable},
              {"Allocated", info.allocated},     {"Free", info.free}};
}

Result<core::BandwidthInfo> BandwidthFromJson(const json& j, const std::string& where) {
  core::BandwidthInfo info;
  if (j.is_null()) return info;
  if (!j.is_object()) return TypeError(where, "an object", j);
  NETQOS_RETURN_IF_ERROR(ReadUnsigned(j, "Capacity", where, &info.capacity));
  NETQOS_RETURN_IF_ERROR(ReadUnsigned(j, "SysReservation", where, &info.sys_reservation));
  NETQOS_RETURN_IF_ERROR(ReadUnsigned(j, "Reservation", where, &info.reservation));
  NETQOS_RETURN_IF_ERROR(ReadUnsigned(j, "Allocatable", where, &info.allocatable));
  NETQOS_RETURN_IF_ERROR(ReadUnsigned(j, "Allocated", where, &info.allocated));
  NETQOS_RETURN_IF_ERROR(ReadUnsigned(j, "Free", where, &info.free));
  return info;
}

json MachineStateToJson(const core::MachineState& state, const core::PodEntries& entries) {
  json j = json::object();
  for (const auto& [nic, nic_state] : state) {
    core::PodEntries on_nic;
    for (const auto& [uid, containers] : entries) {
      for (const auto& [name, info] : containers) {
        if (info.nic() == nic) on_nic[uid][name] = info;
      }
    }
    j[nic.Identifier()] = json{{"egress_state", BandwidthToJson(nic_state.egress)},
                               {"ingress_state", BandwidthToJson(nic_state.ingress)},
                               {"pod_entries", PodEntriesToJson(on_nic)}};
  }
  return j;
}

Status ValidateMachineStateJson(const json& j, const std::string& where) {
  if (j.is_null()) return Status::Ok();
  if (!j.is_object()) return TypeError(where, "an object", j);
  for (const auto& [id, nic] : j.items()) {
    const std::string nic_where = where + "." + id;
    if (nic.is_null()) continue;
    if (!nic.is_object()) return TypeError(nic_where, "an object", nic);
    if (const json* e = Member(nic, "egress_state")) {
      NETQOS_RETURN_IF_ERROR(BandwidthFromJson(*e, nic_where + ".egress_state").status());
    }
    if (const json* i = Member(nic, "ingress_state")) {
      NETQOS_RETURN_IF_ERROR(BandwidthFromJson(*i, nic_where + ".ingress_state").status());
    }
    if (const json* p = Member(nic, "pod_entries")) {
      NETQOS_RETURN_IF_ERROR(PodEntriesFromJson(*p, nic_where + ".pod_entries").status());
    }
  }
  return Status::Ok();
}

}  // namespace netqos::checkpoint
