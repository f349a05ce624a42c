#include "core/allocation_annotations.h"

#include <set>
#include <string>

namespace netqos::core {
namespace {

// Sorted and de-duplicated, as upstream's sets.String.List() returns them.
std::string JoinSorted(const std::vector<std::string>& ips) {
  std::set<std::string> unique(ips.begin(), ips.end());
  std::string out;
  for (const std::string& ip : unique) {
    if (!out.empty()) out += ',';
    out += ip;
  }
  return out;
}

}  // namespace

StringMap AllocationAnnotations(const AllocationAnnotationKeys& keys, const Nic* nic,
                                std::string_view if_name, uint32_t net_class_id,
                                std::optional<uint32_t> bandwidth_mbps) {
  StringMap ann;
  ann[keys.ipv4] = nic != nullptr ? JoinSorted(nic->ipv4) : "";
  ann[keys.ipv6] = nic != nullptr ? JoinSorted(nic->ipv6) : "";
  ann[keys.nic_name] = nic != nullptr ? nic->id.name : std::string(if_name);
  ann[keys.net_class_id] = std::to_string(net_class_id);
  if (bandwidth_mbps) ann[keys.bandwidth] = std::to_string(*bandwidth_mbps);
  if (nic != nullptr && !nic->netns_path.empty()) ann[keys.netns_path] = nic->netns_path;
  return ann;
}

}  // namespace netqos::core
