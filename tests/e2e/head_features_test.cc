// Katalyst HEAD features over the real daemon (docs/compatibility.md, "Katalyst HEAD features"):
// implicit bandwidth on the wire, and the residual state cleanup without enforcement.
#include <catch2/catch.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "e2e/kubelet_harness.h"

namespace {

using netqos::e2e::Harness;
using netqos::e2e::Req;
namespace rp = ::resourceplugin::v1alpha1;

constexpr char kBandwidth[] = "resource.katalyst.kubewharf.io/net_bandwidth";
constexpr char kNamespace[] = "test";  // Req::Container's

TEST_CASE(
    "e2e: an implicit request the tenant policy allows reserves nothing and reports no bandwidth "
    "annotation, and one it does not is reserved") {
  Harness h;
  // The requests' namespace may declare up to 1000 Mbit/s (docs/tenant-policy.md).
  const std::string policy = h.root() + "/tenant-policy.json";
  std::ofstream(policy) << R"({"version": 1, "namespaces": {")" << kNamespace
                        << R"(": {"implicit_bandwidth_max_mbps": 1000}}})";
  auto flags = netqos::e2e::FixtureFlags();
  flags.push_back("--tenant-policy-file=" + policy);
  h.Start(flags);
  auto stub = h.Plugin();
  auto req = Req::Container("pod-implicit", rp::ContainerType::MAIN, "shared_cores", 700);
  (*req.mutable_annotations())["qrm.katalyst.kubewharf.io/quantity-from-qrm-declaration"] = "true";
  grpc::ClientContext ctx;
  rp::ResourceAllocationResponse resp;
  auto st = stub->Allocate(&ctx, req, &resp);
  INFO(st.error_message());
  REQUIRE(st.ok());
  const auto& info = resp.allocation_result().resource_allocation().at(kBandwidth);
  CHECK(info.allocated_quantity() == 0);
  CHECK(info.annotations().count("qrm.katalyst.kubewharf.io/net_bandwidth") == 0);
  CHECK(info.annotations().at("qrm.katalyst.kubewharf.io/nic_name") == "eth0");

  (*req.mutable_annotations())["qrm.katalyst.kubewharf.io/quantity-from-qrm-declaration"] = "yes";
  req.set_pod_uid("pod-typo");
  grpc::ClientContext ctx2;
  auto bad = stub->Allocate(&ctx2, req, &resp);
  CHECK(bad.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK_THAT(bad.error_message(), Catch::Contains("quantity-from-qrm-declaration"));

  // Above what the namespace may declare: reserved and reported like any request.
  auto big = Req::Container("pod-too-much", rp::ContainerType::MAIN, "shared_cores", 1001);
  (*big.mutable_annotations())["qrm.katalyst.kubewharf.io/quantity-from-qrm-declaration"] = "true";
  grpc::ClientContext ctx3;
  rp::ResourceAllocationResponse big_resp;
  REQUIRE(stub->Allocate(&ctx3, big, &big_resp).ok());
  const auto& reserved = big_resp.allocation_result().resource_allocation().at(kBandwidth);
  CHECK(reserved.allocated_quantity() == 1001);
  CHECK(reserved.annotations().at("qrm.katalyst.kubewharf.io/net_bandwidth") == "1001");
}

TEST_CASE("e2e: with --enforcement=none the residual state cleanup still reads the pod source") {
  Harness h;
  const std::string pods = h.root() + "/pods.json";
  std::ofstream(pods) << R"({"kind":"PodList","items":[]})";
  auto flags = netqos::e2e::FixtureFlags();
  flags.push_back("--pod-source=kubelet");
  flags.push_back("--kubelet-pods-url=file://" + pods);
  h.Start(flags);
  REQUIRE(h.daemon().Stop(SIGTERM) == 0);
  const std::string log = h.daemon().Log();
  INFO(log);
  CHECK_THAT(log,
             Catch::Contains("residual state cleanup without enforcement pods=file://" + pods));
  CHECK_THAT(log, !Catch::Contains("residual state cleanup skipped"));
}

}  // namespace
