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

TEST_CASE("e2e: an implicit request reserves nothing and reports no bandwidth annotation") {
  Harness h;
  h.Start();
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
