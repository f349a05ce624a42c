// Which container's class a pod's routed traffic takes. A pod behind a CNI sends and receives in
// a network namespace of its own: at the NIC its packets have no socket netqos could trace to a
// cgroup, only the pod's address. Pure planning (PlanPodAddresses) and the diff that brings the
// address table to the plan (SyncPodAddresses).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "enforce/desired_state.h"
#include "enforce/pod_address_table.h"
#include "enforce/problem_log.h"
#include "pods/pod_list.h"

namespace netqos::enforce {

// "10.1.2.3" or "fd00::5" as a map key; nullopt when the text is not an IP address.
std::optional<PodAddress> ParsePodAddress(const std::string& text);
std::string PodAddressText(const PodAddress& address);

// The classified containers of each pod: pod uid -> container name -> its entry in `classes`.
using ClassEntryRef = const std::pair<const uint64_t, DesiredContainer>*;
using ClassesByPod = std::map<std::string, std::map<std::string, ClassEntryRef>>;
ClassesByPod GroupByPod(const std::map<uint64_t, DesiredContainer>& classes);

// The container of a pod whose class the pod's routed traffic takes: the one with a capped leaf,
// else the first by name. `leaves` counts the distinct leaves of the pod's containers (more than
// one: they share the namespace, so all but the chosen one's are not held on routed traffic).
struct RoutedContainer {
  ClassEntryRef chosen = nullptr;
  size_t leaves = 0;
};
RoutedContainer ChooseRoutedContainer(const std::map<std::string, ClassEntryRef>& containers);

struct PodAddressPlan {
  std::map<PodAddress, uint64_t> entries;  // address -> class map key (a container's cgroup id)
  // Things an operator should fix (a pod's, an address's).
  std::vector<Problem> problems;
};

// Each address of a pod that has its own network namespace (not hostNetwork, not finished)
// maps to one of its classified containers (`classes`, the desired class map): the one with a
// capped leaf, or the first by name. Containers of one pod share its namespace, so their routed
// traffic cannot be told apart: when several have leaves of their own, the first by name is
// used and a problem says so (a pod-level allocation gives them one leaf). An address claimed by
// two pods is left out and reported: neither pod would be held to its own cap.
PodAddressPlan PlanPodAddresses(const std::vector<pods::PodInfo>& pods,
                                const std::map<uint64_t, DesiredContainer>& classes);

struct PodAddressSyncReport {
  int set = 0;
  int cleared = 0;
  std::vector<Status> errors;
};

// Writes what differs between `current` (the table's content) and the plan, clears the rest.
PodAddressSyncReport SyncPodAddresses(PodAddressTable& table,
                                      const std::map<PodAddress, uint64_t>& current,
                                      const PodAddressPlan& plan);

}  // namespace netqos::enforce
