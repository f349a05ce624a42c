// TopologyFileSource: reads the node topology (NUMA nodes and NICs) from a JSON file given by
// --topology-file, for tests and for nodes where discovery is not wanted. Rewriting the file
// (write + rename, or close after write) delivers the new topology to Watch() subscribers.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/status.h"
#include "core/topology_source.h"
#include "os/inotify_watch.h"

namespace netqos::topology {

// The largest topology file read. A NIC's entry is about 200 bytes and a NUMA node's less;
// even a node with thousands of SR-IOV VFs listed stays under 1 MiB. A larger file is a mistake
// (the wrong path) and is refused before it is read.
inline constexpr size_t kMaxTopologyFileBytes = size_t{4} << 20;

// Parses the file format; errors name `origin` (the file path) and the offending field.
Result<core::Topology> ParseTopologyJson(const std::string& text, const std::string& origin,
                                         const std::string& default_netns_dir);

class TopologyFileSource final : public core::TopologySource {
 public:
  // default_netns_dir: where a NIC's namespace lives when the file names a netns but no path.
  static Result<std::unique_ptr<TopologyFileSource>> Create(std::string path,
                                                            std::string default_netns_dir);
  ~TopologyFileSource() override;

  // NotFound naming the file when it cannot be read; InvalidArgument naming it and the field,
  // or the limit when it is over kMaxTopologyFileBytes.
  Result<core::Topology> Read() override;
  Status Watch(std::function<void(core::Topology)> on_change) override;

 private:
  TopologyFileSource(std::string path, std::string default_netns_dir);
  void WatchLoop(std::function<void(core::Topology)> on_change);

  std::string path_;
  std::string default_netns_dir_;
  std::unique_ptr<os::InotifyWatch> watch_;
  std::thread thread_;
};

}  // namespace netqos::topology
