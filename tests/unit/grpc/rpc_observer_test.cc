// The resource plugin reports every RPC to its service::RpcObserver (method, gRPC code name,
// duration), and logs each allocation decision once at info with pod, container, NIC, Mbps and
// net class id.
#include "service/rpc_observer.h"

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "core/constants.h"
#include "grpc/resource_plugin_service.h"
#include "unit/grpc/service_fixture.h"

namespace {

namespace pb = ::resourceplugin::v1alpha1;

struct Call {
  std::string method, code;
  double seconds = -1;
};

struct Failure {
  std::string method, message, reallocation;
};

class RecordingObserver final : public netqos::service::RpcObserver {
 public:
  void Observe(std::string_view method, std::string_view code, double seconds) noexcept override {
    std::lock_guard lk(mu);
    calls.push_back({std::string(method), std::string(code), seconds});
  }
  void ObserveFailure(std::string_view method, std::string_view message,
                      std::string_view reallocation) noexcept override {
    std::lock_guard lk(mu);
    failures.push_back({std::string(method), std::string(message), std::string(reallocation)});
  }
  std::mutex mu;
  std::vector<Call> calls;
  std::vector<Failure> failures;
};

std::unique_ptr<netqos::service::AllocationService> MakeService() {
  netqos::core::PolicyConfig config;
  config.qos_class_ids[netqos::core::kSharedCores] = 22345;
  auto policy = netqos::core::StaticPolicy::Create(config, netqos::testing::FixtureTopology());
  REQUIRE(policy.ok());
  auto svc = netqos::service::AllocationService::Create(
      std::move(policy).value(), std::make_unique<netqos::testing::MemoryStateStore>(),
      std::make_unique<netqos::core::FirstNicChooser>());
  REQUIRE(svc.ok());
  return std::move(svc).value();
}

pb::ResourceRequest Request(const std::string& uid, double mbps) {
  const char* kResource = "resource.katalyst.kubewharf.io/net_bandwidth";
  pb::ResourceRequest r;
  r.set_pod_uid(uid);
  r.set_pod_namespace("ns");
  r.set_pod_name("web");
  r.set_container_name("app");
  r.set_container_type(pb::ContainerType::MAIN);
  r.set_resource_name(kResource);
  (*r.mutable_resource_requests())[kResource] = mbps;
  (*r.mutable_annotations())["katalyst.kubewharf.io/qos_level"] = "shared_cores";
  return r;
}

// A plugin over a fresh service that reports to `observer`.
struct ObservedPlugin {
  std::unique_ptr<netqos::service::AllocationService> svc = MakeService();
  RecordingObserver observer;
  netqos::grpcadapter::ResourcePluginService plugin{
      *svc, [this] {
        netqos::grpcadapter::ResourcePluginService::Options options;
        options.rpc_observer = &observer;
        return options;
      }()};
};

}  // namespace

TEST_CASE_METHOD(ObservedPlugin,
                 "every resource plugin RPC is reported to the observer with its code") {
  pb::ResourcePluginOptions opts;
  CHECK(plugin.GetResourcePluginOptions(nullptr, nullptr, &opts).ok());
  pb::ResourceAllocationResponse resp;
  auto ok = Request("uid-1", 300);
  CHECK(plugin.Allocate(nullptr, &ok, &resp).ok());
  auto bad = Request("", 300);
  CHECK(plugin.Allocate(nullptr, &bad, &resp).error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  pb::RemovePodRequest remove;
  remove.set_pod_uid("uid-1");
  pb::RemovePodResponse removed;
  CHECK(plugin.RemovePod(nullptr, &remove, &removed).ok());

  REQUIRE(observer.calls.size() == 4);
  CHECK(observer.calls[0].method == "GetResourcePluginOptions");
  CHECK(observer.calls[0].code == "OK");
  CHECK(observer.calls[1].method == "Allocate");
  CHECK(observer.calls[1].code == "OK");
  CHECK(observer.calls[2].method == "Allocate");
  CHECK(observer.calls[2].code == "INVALID_ARGUMENT");
  CHECK(observer.calls[3].method == "RemovePod");
  for (const auto& c : observer.calls) {
    CHECK(c.seconds >= 0);
    CHECK(c.seconds < 10);
  }
}

TEST_CASE_METHOD(
    ObservedPlugin,
    "a failed allocation is reported with its message and the pod's reallocation tag") {
  pb::ResourceAllocationResponse resp;
  const char* kRealloc = "qrm.katalyst.kubewharf.io/resource-reallocation";

  auto plain = Request("uid-1", 1e9);  // fits no NIC
  CHECK(plugin.Allocate(nullptr, &plain, &resp).error_code() ==
        grpc::StatusCode::RESOURCE_EXHAUSTED);
  auto realloc = Request("uid-2", 1e9);
  (*realloc.mutable_annotations())[kRealloc] = "true";
  CHECK_FALSE(plugin.Allocate(nullptr, &realloc, &resp).ok());
  auto other = Request("uid-3", 1e9);
  (*other.mutable_annotations())[kRealloc] = "some tenant text";
  CHECK_FALSE(plugin.Allocate(nullptr, &other, &resp).ok());
  auto fine = Request("uid-4", 100);
  (*fine.mutable_annotations())[kRealloc] = "true";
  CHECK(plugin.Allocate(nullptr, &fine, &resp).ok());
  pb::ResourceRequest hints_req = Request("", 1);
  pb::ResourceHintsResponse hints;
  CHECK_FALSE(plugin.GetTopologyHints(nullptr, &hints_req, &hints).ok());

  REQUIRE(observer.failures.size() == 4);  // the successful Allocate reports none
  CHECK(observer.failures[0].method == "Allocate");
  CHECK_THAT(observer.failures[0].message,
             Catch::Contains("failed to meet the bandwidth requirement"));
  CHECK(observer.failures[0].reallocation.empty());
  CHECK(observer.failures[1].reallocation == "true");
  CHECK(observer.failures[2].reallocation == "false");
  CHECK(observer.failures[3].method == "GetTopologyHints");
  CHECK_THAT(observer.failures[3].message, Catch::Contains("empty pod_uid"));
  CHECK(observer.failures[3].reallocation.empty());
  CHECK(observer.calls.size() == 5);
}

TEST_CASE("without an observer the plugin serves as before") {
  auto svc = MakeService();
  netqos::grpcadapter::ResourcePluginService plugin(*svc);
  pb::ResourcePluginOptions opts;
  CHECK(plugin.GetResourcePluginOptions(nullptr, nullptr, &opts).ok());
}

TEST_CASE("an allocation decision is logged once at info with NIC, Mbps and class id") {
  auto svc = MakeService();
  netqos::grpcadapter::ResourcePluginService plugin(*svc);
  std::ostringstream out;
  auto previous = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>(
      "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  logger->set_pattern("level=%l %v");
  logger->set_level(spdlog::level::info);
  spdlog::set_default_logger(logger);
  pb::ResourceAllocationResponse resp;
  auto req = Request("uid-log", 250);
  const bool ok = plugin.Allocate(nullptr, &req, &resp).ok();
  spdlog::set_default_logger(previous);
  CHECK(ok);
  const std::string log = out.str();
  INFO(log);
  CHECK_THAT(log, Catch::StartsWith("level=info allocated pod=ns/web uid=uid-log container=app "
                                    "type=MAIN nic=eth0 mbps=250 class_id=22345 result=\""));
  CHECK(std::count(log.begin(), log.end(), '\n') == 1);  // once
}
