// `netqosctl cgroup <path|id>`: what applies to one cgroup and why. The command gathers the facts
// (the pinned class entry and counters, the daemon's record); Explain turns them into sentences.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "bpf/pinned_maps.h"
#include "netqos/admin/v1/admin.pb.h"

namespace netqos::ctl {

struct CgroupFacts {
  std::string path;  // "" when an id was given and no directory with it was found
  uint64_t cgroup_id = 0;
  std::string pin_dir;
  bool pinned_read = false;
  std::string pinned_error;  // why not read, with what to do
  std::optional<netqos_class> entry;
  std::optional<TrafficCounters> counters;
  bool daemon_reached = false;
  std::string daemon_error;
  std::string mode;                                           // the daemon's enforcement mode
  std::string mode_error;                                     // why "disabled"
  std::optional<::netqos::admin::v1::ContainerClass> daemon;  // its record of this cgroup
};

struct Explanation {
  bool classified = false;  // the kernel has a class entry for it
  std::vector<std::string> reasons;
};

// A container cgroup as the kubelet's runtimes name them: a "<hex id>" (cgroupfs) or
// "<runtime>-<hex id>.scope" (systemd) directory inside a pod's "pod<uid>" / "*-pod<uid>.slice".
bool LooksLikeContainerCgroup(const std::string& path);

Explanation Explain(const CgroupFacts& facts);

nlohmann::json CgroupJson(const CgroupFacts& facts, const Explanation& why);
void PrintCgroup(const CgroupFacts& facts, const Explanation& why, std::ostream& out);

}  // namespace netqos::ctl
