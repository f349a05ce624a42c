#include "app/topology_setup.h"

#include "topology/topology_file_source.h"

namespace netqos::app {
namespace {

// --nic-allow, --nic-deny and --nic-speed-override were parsed when the flags were read.
topology::KernelTopologySource::Options KernelOptions(const DaemonConfig& c) {
  topology::KernelTopologySource::Options opts;
  opts.multi_ns = c.machine_net_multi_ns;
  opts.netns_dirs = c.NetnsDirs();
  opts.selection = c.nic_filter;
  return opts;
}

}  // namespace

Result<SourceChoice> MakeTopologySource(const DaemonConfig& c) {
  SourceChoice out;
  if (!c.topology_file.empty()) {
    auto file = topology::TopologyFileSource::Create(c.topology_file, c.NetnsDir());
    if (!file.ok()) return file.status();
    out.source = std::move(*file);
    out.description = "file " + c.topology_file;
    return out;
  }
  auto kernel = topology::KernelTopologySource::Create(KernelOptions(c));
  if (!kernel.ok()) return kernel.status();
  out.kernel = kernel->get();
  out.source = std::move(*kernel);
  out.description = c.machine_net_multi_ns ? "kernel (host and named network namespaces)"
                                           : "kernel (host network namespace)";
  return out;
}

}  // namespace netqos::app
