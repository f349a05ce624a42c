// Concurrent kubelet calls: 32 clients run a mix of every state-reading and state-changing RPC
// in batches. Between batches (all clients joined) the daemon's books must equal exactly the
// acknowledged operations and every NIC must hold no more than its allocatable, both directions;
// during a batch each client's reads of its own pods must match what it was acknowledged. The
// same books after a SIGKILL and restart. Also built with ThreadSanitizer (docs/testing.md), so
// it is kept to one test case that runs by name.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "e2e/daemon_books.h"
#include "e2e/kubelet_harness.h"

using namespace netqos::e2e;

namespace {

constexpr int kClients = 32;
constexpr int kBatches = 8;
constexpr int kOpsPerBatch = 12;

struct Counts {
  std::atomic<int> allocated{0}, refused{0}, removed{0}, hints{0}, reads{0};
  std::mutex mu;
  std::vector<std::string> failures;  // anything a client saw that it must not see
  void Fail(const std::string& what) {
    std::lock_guard lk(mu);
    if (failures.size() < 50) failures.push_back(what);
  }
};

// One client: its own pods ("k<id>-<n>"), whose allocations only it changes, so its reads of
// them must return exactly what it was acknowledged, whatever the other 31 do meanwhile.
class Client {
 public:
  Client(Harness& h, int id, uint64_t seed) : id_(id), rng_(seed), plugin_(h.Plugin()) {}

  void RunBatch(AckedBooks& books, Counts& counts) {
    for (int i = 0; i < kOpsPerBatch; ++i) {
      const uint32_t dice = static_cast<uint32_t>(rng_() % 100);
      if (dice < 30) {
        Allocate(books, counts);
      } else if (dice < 40) {
        Remove(books, counts);
      } else if (dice < 55) {
        Hints(counts);
      } else if (dice < 65) {
        ResourcesAllocation(counts);
      } else if (dice < 85) {
        ReadOwn(counts);
      } else {
        Allocatable(counts);
      }
    }
  }

 private:
  std::string Who() const { return "client " + std::to_string(id_) + ": "; }

  void Allocate(AckedBooks& books, Counts& counts) {
    if (open_pod_.empty()) {
      open_pod_ = "k" + std::to_string(id_) + "-" + std::to_string(serial_++);
      open_next_ = 0;
      open_size_ = 1 + static_cast<int>(rng_() % 3);
    }
    const std::string container = "c" + std::to_string(open_next_);
    const auto mbps = static_cast<uint32_t>(50 + rng_() % 450);
    auto req = StormRequest(open_pod_, container, mbps, static_cast<uint32_t>(rng_()));
    grpc::ClientContext ctx;
    rp::ResourceAllocationResponse resp;
    auto st = plugin_->Allocate(&ctx, req, &resp);
    if (!st.ok()) {
      if (st.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED) {
        counts.Fail(Who() + "Allocate failed: " + std::to_string(st.error_code()) + " " +
                    st.error_message());
      }
      counts.refused++;
      if (open_next_ > 0) open_pod_.clear();
      return;
    }
    const auto& res = resp.allocation_result().resource_allocation();
    if (res.count(kResource) == 0 ||
        res.at(kResource).annotations().count(kNicNameAnnotation) == 0) {
      counts.Fail(Who() + "Allocate answered without a NIC");
      return;
    }
    const Held held{res.at(kResource).annotations().at(kNicNameAnnotation), mbps};
    books.Allocated(open_pod_, container, held);
    mine_[open_pod_][container] = held;
    counts.allocated++;
    if (++open_next_ == open_size_) open_pod_.clear();
  }

  void Remove(AckedBooks& books, Counts& counts) {
    if (mine_.empty()) return;
    auto it = std::next(mine_.begin(), static_cast<long>(rng_() % mine_.size()));
    const std::string uid = it->first;
    grpc::ClientContext ctx;
    rp::RemovePodRequest req;
    req.set_pod_uid(uid);
    rp::RemovePodResponse resp;
    auto st = plugin_->RemovePod(&ctx, req, &resp);
    if (!st.ok()) {
      counts.Fail(Who() + "RemovePod failed: " + st.error_message());
      return;
    }
    books.Removed(uid);
    mine_.erase(uid);
    removed_.push_back(uid);
    if (open_pod_ == uid) open_pod_.clear();
    counts.removed++;
  }

  void Hints(Counts& counts) {
    auto req =
        StormRequest("k" + std::to_string(id_) + "-hint", "c0",
                     static_cast<uint32_t>(50 + rng_() % 450), static_cast<uint32_t>(rng_()));
    grpc::ClientContext ctx;
    rp::ResourceHintsResponse resp;
    auto st = plugin_->GetTopologyHints(&ctx, req, &resp);
    if (!st.ok() || resp.resource_hints().count(kResource) == 0) {
      counts.Fail(Who() + "GetTopologyHints: " + st.error_message());
      return;
    }
    counts.hints++;
  }

  void ResourcesAllocation(Counts& counts) {
    grpc::ClientContext ctx;
    rp::GetResourcesAllocationResponse resp;
    auto st = plugin_->GetResourcesAllocation(&ctx, rp::GetResourcesAllocationRequest(), &resp);
    if (!st.ok()) counts.Fail(Who() + "GetResourcesAllocation: " + st.error_message());
    counts.reads++;
  }

  // One of its own containers (held, or of a removed pod) through GetTopologyAwareResources.
  void ReadOwn(Counts& counts) {
    std::string uid, container;
    std::optional<Held> want;
    if (!mine_.empty() && (removed_.empty() || rng_() % 4 != 0)) {
      auto pod = std::next(mine_.begin(), static_cast<long>(rng_() % mine_.size()));
      auto c = std::next(pod->second.begin(), static_cast<long>(rng_() % pod->second.size()));
      uid = pod->first;
      container = c->first;
      want = c->second;
    } else if (!removed_.empty()) {
      uid = removed_[rng_() % removed_.size()];
      container = "c0";
    } else {
      return;
    }
    grpc::ClientContext ctx;
    rp::GetTopologyAwareResourcesRequest q;
    q.set_pod_uid(uid);
    q.set_container_name(container);
    rp::GetTopologyAwareResourcesResponse resp;
    auto st = plugin_->GetTopologyAwareResources(&ctx, q, &resp);
    counts.reads++;
    if (!st.ok()) {
      counts.Fail(Who() + "GetTopologyAwareResources " + uid + ": " + st.error_message());
      return;
    }
    const bool has = resp.has_container_topology_aware_resources();
    if (!want) {
      if (has) counts.Fail(Who() + uid + " was removed but still has resources");
      return;
    }
    const auto& r = resp.container_topology_aware_resources().allocated_resources();
    if (!has || r.count(kResource) == 0 ||
        r.at(kResource).aggregated_quantity() != static_cast<double>(want->mbps)) {
      counts.Fail(Who() + uid + "/" + container + " does not read back as " +
                  std::to_string(want->mbps) + " Mbps");
    }
  }

  void Allocatable(Counts& counts) {
    grpc::ClientContext ctx;
    rp::GetTopologyAwareAllocatableResourcesResponse resp;
    auto st = plugin_->GetTopologyAwareAllocatableResources(
        &ctx, rp::GetTopologyAwareAllocatableResourcesRequest(), &resp);
    counts.reads++;
    if (!st.ok() || resp.allocatable_resources().count(kResource) == 0) {
      counts.Fail(Who() + "GetTopologyAwareAllocatableResources: " + st.error_message());
      return;
    }
    const auto& a = resp.allocatable_resources().at(kResource);
    if (a.aggregated_allocatable_quantity() > a.aggregated_capacity_quantity()) {
      counts.Fail(Who() + "allocatable above capacity");
    }
  }

  int id_;
  std::mt19937_64 rng_;
  std::unique_ptr<rp::ResourcePlugin::Stub> plugin_;
  Books mine_;
  std::vector<std::string> removed_;
  std::string open_pod_;
  int open_next_ = 0, open_size_ = 0, serial_ = 0;
};

}  // namespace

TEST_CASE("e2e: 32 clients with mixed RPCs keep every NIC within allocatable after every batch") {
  const char* env_seed = std::getenv("NETQOS_CONCURRENCY_SEED");
  const uint64_t seed = env_seed != nullptr && *env_seed != 0 ? std::strtoull(env_seed, nullptr, 10)
                                                              : std::random_device{}();
  std::printf("concurrency: seed=%llu (replay: NETQOS_CONCURRENCY_SEED=%llu)\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  INFO("seed " << seed);
  Harness h;
  h.Start();
  AckedBooks books;
  Counts counts;
  std::vector<std::unique_ptr<Client>> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.push_back(std::make_unique<Client>(h, c, seed * 1000003u + static_cast<uint64_t>(c)));
  }

  auto check_books = [&](const std::string& when) {
    const DaemonState state = ReadDaemonState(h);
    std::vector<std::string> violations = CheckNicInvariants(state);
    auto outcome = books.Reconcile(state.books);
    violations.insert(violations.end(), outcome.violations.begin(), outcome.violations.end());
    INFO(when << ":\n" << JoinLines(violations));
    REQUIRE(violations.empty());
  };

  for (int batch = 0; batch < kBatches; ++batch) {
    std::vector<std::thread> threads;
    for (auto& c : clients) {
      threads.emplace_back([&, client = c.get()] { client->RunBatch(books, counts); });
    }
    for (auto& t : threads) t.join();  // the barrier: nothing is in flight below
    {
      std::lock_guard lk(counts.mu);
      INFO("batch " << batch << ":\n" << JoinLines(counts.failures));
      REQUIRE(counts.failures.empty());
    }
    check_books("after batch " + std::to_string(batch));
  }
  std::printf(
      "concurrency: %d clients x %d batches x %d calls: %d allocated, %d refused (NIC full), "
      "%d pods removed, %d hints, %d reads\n",
      kClients, kBatches, kOpsPerBatch, counts.allocated.load(), counts.refused.load(),
      counts.removed.load(), counts.hints.load(), counts.reads.load());
  CHECK(counts.allocated.load() > 0);
  CHECK(counts.refused.load() > 0);  // the load is sized to run the NICs full

  // The same books after a crash.
  h.daemon().Stop(SIGKILL);
  h.Start();
  check_books("after SIGKILL and restart");
}
