// netqosctl subcommands. Each returns the process exit code and writes the result (table or
// JSON) to `out`, diagnostics to `err`.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "ctl/connection.h"

namespace netqos::ctl {

// Flags shared by `hints` and `allocate`: what the kubelet would send.
struct RequestFlags {
  std::string pod_uid;
  std::string pod_namespace = "default";
  std::string pod_name;
  std::string container;
  std::string container_type = "MAIN";
  uint64_t container_index = 0;
  double mbps = 0;
  std::string qos;
  std::vector<std::string> annotations;  // k=v
  std::vector<std::string> labels;       // k=v
  std::string hint;                      // NUMA list, "" = no hint
  bool preferred = false;
  bool pod_level = false;  // GetPodTopologyHints / AllocateForPod
};

int CmdHints(const GlobalOptions& g, const RequestFlags& f, std::ostream& out, std::ostream& err);
int CmdAllocate(const GlobalOptions& g, const RequestFlags& f, std::ostream& out,
                std::ostream& err);
int CmdRemove(const GlobalOptions& g, const std::string& pod_uid, std::ostream& out,
              std::ostream& err);
int CmdTopologyAware(const GlobalOptions& g, const std::string& pod_uid,
                     const std::string& container, std::ostream& out, std::ostream& err);
int CmdOptions(const GlobalOptions& g, std::ostream& out, std::ostream& err);

int CmdAllocations(const GlobalOptions& g, std::ostream& out, std::ostream& err);
int CmdCapacity(const GlobalOptions& g, std::ostream& out, std::ostream& err);
int CmdTopology(const GlobalOptions& g, std::ostream& out, std::ostream& err);
int CmdPluginInfo(const GlobalOptions& g, std::ostream& out, std::ostream& err);
// The tenant policy in force (GetTenantPolicy): its source, the file's error if any, and every
// rule per namespace.
int CmdTenantPolicy(const GlobalOptions& g, std::ostream& out, std::ostream& err);
int CmdNotifyRegistered(const GlobalOptions& g, const std::optional<std::string>& error,
                        std::ostream& out, std::ostream& err);

// Enforcement: the daemon's view joined with the pinned maps, read directly (bpf/pinned_maps.h).
// `pin_dir` is --bpf-pin-dir; "" = where the daemon pins, else /sys/fs/bpf/netqos.
struct TopFlags {
  double interval_seconds = 1;
  int64_t iterations = 0;  // 0 = until interrupted
  bool no_clear = false;   // keep scrolling instead of redrawing (a terminal is redrawn)
  bool sparkline = false;  // a TX TREND column: each container's recent send rate
};

int CmdStatus(const GlobalOptions& g, const std::string& pin_dir, std::ostream& out,
              std::ostream& err);
int CmdClasses(const GlobalOptions& g, const std::string& pin_dir, std::ostream& out,
               std::ostream& err);
int CmdTop(const GlobalOptions& g, const std::string& pin_dir, const TopFlags& flags,
           std::ostream& out, std::ostream& err);
// target: a cgroup directory (absolute, or relative to the cgroup2 mount) or a cgroup id. Exits 1,
// saying what it tried, when nothing is known of it: no such directory, no pinned entry or
// counters, no record in the daemon.
int CmdCgroup(const GlobalOptions& g, const std::string& pin_dir, const std::string& target,
              std::ostream& out, std::ostream& err);
// Prints the cgroup2 mount point netqos uses (the daemon detects it the same way).
int CmdCgroupMount(const GlobalOptions& g, std::ostream& out, std::ostream& err);

}  // namespace netqos::ctl
