// Crash consistency: clients run an Allocate/RemovePod storm against netqosd while it is killed
// with SIGKILL at random points (mid-storm, while it starts and loads its checkpoint, while it
// writes its final snapshot on SIGTERM), then it is restarted and its state must equal exactly
// the acknowledged operations: nothing lost, nothing phantom, a call left unanswered by the kill
// applied entirely or not at all. The checkpoint must load every time without
// --skip-network-state-corruption. Snapshots are taken every 32 changes so that kills also land
// in the middle of background snapshots.
//
// NETQOS_CRASH_CYCLES=<n> (default 100) sets the number of kills; NETQOS_CRASH_SEED=<n> replays
// the kill points and operation choices of an earlier run (printed at the start; thread timing
// still varies between runs).
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "e2e/daemon_books.h"
#include "e2e/kubelet_harness.h"

using namespace netqos::e2e;
using Clock = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;

namespace {

uint64_t EnvU64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != 0 ? std::strtoull(v, nullptr, 10) : fallback;
}

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// An error the daemon answered with is a refusal (nothing applied); anything else means the
// answer was lost and the call may or may not have been applied.
bool Unanswered(const grpc::Status& s) {
  switch (s.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::UNKNOWN:
    case grpc::StatusCode::INTERNAL:
    case grpc::StatusCode::ABORTED:
      return true;
    default:
      return false;
  }
}

constexpr int kWorkers = 4;
constexpr size_t kMaxPodsPerWorker = 10;

struct StormStats {
  std::atomic<uint64_t> acked{0}, refused{0}, unanswered{0};
};

// One kubelet-like client. Pods are owned by one worker ("w<k>-..."), so a pod never has two
// calls in flight. Runs until `stop` or the first unanswered call (the daemon is gone).
void Worker(Harness& h, AckedBooks& books, int k, uint64_t seed, int cycle,
            const std::atomic<bool>& stop, const std::atomic<bool>& signalled, StormStats& stats) {
  // A call the daemon left unanswered before it was signalled is a bug, not a crash effect.
  auto require_signalled = [&](const grpc::Status& st, const char* rpc) {
    if (!signalled.load()) {
      throw std::runtime_error(std::string(rpc) + " failed while netqosd was up: " +
                               std::to_string(st.error_code()) + " " + st.error_message());
    }
  };
  std::mt19937_64 rng(seed);
  const std::string prefix = "w" + std::to_string(k) + "-";
  std::vector<std::string> live;
  for (const auto& [uid, containers] : books.Acked()) {
    if (uid.rfind(prefix, 0) == 0) live.push_back(uid);
  }
  auto plugin = h.Plugin();
  std::string open_pod;
  int open_next = 0, open_size = 0, serial = 0;
  while (!stop.load()) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    const bool remove =
        open_pod.empty() && !live.empty() && (live.size() >= kMaxPodsPerWorker || rng() % 4 == 0);
    if (remove) {
      const size_t at = rng() % live.size();
      const std::string uid = live[at];
      rp::RemovePodRequest req;
      req.set_pod_uid(uid);
      rp::RemovePodResponse resp;
      auto st = plugin->RemovePod(&ctx, req, &resp);
      if (st.ok()) {
        books.Removed(uid);
        live.erase(live.begin() + static_cast<long>(at));
        stats.acked++;
        continue;
      }
      if (!Unanswered(st)) throw std::runtime_error("RemovePod refused: " + st.error_message());
      require_signalled(st, "RemovePod");
      books.RemoveUnknown(uid);
      stats.unanswered++;
      return;
    }
    if (open_pod.empty()) {
      open_pod = prefix + std::to_string(cycle) + "-" + std::to_string(serial++);
      open_next = 0;
      open_size = 1 + static_cast<int>(rng() % 3);
    }
    const std::string container = "c" + std::to_string(open_next);
    const auto mbps = static_cast<uint32_t>(10 + rng() % 1200);
    auto req = StormRequest(open_pod, container, mbps, static_cast<uint32_t>(rng()));
    rp::ResourceAllocationResponse resp;
    auto st = plugin->Allocate(&ctx, req, &resp);
    if (st.ok()) {
      const auto& info = resp.allocation_result().resource_allocation().at(kResource);
      books.Allocated(open_pod, container, Held{info.annotations().at(kNicNameAnnotation), mbps});
      stats.acked++;
      if (open_next == 0) live.push_back(open_pod);
      if (++open_next == open_size) open_pod.clear();
      continue;
    }
    if (Unanswered(st)) {
      require_signalled(st, "Allocate");
      books.AllocateUnknown(open_pod, container, mbps);
      stats.unanswered++;
      return;
    }
    // Refused (the NICs are full): the pod keeps what it has; the next call may free room.
    stats.refused++;
    open_pod.clear();
  }
}

}  // namespace

TEST_CASE("e2e: crash storm: SIGKILL at random points keeps exactly the acknowledged operations") {
  const uint64_t cycles = EnvU64("NETQOS_CRASH_CYCLES", 100);
  const uint64_t seed = EnvU64("NETQOS_CRASH_SEED", std::random_device{}());
  std::printf("crash storm: seed=%llu cycles=%llu (replay: NETQOS_CRASH_SEED=%llu)\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(cycles),
              static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  INFO("seed " << seed << " (replay with NETQOS_CRASH_SEED=" << seed << ")");

  Harness h;
  auto flags = FixtureFlags();
  flags.push_back("--checkpoint-snapshot-every=32");
  const auto first = Clock::now();
  h.Start(flags);
  const double start_ms = MsSince(first);

  AckedBooks books;
  StormStats stats;
  std::mt19937_64 rng(seed);
  int kills_mid = 0, kills_start = 0, kills_stop = 0, applied = 0, not_applied = 0;
  double restart_ms_total = 0, restart_ms_max = 0;
  const auto t_all = Clock::now();

  for (uint64_t cycle = 0; cycle < cycles; ++cycle) {
    std::mt19937_64 crng(rng());
    const int mode = static_cast<int>(crng() % 10);  // 0: at start, 1: in the final snapshot
    const auto storm_ms = Ms(crng() % 120);

    std::atomic<bool> stop{false}, signalled{false};
    std::vector<std::thread> workers;
    std::vector<std::exception_ptr> failures(kWorkers);
    for (int k = 0; k < kWorkers; ++k) {
      workers.emplace_back([&, k, wseed = crng()] {
        try {
          Worker(h, books, k, wseed, static_cast<int>(cycle), stop, signalled, stats);
        } catch (...) {
          failures[k] = std::current_exception();
        }
      });
    }
    std::this_thread::sleep_for(storm_ms);
    if (mode == 1) {
      // SIGTERM writes a final snapshot; kill it somewhere in there.
      signalled = true;
      ::kill(h.daemon().pid(), SIGTERM);
      std::this_thread::sleep_for(std::chrono::microseconds(crng() % 8000));
      ++kills_stop;
    } else {
      ++kills_mid;
    }
    signalled = true;
    h.daemon().Stop(SIGKILL);
    stop = true;
    for (auto& t : workers) t.join();
    for (auto& f : failures) {
      if (f) std::rethrow_exception(f);
    }
    h.ResetDaemon();

    if (mode == 0) {
      // Killed while loading the checkpoint, folding the journal in and writing the snapshot.
      netqos::testing::DaemonProcess starting(h.DaemonArgv(flags), h.log_path());
      std::this_thread::sleep_for(
          std::chrono::microseconds(crng() % static_cast<uint64_t>(start_ms * 1200 + 1)));
      starting.Stop(SIGKILL);
      ++kills_start;
    }

    const auto t_restart = Clock::now();
    try {
      h.Start(flags);
    } catch (const std::exception& e) {
      FAIL("cycle " << cycle << ": the checkpoint did not load after a kill: " << e.what());
    }
    const double restart_ms = MsSince(t_restart);
    restart_ms_total += restart_ms;
    restart_ms_max = std::max(restart_ms_max, restart_ms);

    const DaemonState state = ReadDaemonState(h);
    std::vector<std::string> violations = CheckNicInvariants(state);
    auto outcome = books.Reconcile(state.books);
    violations.insert(violations.end(), outcome.violations.begin(), outcome.violations.end());
    if (!violations.empty()) {
      const std::string log = h.daemon().Log();
      std::printf("--- netqosd log (tail) ---\n%s\n--- end ---\n",
                  log.substr(log.size() > 6000 ? log.size() - 6000 : 0).c_str());
    }
    INFO("cycle " << cycle << " mode " << mode << " after " << storm_ms.count() << " ms:\n"
                  << JoinLines(violations));
    REQUIRE(violations.empty());
    applied += outcome.unknown_applied;
    not_applied += outcome.unknown_not_applied;

    // The kubelet's own view agrees for a sample of the containers.
    auto plugin = h.Plugin();
    int sampled = 0;
    for (const auto& [uid, containers] : state.books) {
      for (const auto& [c, held] : containers) {
        if (crng() % 8 != 0 || ++sampled > 8) continue;
        grpc::ClientContext ctx;
        rp::GetTopologyAwareResourcesRequest q;
        q.set_pod_uid(uid);
        q.set_container_name(c);
        rp::GetTopologyAwareResourcesResponse tr;
        REQUIRE(plugin->GetTopologyAwareResources(&ctx, q, &tr).ok());
        REQUIRE(tr.has_container_topology_aware_resources());
        CHECK(tr.container_topology_aware_resources()
                  .allocated_resources()
                  .at(kResource)
                  .aggregated_quantity() == held.mbps);
      }
    }
  }

  // A graceful stop and start changes nothing either.
  CHECK(h.daemon().Stop(SIGTERM) == 0);
  h.Start(flags);
  const DaemonState final_state = ReadDaemonState(h);
  CHECK(CheckNicInvariants(final_state).empty());
  CHECK(books.Reconcile(final_state.books).violations.empty());

  const std::string log = h.daemon().Log();
  auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) ++n;
    return n;
  };
  const size_t torn = count("dropping torn journal tail");
  const size_t unfinished = count("removed unfinished snapshot");
  CHECK(log.find("corruption_skipped=true") == std::string::npos);
  size_t pods = 0, containers = 0;
  for (const auto& [uid, cs] : final_state.books) {
    ++pods;
    containers += cs.size();
  }
  std::printf(
      "crash storm: %llu cycles in %.1f s (kills: %d mid-storm, %d while starting, %d in the "
      "final snapshot); %llu calls acknowledged, %llu refused (NIC full), %llu unanswered at a "
      "kill (%d applied, %d not); torn journal tails dropped: %zu; snapshots cut by a kill: %zu; "
      "restart to serving: mean %.0f ms, max %.0f ms; end state %zu pods, %zu containers\n",
      static_cast<unsigned long long>(cycles), MsSince(t_all) / 1000, kills_mid, kills_start,
      kills_stop, static_cast<unsigned long long>(stats.acked.load()),
      static_cast<unsigned long long>(stats.refused.load()),
      static_cast<unsigned long long>(stats.unanswered.load()), applied, not_applied, torn,
      unfinished, cycles ? restart_ms_total / static_cast<double>(cycles) : 0.0, restart_ms_max,
      pods, containers);
  CHECK(stats.acked.load() > 0);
}
