// Real drops, exported: netqosd with --enforcement=bpf shapes a veth (its egress HTB tree and the
// IFB of its ingress tree); a container capped at 10 Mbit/s blasts UDP far above the cap, then
// receives a UDP blast from the peer namespace, so its own leaves drop in both directions. The
// drops in /metrics (netqos_container_drops_total, strict parser) and in `netqosctl top --json`
// must be > 0 and equal what `tc -s class show` reports for those leaves, while a capped idle
// container and an uncapped one that sends too report 0. The shared DaemonFixture: private bpffs,
// temp dirs, cgroups under an extra kubepods root, `netqosd --uninstall` at the end. Root only.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "ctl/class_rows.h"
#include "support/daemon_fixture.h"

namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using netqos::testing::DaemonFixture;
using netqos::testing::FakePod;
using netqos::testing::InodeOf;
using netqos::testing::PromDocument;
using netqos::testing::PromLabels;
using netqos::testing::TcClass;
using netqos::testing::TcClasses;

constexpr int kCapMbps = 10;
constexpr uint16_t kContainerPort = 15491;  // the blasting container's socket
constexpr uint16_t kPeerPort = 15492;  // where it sends (nobody listens: the veth still carries it)
constexpr size_t kPayload = 1400;
// Far above what a 10 Mbit/s leaf drains (~900 packets/s): with a socket buffer larger than the
// leaf's queue (1000 packets on a veth, 32 on an IFB) the queue overflows and drops.
constexpr int kSendBuffer = 16 << 20;
constexpr auto kBlast = 1500ms;

// Forks a UDP sender: joins `cgroup` ("" = stay), enters `netns` ("" = stay), binds `bind_ip`
// :`bind_port` (port 0 = any), sends to `to_ip`:`to_port` as fast as it can for `blast`, then
// keeps its socket open (so received packets still find it) until killed. Only async-signal-safe
// calls after fork (the test process has threads). The destructor kills and reaps it.
class UdpBlaster {
 public:
  UdpBlaster(const std::string& cgroup, const std::string& netns, const std::string& bind_ip,
             uint16_t bind_port, const std::string& to_ip, uint16_t to_port,
             std::chrono::milliseconds blast) {
    static char payload[kPayload];
    std::memset(payload, 'x', sizeof(payload));
    const std::string procs = cgroup.empty() ? "" : cgroup + "/cgroup.procs";
    const std::string ns = netns.empty() ? "" : "/var/run/netns/" + netns;
    sockaddr_in local{}, to{};
    local.sin_family = to.sin_family = AF_INET;
    local.sin_port = htons(bind_port);
    to.sin_port = htons(to_port);
    if (::inet_pton(AF_INET, bind_ip.c_str(), &local.sin_addr) != 1 ||
        ::inet_pton(AF_INET, to_ip.c_str(), &to.sin_addr) != 1) {
      throw std::runtime_error("bad address " + bind_ip + " or " + to_ip);
    }
    const long blast_ns = static_cast<long>(blast.count()) * 1000000L;
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ > 0) return;
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(9);
    if (!procs.empty()) {
      const int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0 || ::write(fd, "0", 1) != 1) ::_exit(10);
      ::close(fd);
    }
    if (!ns.empty()) {
      const int fd = ::open(ns.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) ::_exit(11);
      ::close(fd);
    }
    const int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) ::_exit(12);
    const int buf = kSendBuffer;
    if (::setsockopt(s, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf)) != 0) ::_exit(13);
    if (::bind(s, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) ::_exit(14);
    timespec start{}, now{};
    ::clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
      // A refused datagram (ENOBUFS when the queue is full) is simply the next one's turn.
      (void)::sendto(s, payload, sizeof(payload), 0, reinterpret_cast<sockaddr*>(&to), sizeof(to));
      ::clock_gettime(CLOCK_MONOTONIC, &now);
      const long elapsed =
          (now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec);
      if (elapsed >= blast_ns) break;
    }
    for (;;) ::pause();
  }
  ~UdpBlaster() { Stop(); }
  UdpBlaster(const UdpBlaster&) = delete;
  UdpBlaster& operator=(const UdpBlaster&) = delete;

  // Throws when the child failed before sending (its exit code says which step).
  void CheckAlive() {
    int status = 0;
    if (pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("udp blaster failed: " + netqos::testing::DescribeExit(status));
    }
  }
  void Stop() {
    netqos::testing::KillAndReap(pid_);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
};

PromLabels Series(const std::string& cgroup, const char* direction) {
  return {{"cgroup_id", std::to_string(InodeOf(cgroup))}, {"direction", direction}};
}

// The leaf's counters as tc prints them; throws when the class is not there.
TcClass Leaf(const std::string& dev, const std::string& handle) {
  const auto classes = TcClasses(dev);
  auto it = classes.find(handle);
  if (it == classes.end()) throw std::runtime_error("no class " + handle + " on " + dev);
  return it->second;
}

// Waits until the leaf's drops stop moving (the blast is over); returns them.
uint64_t SettledDrops(const std::string& dev, const std::string& handle) {
  uint64_t last = Leaf(dev, handle).dropped;
  for (int i = 0; i < 50; ++i) {
    std::this_thread::sleep_for(200ms);
    const uint64_t now = Leaf(dev, handle).dropped;
    if (now == last) return now;
    last = now;
  }
  throw std::runtime_error("drops of " + handle + " on " + dev + " never settled");
}

// The container object of one `netqosctl top --json` frame, by cgroup id.
json TopEntry(const json& frame, uint64_t cgroup_id) {
  for (const auto& c : frame.at("containers")) {
    if (c.at("cgroup_id").get<uint64_t>() == cgroup_id) return c;
  }
  throw std::runtime_error("cgroup " + std::to_string(cgroup_id) + " not in top: " + frame.dump());
}

}  // namespace

TEST_CASE("queue drops: a capped container's HTB leaf drops are exported in metrics and top",
          "[metrics][enforcement]") {
  DaemonFixture env({.tag = "q",
                     .subnet = 247,
                     .pod_namespace = "netqos-qtest",
                     .pod_qos_level = "",
                     .metrics = true});
  // blaster: capped at 10 Mbit/s, floods both ways; idle: capped, silent; free: no allocation.
  const FakePod& blaster = env.AddPod(0xb1, "blaster");
  const FakePod& idle = env.AddPod(0xb2, "idle");
  const FakePod& free = env.AddPod(0xb3, "free");
  const std::string blaster_cg = env.MakeCgroup(blaster), idle_cg = env.MakeCgroup(idle),
                    free_cg = env.MakeCgroup(free);
  env.StartDaemon();
  const int port = env.MetricsPort();
  INFO(env.Log());
  REQUIRE(port > 0);

  env.Allocate(blaster, kCapMbps);
  env.Allocate(idle, 50);

  // The enforcer applies the allocations on the next pass; the leaves then carry the caps.
  std::optional<PromDocument> doc;
  for (int i = 0; i < 150; ++i) {
    doc = env.Scrape();
    if (doc->Find("netqos_container_allocated_bytes_per_second", Series(blaster_cg, "egress")) &&
        doc->Find("netqos_container_allocated_bytes_per_second", Series(idle_cg, "egress")) &&
        doc->Find("netqos_container_bytes_total", Series(free_cg, "egress")) &&
        doc->Find("netqos_enforcement_shaped_nic", {{"nic", env.host()}})) {
      break;
    }
    std::this_thread::sleep_for(100ms);
  }
  REQUIRE(doc->Find("netqos_enforcement_shaped_nic", {{"nic", env.host()}}));
  auto classes = env.Ctl({"classes", "--json", "--bpf-pin-dir=" + env.PinDir()});
  INFO(classes.output);
  REQUIRE(classes.exit_code == 0);
  std::string leaf, free_class;
  std::string class_id;
  const json listed = json::parse(classes.output);
  for (const auto& c : listed.at("containers")) {
    if (c.at("cgroup_id") == InodeOf(blaster_cg)) {
      leaf = c.at("htb_class");
      class_id = std::to_string(c.at("net_class_id").get<uint32_t>());
      CHECK(c.at("capped") == true);
    }
    if (c.at("cgroup_id") == InodeOf(free_cg)) free_class = c.at("htb_class");
  }
  INFO("blaster leaf " << leaf << ", free container's class " << free_class);
  REQUIRE(leaf.rfind("10:1", 0) == 0);  // a container leaf 10:1xx
  CHECK(free_class == "10:31");         // no allocation: the level's shared default leaf
  const std::string ifb = env.veth().Ifb();
  REQUIRE(Leaf(env.host(), leaf).rate_bits == kCapMbps * 1000000ull);
  REQUIRE(Leaf(ifb, leaf).rate_bits == kCapMbps * 1000000ull);
  REQUIRE(Leaf(env.host(), leaf).dropped == 0);

  // --- egress: the blaster floods the peer; the uncapped container sends a little too.
  UdpBlaster out(blaster_cg, "", env.veth().host_ip, kContainerPort, env.veth().peer_ip, kPeerPort,
                 kBlast);
  UdpBlaster bystander(free_cg, "", env.veth().host_ip, 0, env.veth().peer_ip, kPeerPort, 50ms);
  std::this_thread::sleep_for(kBlast / 2);
  out.CheckAlive();
  // Live: what a scrape reports lies between two tc readings taken around it.
  const uint64_t tc_before = Leaf(env.host(), leaf).dropped;
  const double live =
      env.Scrape().Value("netqos_container_drops_total", Series(blaster_cg, "egress"));
  const uint64_t tc_after = Leaf(env.host(), leaf).dropped;
  std::printf("queue drops: egress during the blast tc %llu <= metrics %.0f <= tc %llu\n",
              static_cast<unsigned long long>(tc_before), live,
              static_cast<unsigned long long>(tc_after));
  CHECK(tc_before > 0);
  CHECK(live >= static_cast<double>(tc_before));
  CHECK(live <= static_cast<double>(tc_after));

  const uint64_t egress_drops = SettledDrops(env.host(), leaf);
  const TcClass egress_leaf = Leaf(env.host(), leaf);
  doc = env.Scrape();
  std::printf("queue drops: egress after the blast tc %llu (overlimits %llu), metrics %.0f\n",
              static_cast<unsigned long long>(egress_drops),
              static_cast<unsigned long long>(egress_leaf.overlimits),
              doc->Value("netqos_container_drops_total", Series(blaster_cg, "egress")));
  CHECK(egress_drops > 0);
  CHECK(doc->Value("netqos_container_drops_total", Series(blaster_cg, "egress")) ==
        static_cast<double>(egress_drops));
  CHECK(doc->Value("netqos_container_overlimits_total", Series(blaster_cg, "egress")) >=
        static_cast<double>(egress_leaf.overlimits));
  CHECK(doc->Value("netqos_container_overlimits_total", Series(blaster_cg, "egress")) > 0);
  const auto blaster_series =
      doc->Samples("netqos_container_drops_total", Series(blaster_cg, "egress"));
  REQUIRE(blaster_series.size() == 1);
  CHECK(blaster_series.front().labels.at("pod") == "blaster");
  CHECK(doc->Value("netqos_container_drops_total", Series(idle_cg, "egress")) == 0);
  CHECK(doc->Value("netqos_container_drops_total", Series(free_cg, "egress")) == 0);
  CHECK(doc->Value("netqos_container_drops_total", Series(free_cg, "ingress")) == 0);
  CHECK(doc->Value("netqos_container_bytes_total", Series(free_cg, "egress")) > 0);
  // The class sums its containers' own leaves: here only the blaster's drops.
  CHECK(doc->Value("netqos_class_drops_total", {{"class_id", class_id}, {"direction", "egress"}}) ==
        static_cast<double>(egress_drops));

  // --- ingress: the peer floods the blaster's socket (tagged by its sends) through the IFB.
  REQUIRE(Leaf(ifb, leaf).dropped == 0);
  {
    UdpBlaster in("", env.ns(), env.veth().peer_ip, 0, env.veth().host_ip, kContainerPort, kBlast);
    std::this_thread::sleep_for(kBlast / 2);
    in.CheckAlive();
    const uint64_t ingress_drops = SettledDrops(ifb, leaf);
    doc = env.Scrape();
    std::printf("queue drops: ingress on %s tc %llu, metrics %.0f\n", ifb.c_str(),
                static_cast<unsigned long long>(ingress_drops),
                doc->Value("netqos_container_drops_total", Series(blaster_cg, "ingress")));
    CHECK(ingress_drops > 0);
    CHECK(doc->Value("netqos_container_drops_total", Series(blaster_cg, "ingress")) ==
          static_cast<double>(ingress_drops));
    CHECK(doc->Value("netqos_class_drops_total",
                     {{"class_id", class_id}, {"direction", "ingress"}}) ==
          static_cast<double>(ingress_drops));
    CHECK(doc->Value("netqos_container_drops_total", Series(idle_cg, "ingress")) == 0);

    // The same numbers in `netqosctl top --json`, and in its table.
    auto top = env.Ctl({"top", "--json", "--iterations", "1", "--interval", "0.3",
                        "--bpf-pin-dir=" + env.PinDir()});
    INFO(top.output);
    REQUIRE(top.exit_code == 0);
    const json frame = json::parse(top.output.substr(0, top.output.find('\n')));
    CHECK(frame.at("names_from_daemon") == true);
    const json b = TopEntry(frame, InodeOf(blaster_cg));
    CHECK(b.at("drops").at("egress").get<uint64_t>() == egress_drops);
    CHECK(b.at("drops").at("ingress").get<uint64_t>() == ingress_drops);
    CHECK(b.at("queues").at("egress").at("htb_class") == leaf);
    CHECK(b.at("queues").at("egress").at("device") == env.host());
    CHECK(b.at("queues").at("ingress").at("device") == ifb);
    CHECK(b.at("egress_drops_per_second") == 0.0);  // both blasts are over
    CHECK(b.at("totals").at("drops").get<uint64_t>() == egress_drops + ingress_drops);
    for (const std::string* cgroup : {&idle_cg, &free_cg}) {
      const json e = TopEntry(frame, InodeOf(*cgroup));
      CHECK(e.at("drops").at("egress") == 0);
      CHECK(e.at("drops").at("ingress") == 0);
    }
    bool class_seen = false;
    for (const auto& k : frame.at("classes")) {
      if (std::to_string(k.at("net_class_id").get<uint32_t>()) != class_id) continue;
      class_seen = true;
      CHECK(k.at("drops").at("egress").get<uint64_t>() == egress_drops);
      CHECK(k.at("drops").at("ingress").get<uint64_t>() == ingress_drops);
    }
    CHECK(class_seen);

    auto table =
        env.Ctl({"top", "--iterations", "1", "--interval", "0.2", "--bpf-pin-dir=" + env.PinDir()});
    REQUIRE(table.exit_code == 0);
    CHECK_THAT(table.output, Catch::Contains("netqos-qtest/blaster/app"));
    CHECK_THAT(table.output,
               Catch::Contains(netqos::ctl::DropsText({egress_drops, ingress_drops})));
  }
}
