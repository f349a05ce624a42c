// Concurrent kubelet calls: many clients allocate and remove at once; afterwards the daemon's
// books equal exactly the acknowledged operations and no NIC is over-allocated.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <atomic>
#include <map>
#include <random>
#include <thread>

#include "e2e/kubelet_harness.h"

using namespace netqos::e2e;

TEST_CASE("e2e: concurrent Allocate/RemovePod never over-allocate and lose nothing") {
  Harness h;
  h.Start();
  constexpr int kClients = 16;
  constexpr int kOpsPerClient = 40;
  std::mutex mu;
  std::map<std::string, std::pair<std::string, uint32_t>> live;  // pod uid -> (nic, mbps)
  std::atomic<int> refused{0};

  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      std::mt19937 rng(static_cast<uint32_t>(1000 + c));
      auto plugin = h.Plugin();
      std::vector<std::string> mine;
      for (int i = 0; i < kOpsPerClient; ++i) {
        if (!mine.empty() && rng() % 4 == 0) {
          const std::string uid = mine.back();
          mine.pop_back();
          grpc::ClientContext ctx;
          rp::RemovePodRequest rm;
          rm.set_pod_uid(uid);
          rp::RemovePodResponse rr;
          if (plugin->RemovePod(&ctx, rm, &rr).ok()) {
            std::lock_guard lk(mu);
            live.erase(uid);
          }
          continue;
        }
        const std::string uid = "c" + std::to_string(c) + "-" + std::to_string(i);
        const auto mbps = static_cast<uint32_t>(100 + rng() % 2900);
        auto req = Req::Container(uid, rp::MAIN, "shared_cores", mbps);
        const char* ns_types[] = {"host_ns", "anti_host_ns", "host_ns_preferred"};
        Req::NamespaceType(&req, ns_types[rng() % 3]);
        grpc::ClientContext ctx;
        rp::ResourceAllocationResponse resp;
        auto st = plugin->Allocate(&ctx, req, &resp);
        if (!st.ok()) {
          refused++;
          continue;
        }
        const auto& info = resp.allocation_result().resource_allocation().at(kResource);
        std::lock_guard lk(mu);
        live[uid] = {info.annotations().at("qrm.katalyst.kubewharf.io/nic_name"), mbps};
        mine.push_back(uid);
      }
    });
  }
  for (auto& t : clients) t.join();
  INFO("refused " << refused.load() << " of " << kClients * kOpsPerClient);
  CHECK(refused.load() > 0);  // the load is sized to run the NICs full

  auto check_books = [&] {
    auto out = h.Ctl({"capacity", "--json"});
    REQUIRE(out.exit_code == 0);
    auto doc = nlohmann::json::parse(out.output);
    std::map<std::string, uint64_t> expected;
    for (const auto& [uid, alloc] : live) expected[alloc.first] += alloc.second;
    for (const auto& nic : doc["nics"]) {
      const std::string name = nic["name"];
      INFO(name);
      for (const char* dir : {"egress", "ingress"}) {
        CHECK(nic[dir]["allocated"].get<uint64_t>() == expected[name]);
        CHECK(nic[dir]["allocated"].get<uint64_t>() <= nic[dir]["allocatable"].get<uint64_t>());
      }
    }
    auto list = h.Ctl({"allocations", "--json"});
    REQUIRE(list.exit_code == 0);
    CHECK(list.output.find("\"pod_uid\"") != std::string::npos);
  };
  check_books();
  // The same books after a crash.
  h.daemon().Stop(SIGKILL);
  h.Start();
  check_books();
}
