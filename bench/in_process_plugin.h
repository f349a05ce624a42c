// netqosd's resource plugin without the transport: the same layers the daemon wires (StaticPolicy,
// the journaling FileStateStore on a state dir, AllocationService, the gRPC ResourcePluginService
// adapter with its request translation and decision log line) called directly in this process.
// The difference between an RPC through the socket and the same call here is what gRPC and the
// unix socket cost; what remains here is netqos's own share of an Allocate.
#pragma once

#include <grpcpp/grpcpp.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "checkpoint/file_state_store.h"
#include "core/nic_chooser.h"
#include "core/policy.h"
#include "grpc/resource_plugin_service.h"
#include "service/allocation_service.h"

namespace netqos::bench {

// `nics` NICs of 100 Gbit/s spread over 4 NUMA nodes on 2 sockets, as TopologyJson() describes
// them to the daemon.
inline core::Topology InProcessTopology(int nics) {
  core::Topology t;
  t.numa_nodes = {{0, 0}, {1, 0}, {2, 1}, {3, 1}};
  for (int i = 0; i < nics; ++i) {
    core::Nic n;
    n.id = {"", "eth" + std::to_string(i)};
    n.ifindex = 100 + i;
    n.speed_mbps = 100000;
    n.numa_node = i % 4;
    n.enabled = true;
    n.ipv4 = {"10.99." + std::to_string(i) + ".1"};
    t.nics.push_back(n);
  }
  return t;
}

// Logs as netqosd does (one line per decision at info, flushed at info) but into `log_path`.
inline void LogLikeTheDaemon(const std::string& log_path) {
  auto logger = spdlog::basic_logger_mt("in-process-netqosd", log_path, /*truncate=*/true);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z level=%l %v");
  logger->set_level(spdlog::level::info);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

class InProcessPlugin {
 public:
  InProcessPlugin(int nics, const std::string& state_dir) {
    auto policy = core::StaticPolicy::Create(core::PolicyConfig{}, InProcessTopology(nics));
    if (!policy.ok()) throw std::runtime_error("policy: " + policy.status().message());
    checkpoint::FileStateStore::Options opts;
    opts.dir = state_dir;
    auto store = checkpoint::FileStateStore::Create(opts);
    if (!store.ok()) throw std::runtime_error("store: " + store.status().message());
    auto svc = service::AllocationService::Create(std::move(*policy), std::move(*store),
                                                  std::make_unique<core::FirstNicChooser>());
    if (!svc.ok()) throw std::runtime_error("service: " + svc.status().message());
    service_ = std::move(*svc);
    plugin_ = std::make_unique<grpcadapter::ResourcePluginService>(*service_);
  }

  grpc::Status Hints(const resourceplugin::v1alpha1::ResourceRequest& req) {
    grpc::ServerContext ctx;
    resourceplugin::v1alpha1::ResourceHintsResponse resp;
    return plugin_->GetTopologyHints(&ctx, &req, &resp);
  }
  grpc::Status Allocate(const resourceplugin::v1alpha1::ResourceRequest& req) {
    grpc::ServerContext ctx;
    resourceplugin::v1alpha1::ResourceAllocationResponse resp;
    return plugin_->Allocate(&ctx, &req, &resp);
  }
  grpc::Status RemovePod(const std::string& uid) {
    grpc::ServerContext ctx;
    resourceplugin::v1alpha1::RemovePodRequest req;
    req.set_pod_uid(uid);
    resourceplugin::v1alpha1::RemovePodResponse resp;
    return plugin_->RemovePod(&ctx, &req, &resp);
  }

 private:
  std::unique_ptr<service::AllocationService> service_;
  std::unique_ptr<grpcadapter::ResourcePluginService> plugin_;
};

}  // namespace netqos::bench
