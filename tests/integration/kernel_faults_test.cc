// Kernel-side faults under the real netqosd with enforcement on: a container's cgroup removed
// while it sends (the process moved out, or killed), the enforced NIC deleted while traffic runs
// through it and later re-created, and the pinned class map filled to max_entries by a foreign
// writer. Each fault must leave the daemon running and serving; a bad state is reported once in
// the log, counted (netqos_enforcement_problem_reports_total, netqos_enforcement_problems,
// `netqosctl status`), and the daemon recovers by itself once the fault is gone. Same world as
// daemon_enforcement_test.cc (the shared DaemonFixture): a veth into a namespace as the NIC, a
// file:// pod list, container cgroups under an extra kubepods root, a private bpffs;
// `netqosd --uninstall` must leave nothing behind, also after the faults. Root only.
#include <bpf/bpf.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "netqos_abi.h"
#include "support/daemon_fixture.h"

namespace {

using namespace std::chrono_literals;
using netqos::TcHandleText;
using netqos::testing::CaptureOutput;
using netqos::testing::CountLines;
using netqos::testing::DaemonFixture;
using netqos::testing::DaemonFixtureOptions;
using netqos::testing::FakeContainerId;
using netqos::testing::FakePod;
using netqos::testing::InodeOf;
using netqos::testing::Iperf3Client;
using netqos::testing::IsContainerLeaf;
using netqos::testing::ShOk;
using netqos::testing::TcClasses;
using netqos::testing::TrafficClock;
using netqos::testing::WaitFor;
using nlohmann::json;

// This file's cases: veth addresses in 10.24<n>.x.0/24, /metrics on.
DaemonFixtureOptions Case(const std::string& tag, int n, int veths) {
  return {.tag = "f" + tag,
          .subnet = 240 + n,
          .veths = veths,
          .pod_namespace = "netqos-ktest",
          .metrics = true};
}

// rmdir that waits out EBUSY (a killed task leaves its cgroup asynchronously).
bool RemoveCgroupDir(const std::string& dir) {
  const auto deadline = TrafficClock::now() + 3s;
  while (::rmdir(dir.c_str()) != 0) {
    if (errno == ENOENT) return true;
    if (TrafficClock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// The daemon still answers the kubelet and the operator.
bool Serves(DaemonFixture& env) {
  return env.DaemonRunning() && env.Ctl({"plugin-info"}).exit_code == 0 &&
         env.Ctl({"status", "--json"}).exit_code == 0;
}

json Status(DaemonFixture& env) {
  auto r = env.Ctl({"status", "--json"});
  if (r.exit_code != 0) throw std::runtime_error("netqosctl status failed: " + r.output);
  return json::parse(r.output);
}

// Whether `netqosctl status --json` lists `object` among the active enforcement problems.
bool ProblemListed(const json& status, const std::string& object) {
  for (const auto& p : status.at("daemon").at("enforcement").at("problems")) {
    if (p.at("object") == object) return true;
  }
  return false;
}

// Whole passes (and container additions) the daemon has completed.
uint64_t Passes(DaemonFixture& env) {
  return Status(env).at("daemon").at("enforcement").at("passes").get<uint64_t>();
}

// How often the active problem of `object` has been reported, 0 when it is not active.
uint64_t TimesSeen(const json& status, const std::string& object) {
  for (const auto& p : status.at("daemon").at("enforcement").at("problems")) {
    if (p.at("object") == object) return p.at("times_seen").get<uint64_t>();
  }
  return 0;
}

double ProblemReports(DaemonFixture& env) {
  return env.Scrape().Value("netqos_enforcement_problem_reports_total");
}

// Whether `object`'s problem is active: listed by netqosctl status, and counted in the metric
// under its kind (the label is the kind, "nic" for "nic:eth0", never the object itself).
bool ProblemActive(DaemonFixture& env, const std::string& object) {
  const std::string kind = object.substr(0, object.find(':'));
  return ProblemListed(Status(env), object) &&
         env.Scrape().ValueOr0("netqos_enforcement_problems", {{"kind", kind}}) > 0;
}

}  // namespace

TEST_CASE(
    "kernel faults: container cgroups removed under traffic are dropped and new ones classified",
    "[faults]") {
  DaemonFixture env(Case("c", 1, 1));
  FakePod& p1 = env.AddPod(1);
  FakePod& p2 = env.AddPod(2);
  const std::string cg1 = env.MakeCgroup(p1);
  const std::string cg2 = env.MakeCgroup(p2);
  env.StartDaemon();
  env.Allocate(p1, 100);
  env.Allocate(p2, 100);
  const uint64_t id1 = InodeOf(cg1), id2 = InodeOf(cg2);
  REQUIRE(env.WaitLeaf(id1, 3000ms));
  REQUIRE(env.WaitLeaf(id2, 3000ms));
  const uint32_t leaf1 = env.Class(id1)->priority;
  const double reports0 = ProblemReports(env);

  env.Server(0, 15501);
  env.Server(0, 15502);
  Iperf3Client& c1 = env.Client(cg1, 0, 15501, 8);
  Iperf3Client& c2 = env.Client(cg2, 0, 15502, 8);
  std::this_thread::sleep_for(1500ms);
  const std::string id1_label = std::to_string(id1);
  REQUIRE(env.Scrape().Find("netqos_container_bytes_total",
                            {{"cgroup_id", id1_label}, {"direction", "egress"}}));

  // (a) The runtime moves the process out (to the pod cgroup) and removes the container cgroup
  // while it keeps sending; (b) the other container is killed mid-flow and its cgroup removed.
  {
    std::ofstream procs(env.PodDir(p1) + "/cgroup.procs");
    procs << c1.pid() << std::flush;
    REQUIRE(procs.good());
  }
  REQUIRE(RemoveCgroupDir(cg1));
  ::kill(c2.pid(), SIGKILL);
  REQUIRE(RemoveCgroupDir(cg2));
  auto gone = WaitFor([&] { return !env.Class(id1) && !env.Class(id2); }, 1500ms);
  REQUIRE(gone);
  std::printf("cgroups removed under traffic: class entries gone after %.0f ms\n", *gone);
  // Their counters go with them (no series for a dead cgroup), while the moved process sends on.
  auto counters_gone = WaitFor(
      [&] {
        return !env.Scrape().Find("netqos_container_bytes_total",
                                  {{"cgroup_id", id1_label}, {"direction", "egress"}});
      },
      3000ms);
  CHECK(counters_gone);
  CHECK(::kill(c1.pid(), 0) == 0);

  // The container restarts: a new id, a new cgroup under the same pod, the same allocation.
  p1.containers[0].id = FakeContainerId(11);
  env.WritePods();
  const std::string cg1b = env.MakeCgroup(p1);
  auto back = env.WaitLeaf(InodeOf(cg1b), 3000ms);
  REQUIRE(back);
  std::printf("restarted container: classified again after %.0f ms\n", *back);
  const uint32_t leaf1b = env.Class(InodeOf(cg1b))->priority;
  // The daemon writes the class map entry a few ms before it adds the HTB leaf in the same pass.
  std::map<std::string, netqos::testing::TcClass> eg;
  (void)WaitFor([&] { return (eg = TcClasses(env.host())).count(TcHandleText(leaf1b)) == 1; },
                1000ms);
  REQUIRE(eg.count(TcHandleText(leaf1b)) == 1);
  CHECK(eg[TcHandleText(leaf1b)].rate_bits == 100000000ull);
  INFO("leaf before " << TcHandleText(leaf1) << ", after " << TcHandleText(leaf1b));

  // A routine removal is no problem: nothing reported, nothing active.
  std::this_thread::sleep_for(2500ms);  // a resync pass over the changed tree
  CHECK(ProblemReports(env) == reports0);
  CHECK(Status(env).at("daemon").at("enforcement").at("problems").empty());
  CHECK(CountLines(env.Log(), {"enforcement problem object="}) == 0);
  CHECK(Serves(env));
  const std::string left = env.Leftovers();
  CHECK(left == "");
}

TEST_CASE(
    "kernel faults: an enforced NIC deleted under traffic is reported once and re-shaped "
    "when it returns",
    "[faults]") {
  DaemonFixture env(Case("n", 2, 2));
  FakePod& p1 = env.AddPod(1);
  const std::string cg1 = env.MakeCgroup(p1);
  env.StartDaemon({"--shape-idle-nics"});  // veth 1, capped by nobody, keeps its tree too
  env.Allocate(p1, 100);                   // --nic-selection=first: on veth 0
  const uint64_t id1 = InodeOf(cg1);
  REQUIRE(env.WaitLeaf(id1, 3000ms));
  const std::string leaf = TcHandleText(env.Class(id1)->priority);
  const int old_ifindex = env.veth(0).ifindex;
  const std::string old_ifb = "nqifb" + std::to_string(old_ifindex);
  REQUIRE(WaitFor(
      [&] {
        return TcClasses(env.host(0)).count(leaf) == 1 && TcClasses(old_ifb).count(leaf) == 1;
      },
      3000ms));
  const double reports0 = ProblemReports(env);

  env.Server(0, 15511);
  Iperf3Client& flow = env.Client(cg1, 0, 15511, 30);
  std::this_thread::sleep_for(1000ms);
  env.DeleteVeth(0);
  const std::string key = "nic:" + env.host(0);
  auto reported = WaitFor([&] { return ProblemActive(env, key); }, 5000ms);
  REQUIRE(reported);
  std::printf("NIC deleted under traffic: problem %s active after %.0f ms\n", key.c_str(),
              *reported);
  (void)flow;
  env.StopTraffic();

  // Counted on every pass, logged once, visible to the operator; the rest keeps working.
  std::this_thread::sleep_for(4500ms);  // two resync passes at least
  CHECK(ProblemReports(env) > reports0 + 1);
  CHECK(CountLines(env.Log(), {"enforcement problem object=" + key + " "}) == 1);
  const json status = Status(env);
  INFO(status.dump(1));
  CHECK(ProblemListed(status, key));
  CHECK(Serves(env));
  CHECK(env.Class(id1).has_value());  // still classified (and counted)
  CHECK(CaptureOutput("tc qdisc show dev " + env.host(1) + " root").find("htb 10:") !=
        std::string::npos);
  // The NIC comes back (same name, new ifindex): shaped again, the problem resolved.
  env.RecreateVeth(0);
  const int new_ifindex = env.veth(0).ifindex;
  REQUIRE(new_ifindex != old_ifindex);
  const std::string new_ifb = "nqifb" + std::to_string(new_ifindex);
  auto reshaped = WaitFor(
      [&] {
        return TcClasses(env.host(0)).count(leaf) == 1 && TcClasses(new_ifb).count(leaf) == 1;
      },
      6000ms);
  REQUIRE(reshaped);
  std::printf("NIC re-created: leaf %s back on %s and %s after %.0f ms\n", leaf.c_str(),
              env.host(0).c_str(), new_ifb.c_str(), *reshaped);
  CHECK(TcClasses(env.host(0))[leaf].rate_bits == 100000000ull);
  // The IFB of the deleted incarnation, which nothing redirects to any more, is gone.
  CHECK(WaitFor([&] { return !ShOk("ip link show dev " + old_ifb); }, 3000ms));
  auto resolved = WaitFor([&] { return !ProblemActive(env, key); }, 3000ms);
  CHECK(resolved);
  CHECK(CountLines(env.Log(), {"enforcement problem resolved object=" + key + " "}) == 1);

  // And it holds the cap again.
  env.Server(0, 15512);
  Iperf3Client& again = env.Client(cg1, 0, 15512, 3);
  const auto result = again.Wait();
  INFO(result.error << result.output);
  REQUIRE(result.ok());
  std::printf("after the NIC returned: %.1f Mbit/s (cap 100)\n", result.ReceiverMbps());
  CHECK(result.ReceiverMbps() < 105);
  CHECK(result.ReceiverMbps() > 70);
  CHECK(Serves(env));
  // The other NIC goes for good: --uninstall still removes its IFB (Leftovers() checks every IFB
  // the daemon created).
  env.DeleteVeth(1);
  std::this_thread::sleep_for(500ms);
  CHECK(Serves(env));
  const std::string left = env.Leftovers();
  CHECK(left == "");
}

TEST_CASE("kernel faults: a class map filled by a foreign writer is reported once and recovers",
          "[faults]") {
  DaemonFixture env(Case("m", 3, 1));
  FakePod& p1 = env.AddPod(1);
  FakePod& p2 = env.AddPod(2);
  // p2's container has not started: the pod list names it once its cgroup exists (below).
  const std::string container2 = p2.containers[0].id;
  p2.containers[0].id = "";
  env.WritePods();
  const std::string cg1 = env.MakeCgroup(p1);
  env.StartDaemon();
  env.Allocate(p1, 100);
  const uint64_t id1 = InodeOf(cg1);
  REQUIRE(env.WaitLeaf(id1, 3000ms));
  const netqos_class class1 = *env.Class(id1);
  const double reports0 = ProblemReports(env);

  // The foreign writer: inserts keys of no cgroup until the map is full, and again whenever there
  // is room, until it is stopped. Every whole pass of the daemon lists the map, writes what it
  // wants (here: fails, the map is full), then clears the entries of cgroups that do not exist;
  // the writer refills the room within a millisecond (one batch syscall per 4096 keys), long
  // before the next pass has even listed the map, so every write of the daemon finds it full.
  // Keys are never reused: a key the daemon listed may still be deleted by that pass.
  const int fd = env.ClassMapFd();
  REQUIRE(fd >= 0);
  const uint64_t foreign_base = 0x7f00000000000000ull;
  std::atomic<bool> writing{true};
  std::atomic<uint64_t> full_seen{0};  // inserts that found the map full
  std::atomic<uint64_t> refills{0};    // rounds that found room again after it was full
  std::atomic<int> writer_error{0};
  std::thread writer([&] {
    constexpr uint32_t kBlock = 4096;
    std::vector<uint64_t> keys(kBlock);
    std::vector<netqos_class> junk(kBlock);
    for (auto& j : junk) j.priority = 0x10ffff;
    LIBBPF_OPTS(bpf_map_batch_opts, opts);  // BPF_ANY (the only flag a batch takes but
                                            // BPF_F_LOCK): the keys are new, every write inserts
    uint64_t next = foreign_base;
    bool was_full = false;
    while (writing.load()) {
      for (uint32_t i = 0; i < kBlock; ++i) keys[i] = next + i;
      uint32_t count = kBlock;
      const int rc = bpf_map_update_batch(fd, keys.data(), junk.data(), &count, &opts);
      next += kBlock;
      if (rc == 0 || count > 0) {
        if (was_full) ++refills;
        was_full = false;
      }
      if (rc == 0) continue;
      if (-rc != E2BIG) {
        writer_error = -rc;
        return;
      }
      ++full_seen;
      was_full = true;
      std::this_thread::sleep_for(1ms);
    }
  });
  struct Stop {
    std::atomic<bool>& writing;
    std::thread& writer;
    ~Stop() {
      writing = false;
      if (writer.joinable()) writer.join();
    }
  } stop{writing, writer};
  REQUIRE(WaitFor([&] { return full_seen.load() > 0 || writer_error.load() != 0; }, 10000ms));
  INFO("foreign writer: " << std::strerror(writer_error.load()));
  REQUIRE(writer_error.load() == 0);

  // A new container while the map is full: its entry cannot be written. The pod list names it only
  // after its cgroup exists, as the kubelet does, so the daemon writes it in a whole pass.
  env.Allocate(p2, 100);
  const std::string cg2 = env.MakeCgroup(p2, container2);
  p2.containers[0].id = container2;
  env.WritePods();
  const uint64_t id2 = InodeOf(cg2);
  const std::string key = "cgroup:" + std::to_string(id2);
  // Counted in passes, not seconds: a pass lists and clears 65536 entries, 3-7 s each on a TCG
  // guest. The first whole pass that starts after the pod list names the container reports it (the
  // one under way may have read the list before).
  const uint64_t passes_named = Passes(env);
  REQUIRE(
      WaitFor([&] { return ProblemActive(env, key) || Passes(env) >= passes_named + 2; }, 60000ms));
  REQUIRE(ProblemActive(env, key));
  // Two more passes: counted each time, logged once.
  const uint64_t passes_reported = Passes(env);
  REQUIRE(WaitFor([&] { return Passes(env) >= passes_reported + 2; }, 60000ms));
  CHECK(ProblemReports(env) > reports0 + 1);
  CHECK(CountLines(env.Log(), {"enforcement problem object=" + key + " "}) == 1);
  const json status = Status(env);
  INFO(status.dump(1));
  CHECK(ProblemListed(status, key));
  CHECK(TimesSeen(status, key) >= 2);
  CHECK(Serves(env));
  // The entry it had is untouched, and the one it could not write is not there.
  REQUIRE(env.Class(id1).has_value());
  CHECK(env.Class(id1)->priority == class1.priority);
  CHECK_FALSE(env.Class(id2).has_value());
  // The writer kept the map full all along, also after the daemon's passes made room.
  CHECK(writer_error.load() == 0);
  std::printf("class map full: the foreign writer refilled it %llu times\n",
              static_cast<unsigned long long>(refills.load()));
  CHECK(refills.load() > 0);

  // The foreign writer stops: the daemon clears its entries and classifies the new container.
  // Within three passes: the one under way (its listing may miss the writer's last keys), one that
  // may still find the map full and clears it, one that writes.
  writing = false;
  writer.join();
  const uint64_t passes0 = Passes(env);
  uint64_t passes_at = 0;
  auto recovered = WaitFor(
      [&] {
        passes_at = Passes(env);
        auto c = env.Class(id2);
        return c && IsContainerLeaf(c->priority);
      },
      30000ms);
  REQUIRE(recovered);
  std::printf(
      "class map full: new container classified %.0f ms (passes %llu..%llu) after the writer "
      "stopped\n",
      *recovered, static_cast<unsigned long long>(passes0),
      static_cast<unsigned long long>(passes_at));
  CHECK(passes_at <= passes0 + 3);
  auto resolved = WaitFor([&] { return !ProblemActive(env, key); }, 3000ms);
  CHECK(resolved);
  // Two whole passes after the writer stopped every key it wrote has been listed and cleared.
  CHECK(WaitFor([&] { return Passes(env) >= passes0 + 2; }, 30000ms));
  size_t entries = 0;
  uint64_t k = 0, next = 0;
  for (int rc = bpf_map_get_next_key(fd, nullptr, &next); rc == 0;
       rc = bpf_map_get_next_key(fd, &k, &next)) {
    ++entries;
    k = next;
  }
  ::close(fd);
  CHECK(entries < 100);  // the foreign entries are gone
  CHECK(Serves(env));
  const std::string left = env.Leftovers();
  CHECK(left == "");
}
