#include "checkpoint/allocation_json.h"

#include <cstdint>
#include <limits>
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
