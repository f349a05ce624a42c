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
int CmdNotifyRegistered(const GlobalOptions& g, const std::optional<std::string>& error,
                        std::ostream& out, std::ostream& err);

}  // namespace netqos::ctl
