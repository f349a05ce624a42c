// netqosd --print-topology: one discovery with the daemon's flags, printed like
// `netqosctl topology`, plus the links that were not counted as NICs and why.
#include <iostream>
#include <optional>

#include "app/allocatable_namespaces.h"
#include "app/daemon.h"
#include "app/exit_codes.h"
#include "app/logging.h"
#include "app/topology_setup.h"
#include "core/policy.h"
#include "grpc/admin_service.h"
#include "render/topology_view.h"

namespace netqos::app {
namespace {

int FailPrint(const Status& st) {
  std::cerr << "netqosd: " << st.message() << "\n";
  return kExitFailure;
}

}  // namespace

int PrintTopology(const DaemonConfig& config) {
  SetupLogging(LogLevel::kWarn);
  auto choice = MakeTopologySource(config);
  if (!choice.ok()) return FailPrint(choice.status());
  std::optional<topology::DiscoveryReport> report;
  core::Topology topo;
  if (choice->kernel != nullptr) {
    auto r = choice->kernel->Discover();
    if (!r.ok()) return FailPrint(r.status());
    topo = r->topology;
    report = std::move(*r);
  } else {
    auto t = choice->source->Read();
    if (!t.ok()) return FailPrint(t.status());
    topo = std::move(*t);
  }
  topo = FilterAllocatableNamespaces(std::move(topo), config.machine_net_allocatable_ns);
  // The policy decides which NICs are usable; without a valid policy every NIC is shown as seen.
  service::AllocationService::View view;
  auto policy = core::StaticPolicy::Create(config.policy, topo);
  if (policy.ok()) {
    view.nics = policy->nics();
    view.topology_nics = policy->topology().nics;
    view.numa_nodes = policy->topology().numa_nodes;
  } else {
    std::cerr << "netqosd: the policy rejects this topology: " << policy.status().message() << "\n";
    view.topology_nics = topo.nics;
    view.numa_nodes = topo.numa_nodes;
  }
  ::netqos::admin::v1::GetTopologyResponse resp;
  resp.set_source(choice->description);
  grpcadapter::FillTopology(view, &resp);
  render::PrintTopology(resp, config.json, std::cout);
  if (report && !config.json) {
    std::cout << "\nlinks not counted as NICs:\n";
    for (const auto& link : report->links) {
      if (link.counted) continue;
      std::cout << "  " << (link.netns.empty() ? "<host>" : link.netns) << "/" << link.name << ": "
                << link.why << "\n";
    }
    for (const auto& err : report->namespace_errors)
      std::cout << "namespace error: " << err << "\n";
  }
  return policy.ok() ? kExitOk : kExitFailure;
}

}  // namespace netqos::app
