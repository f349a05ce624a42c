// TopologyFileSource: reads the node topology (NUMA nodes and NICs) from a JSON file given by
// --topology-file, for tests and for nodes where discovery is not wanted. Rewriting the file
// (write + rename, or close after write) delivers the new topology to Watch() subscribers.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/status.h"
#include "core/topology_source.h"

namespace netqos::topology {

// Parses the file format; errors name `origin` (the file path) and the offending field.
Result<core::Topology> ParseTopologyJson(const std::string& text, const std::string& origin,
                                         const std::string& default_netns_dir);

class TopologyFileSource final : public core::TopologySource {
 public:
  // default_netns_dir: where a NIC's namespace lives when the file names a netns but no path.
  static Result<std::unique_ptr<TopologyFileSource>> Create(std::string path,
                                                            std::string default_netns_dir);
  ~TopologyFileSource() override;

  Result<core::Topology> Read() override;
  Status Watch(std::function<void(core::Topology)> on_change) override;

 private:
  TopologyFileSource(std::string path, std::string default_netns_dir);
  void WatchLoop(std::function<void(core::Topology)> on_change);

  std::string path_;
  std::string default_netns_dir_;
  int inotify_fd_ = -1;
  int stop_fd_ = -1;
  std::thread thread_;
};

}  // namespace netqos::topology
