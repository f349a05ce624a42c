// KernelTopologySource: the node's NUMA layout from sysfs and its NICs from rtnetlink + sysfs, in
// the host network namespace and (with multi_ns) in every named namespace under the netns dirs.
// Watch() follows link/address changes in all those namespaces and namespaces coming and going.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "core/topology_source.h"
#include "core/types.h"
#include "os/inotify_watch.h"
#include "topology/nic_classifier.h"

namespace netqos::topology {

// One link seen during discovery, counted as a NIC or not, and why.
struct LinkReport {
  std::string netns;  // "" for the host
  std::string name;
  int ifindex = 0;
  bool counted = false;
  std::string why;
  core::Nic nic;  // filled for every link; only counted ones enter the topology
};

struct DiscoveryReport {
  core::Topology topology;
  std::vector<LinkReport> links;
  std::vector<std::string> namespace_errors;  // one line per skipped namespace
};

// Field-by-field equality of two topologies (order matters: it is the NIC order).
bool SameTopology(const core::Topology& a, const core::Topology& b);

class KernelTopologySource final : public core::TopologySource {
 public:
  struct Options {
    std::string sysfs_root = "/sys";  // host sysfs (NUMA nodes, host links)
    bool multi_ns = false;
    // Directories of namespace bind mounts; deduplicated by realpath, missing ones ignored.
    std::vector<std::string> netns_dirs = {"/var/run/netns", "/run/netns"};
    NicSelection selection;
    std::chrono::milliseconds debounce{100};
    std::chrono::seconds resync{30};
  };

  // Runs one discovery to fail fast (a host-namespace failure is an error).
  static Result<std::unique_ptr<KernelTopologySource>> Create(Options options);
  ~KernelTopologySource() override;

  Result<DiscoveryReport> Discover();
  Result<core::Topology> Read() override;
  Status Watch(std::function<void(core::Topology)> on_change) override;

  // A named namespace: name (file name) and absolute path of its bind mount.
  struct Namespace {
    std::string name;
    std::string path;
  };
  // Host first is implicit; these are the named ones, sorted by name, duplicates dropped.
  std::vector<Namespace> ListNamespaces() const;

 private:
  class Watcher;  // the watch thread's state and phases (kernel_topology_source.cc)
  explicit KernelTopologySource(Options options);
  void RecordNamespaceErrors(const std::vector<std::string>& errors);

  Options options_;
  std::vector<std::string> dirs_;  // netns_dirs deduplicated by realpath (missing kept by name)

  std::mutex mu_;  // guards the members below
  std::set<std::string> logged_errors_;
  std::optional<core::Topology> last_read_;

  std::unique_ptr<os::InotifyWatch> watch_;  // set by Watch()
  std::thread thread_;
};

}  // namespace netqos::topology
