#include "enforce/pod_addresses.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <set>

namespace netqos::enforce {

std::optional<PodAddress> ParsePodAddress(const std::string& text) {
  PodAddress a{};
  in_addr v4{};
  if (::inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    a[10] = 0xff;
    a[11] = 0xff;
    std::memcpy(a.data() + 12, &v4, sizeof(v4));
    return a;
  }
  in6_addr v6{};
  if (::inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
    std::memcpy(a.data(), &v6, sizeof(v6));
    return a;
  }
  return std::nullopt;
}

std::string PodAddressText(const PodAddress& address) {
  char buf[INET6_ADDRSTRLEN] = {};
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(address.data(), kMapped, sizeof(kMapped)) == 0) {
    ::inet_ntop(AF_INET, address.data() + 12, buf, sizeof(buf));
  } else {
    ::inet_ntop(AF_INET6, address.data(), buf, sizeof(buf));
  }
  return buf;
}

ClassesByPod GroupByPod(const std::map<uint64_t, DesiredContainer>& classes) {
  ClassesByPod by_pod;
  for (const auto& entry : classes)
    by_pod[entry.second.pod_uid()][entry.second.container_name] = &entry;
  return by_pod;
}

RoutedContainer ChooseRoutedContainer(const std::map<std::string, ClassEntryRef>& containers) {
  RoutedContainer r;
  std::set<uint64_t> leaves;
  for (const auto& [container, entry] : containers) {
    if (entry->second.leaf_key) {
      leaves.insert(*entry->second.leaf_key);
      if (r.chosen == nullptr || !r.chosen->second.leaf_key) r.chosen = entry;
    } else if (r.chosen == nullptr) {
      r.chosen = entry;
    }
  }
  r.leaves = leaves.size();
  return r;
}

PodAddressPlan PlanPodAddresses(const std::vector<pods::PodInfo>& pods,
                                const std::map<uint64_t, DesiredContainer>& classes) {
  const ClassesByPod by_pod = GroupByPod(classes);
  PodAddressPlan plan;
  std::map<PodAddress, std::string> owner;  // address -> "<ns>/<name>" of the pod holding it
  std::set<PodAddress> contested;
  for (const auto& pod : pods) {
    if (pod.host_network || pod.ips.empty()) continue;
    if (pod.phase == "Succeeded" || pod.phase == "Failed") continue;  // its address may be reused
    auto it = by_pod.find(pod.uid);
    if (it == by_pod.end()) continue;
    const std::string name = pod.ns + "/" + pod.name;
    const RoutedContainer routed = ChooseRoutedContainer(it->second);
    const ClassEntryRef chosen = routed.chosen;
    if (routed.leaves > 1) {
      plan.problems.push_back(
          {ProblemKind::kPod, name,
           name + ": " + std::to_string(routed.leaves) +
               " containers have leaves of their own but share the pod's network namespace; its "
               "routed traffic is held to container " +
               chosen->second.container_name + "'s (a pod-level allocation gives them one)"});
    }
    for (const auto& text : pod.ips) {
      const auto address = ParsePodAddress(text);
      if (!address) {
        plan.problems.push_back(
            {ProblemKind::kPod, name,
             name + ": status.podIPs entry \"" + text + "\" is not an IP address; ignored"});
        continue;
      }
      auto [o, fresh] = owner.emplace(*address, name);
      if (!fresh && o->second != name) {
        contested.insert(*address);
        plan.problems.push_back({ProblemKind::kAddress, text,
                                 "pods " + o->second + " and " + name + " both list address " +
                                     text + "; its routed traffic is not classified"});
        continue;
      }
      plan.entries[*address] = chosen->first;
    }
  }
  for (const auto& a : contested) plan.entries.erase(a);
  return plan;
}

PodAddressSyncReport SyncPodAddresses(PodAddressTable& table,
                                      const std::map<PodAddress, uint64_t>& current,
                                      const PodAddressPlan& plan) {
  PodAddressSyncReport r;
  for (const auto& [address, cgroup_id] : plan.entries) {
    auto cur = current.find(address);
    if (cur != current.end() && cur->second == cgroup_id) continue;
    if (Status st = table.Set(address, cgroup_id); st.ok()) {
      ++r.set;
    } else {
      r.errors.push_back(st.Wrap("pod address " + PodAddressText(address)));
    }
  }
  for (const auto& [address, cgroup_id] : current) {
    if (plan.entries.count(address) != 0) continue;
    if (Status st = table.Clear(address); st.ok()) {
      ++r.cleared;
    } else {
      r.errors.push_back(st.Wrap("pod address " + PodAddressText(address)));
    }
  }
  return r;
}

}  // namespace netqos::enforce
