#include "app/topology_setup.h"

#include "topology/nic_classifier.h"
#include "topology/topology_file_source.h"

namespace netqos::app {
namespace {

Result<topology::KernelTopologySource::Options> KernelOptions(const DaemonConfig& c) {
  topology::KernelTopologySource::Options opts;
  opts.multi_ns = c.machine_net_multi_ns;
  opts.netns_dirs = c.NetnsDirs();
  auto sel = topology::ParseNicSelection(c.nic_allow, c.nic_deny, c.nic_speed_overrides);
  if (!sel.ok()) return sel.status();
  opts.selection = std::move(*sel);
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
  auto opts = KernelOptions(c);
  if (!opts.ok()) return opts.status();
  auto kernel = topology::KernelTopologySource::Create(std::move(*opts));
  if (!kernel.ok()) return kernel.status();
  out.kernel = kernel->get();
  out.source = std::move(*kernel);
  out.description = c.machine_net_multi_ns ? "kernel (host and named network namespaces)"
                                           : "kernel (host network namespace)";
  return out;
}

}  // namespace netqos::app
