#include "core/state_size.h"

namespace netqos::core {

size_t JsonStringBytes(std::string_view s) {
  size_t n = 2;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20) {
      n += 6;
    } else if (c == '"' || c == '\\') {
      n += 2;
    } else if (c > 0x7f) {
      n += 3;
    } else {
      n += 1;
    }
  }
  return n;
}

size_t MetadataBytes(const StringMap& labels, const StringMap& annotations) {
  size_t n = 0;
  for (const StringMap* map : {&labels, &annotations}) {
    for (const auto& [k, v] : *map) n += JsonStringBytes(k) + JsonStringBytes(v) + 2;
  }
  return n;
}

size_t EntryBytes(const AllocationInfo& info) {
  size_t n = kEntryFixedBytes + MetadataBytes(info.labels, info.annotations);
  // The pod uid and container name are written as fields and again as the keys the entry sits
  // under; the identifier joins the netns and the interface name.
  for (std::string_view s :
       {std::string_view(info.pod_uid), std::string_view(info.container_name)}) {
    n += 2 * JsonStringBytes(s);
  }
  for (std::string_view s : {std::string_view(info.ns_name), std::string_view(info.if_name)}) {
    n += 2 * JsonStringBytes(s);
  }
  for (const std::string* s :
       {&info.pod_namespace, &info.pod_name, &info.container_type, &info.pod_role, &info.pod_type,
        &info.qos_level, &info.net_class_id}) {
    n += JsonStringBytes(*s);
  }
  // The NUMA list: at most "N," per node, each id at most 20 digits.
  n += info.numa_nodes.size() * 22;
  return n;
}

}  // namespace netqos::core
