// Real drops, exported: netqosd with --enforcement=bpf shapes a veth (its egress HTB tree and the
// IFB of its ingress tree); a container capped at 10 Mbit/s blasts UDP far above the cap, then
// receives a UDP blast from the peer namespace, so its own leaves drop in both directions. The
// drops in /metrics (netqos_container_drops_total, strict parser) and in `netqosctl top --json`
// must be > 0 and equal what `tc -s class show` reports for those leaves, while a capped idle
// container and an uncapped one that sends too report 0. Private bpffs, temp dirs, cgroups under
// an extra kubepods root, `netqosd --uninstall` at the end. Root only.
#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <net/if.h>
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
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ctl/class_rows.h"
#include "support/bpffs_fixture.h"
#include "support/cgroup_fixture.h"
#include "support/files.h"
#include "support/netns.h"
#include "support/process.h"
#include "support/prom_parser.h"
#include "support/temp_dir.h"
#include "support/traffic.h"

namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using netqos::testing::DaemonProcess;
using netqos::testing::NetnsFixture;
using netqos::testing::ParsePrometheusText;
using netqos::testing::PrivateBpffs;
using netqos::testing::PromDocument;
using netqos::testing::PromLabels;
using netqos::testing::RunCommand;
using netqos::testing::TcClass;
using netqos::testing::TcClasses;
using netqos::testing::TempDir;
using netqos::testing::TestCgroup;
using netqos::testing::UniquePrefix;

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

std::string Hex(const char* format, unsigned salt) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, salt, static_cast<unsigned>(::getpid()));
  return buf;
}

struct FakePod {
  std::string uid;
  std::string name;
  std::string container_id;
  std::unique_ptr<TestCgroup> pod_cgroup;
  std::unique_ptr<TestCgroup> cgroup;
};

// One test's world; the destructor tears down in dependency order, also when the test failed.
struct DropsEnv {
  PrivateBpffs bpffs;
  NetnsFixture net;
  TempDir dir;
  std::string prefix = UniquePrefix() + "q";
  std::string ns = prefix + "ns";
  std::string host_if = prefix + "h";
  std::string peer_if = prefix + "p";
  std::string subnet = "10.247." + std::to_string(::getpid() % 200 + 20) + ".";
  std::string host_ip = subnet + "1";
  std::string peer_ip = subnet + "2";
  std::string root_name = "netqos-qtest-" + std::to_string(::getpid());
  std::unique_ptr<TestCgroup> root;
  // blaster: capped at 10 Mbit/s, floods both ways; idle: capped, silent; free: no allocation.
  FakePod blaster, idle, free;
  std::unique_ptr<DaemonProcess> daemon;

  DropsEnv() {
    net.AddNamespace(ns);
    net.SetUp(ns, "lo", true);
    net.AddVeth(host_if, peer_if, ns);
    net.AddAddress("", host_if, host_ip + "/24");
    net.AddAddress(ns, peer_if, peer_ip + "/24");
    net.SetUp("", host_if, true);
    net.SetUp(ns, peer_if, true);
    root = std::make_unique<TestCgroup>(root_name);
    json items = json::array();
    unsigned salt = 1;
    for (auto* p : {&blaster, &idle, &free}) {
      p->uid = Hex("bbbbbbbb-%04x-4000-8000-%012x", salt);
      p->container_id = Hex("d0d0%04x%08x", salt++);
      p->pod_cgroup = std::make_unique<TestCgroup>(*root, "pod" + p->uid);
      p->cgroup = std::make_unique<TestCgroup>(*p->pod_cgroup, p->container_id);
    }
    blaster.name = "blaster";
    idle.name = "idle";
    free.name = "free";
    for (auto* p : {&blaster, &idle, &free}) {
      items.push_back(
          {{"metadata", {{"uid", p->uid}, {"namespace", "netqos-qtest"}, {"name", p->name}}},
           {"status",
            {{"qosClass", "Burstable"},
             {"containerStatuses",
              {{{"name", "app"}, {"containerID", "containerd://" + p->container_id}}}}}}});
    }
    netqos::testing::WriteFile(dir.file("pods.json"),
                               json{{"kind", "PodList"}, {"items", items}}.dump());
  }
  ~DropsEnv() {
    try {
      if (daemon) {
        (void)daemon->Stop(SIGTERM);
        daemon.reset();
      }
      (void)RunCommand({NETQOSD_PATH, "--uninstall", "--bpf-pin-dir=" + bpffs.PinDir(),
                        "--qrm-state-dir=" + dir.file("state"), "--enforce-nics=" + host_if},
                       dir.file("uninstall.log"));
    } catch (...) {
    }
    for (auto* p : {&blaster, &idle, &free}) {
      p->cgroup.reset();
      p->pod_cgroup.reset();
    }
    root.reset();
  }

  std::string Socket() const { return dir.file("sock") + "/qrm_network_plugin_static.sock"; }
  std::string Log() const { return daemon ? daemon->Log() : ""; }
  std::string Ifb() const { return "nqifb" + std::to_string(::if_nametoindex(host_if.c_str())); }

  void StartDaemon() {
    std::string deny;
    for (const auto& link : netqos::testing::ListDir("/sys/class/net")) {
      if (link != host_if) deny += (deny.empty() ? "" : ",") + link;
    }
    daemon = std::make_unique<DaemonProcess>(
        std::vector<std::string>{
            NETQOSD_PATH, "--enforcement=bpf", "--qrm-socket-dirs=" + dir.file("sock"),
            "--qrm-state-dir=" + dir.file("state"), "--bpf-pin-dir=" + bpffs.PinDir(),
            "--kubelet-pods-url=file://" + dir.file("pods.json"),
            "--addition-cgroup-paths=/" + root_name, "--nic-allow=" + host_if, "--nic-deny=" + deny,
            "--enforce-nics=" + host_if, "--nic-selection=first", "--enforcement-resync-period=2",
            "--metrics-bind-address=127.0.0.1:0"},
        dir.file("netqosd.log"));
  }

  netqos::testing::CommandResult Ctl(std::vector<std::string> args) {
    args.insert(args.begin(), {NETQOSCTL_PATH, "--socket=" + Socket()});
    return RunCommand(args, dir.file("ctl.out"));
  }

  void Allocate(const FakePod& p, int mbps) {
    auto r = Ctl({"allocate", "--pod-uid=" + p.uid, "--pod-namespace=netqos-qtest",
                  "--pod-name=" + p.name, "--container=app", "--qos=shared_cores",
                  "--mbps=" + std::to_string(mbps)});
    if (r.exit_code != 0) throw std::runtime_error("netqosctl allocate failed: " + r.output);
  }

  int MetricsPort() {
    static const std::regex re("metrics serving address=127\\.0\\.0\\.1:([0-9]+)");
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < deadline) {
      std::smatch m;
      const std::string log = Log();
      if (std::regex_search(log, m, re)) return std::stoi(m[1]);
      if (!daemon->Running()) break;
      std::this_thread::sleep_for(20ms);
    }
    return 0;
  }
};

PromDocument Scrape(httplib::Client& client) {
  auto r = client.Get("/metrics");
  if (!r || r->status != 200) throw std::runtime_error("GET /metrics failed");
  return ParsePrometheusText(r->body);
}

PromLabels Series(const FakePod& p, const char* direction) {
  return {{"cgroup_id", std::to_string(p.cgroup->Id())}, {"direction", direction}};
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
  DropsEnv env;
  env.StartDaemon();
  const int port = env.MetricsPort();
  INFO(env.Log());
  REQUIRE(port > 0);
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(10, 0);

  env.Allocate(env.blaster, kCapMbps);
  env.Allocate(env.idle, 50);

  // The enforcer applies the allocations on the next pass; the leaves then carry the caps.
  std::optional<PromDocument> doc;
  for (int i = 0; i < 150; ++i) {
    doc = Scrape(client);
    if (doc->Find("netqos_container_allocated_bits_per_second", Series(env.blaster, "egress")) &&
        doc->Find("netqos_container_allocated_bits_per_second", Series(env.idle, "egress")) &&
        doc->Find("netqos_container_bytes_total", Series(env.free, "egress")) &&
        doc->Find("netqos_enforcement_shaped_nic", {{"nic", env.host_if}})) {
      break;
    }
    std::this_thread::sleep_for(100ms);
  }
  REQUIRE(doc->Find("netqos_enforcement_shaped_nic", {{"nic", env.host_if}}));
  auto classes = env.Ctl({"classes", "--json", "--bpf-pin-dir=" + env.bpffs.PinDir()});
  INFO(classes.output);
  REQUIRE(classes.exit_code == 0);
  std::string leaf, free_class;
  std::string class_id;
  const json listed = json::parse(classes.output);
  for (const auto& c : listed.at("containers")) {
    if (c.at("cgroup_id") == env.blaster.cgroup->Id()) {
      leaf = c.at("htb_class");
      class_id = std::to_string(c.at("net_class_id").get<uint32_t>());
      CHECK(c.at("capped") == true);
    }
    if (c.at("cgroup_id") == env.free.cgroup->Id()) free_class = c.at("htb_class");
  }
  INFO("blaster leaf " << leaf << ", free container's class " << free_class);
  REQUIRE(leaf.rfind("10:1", 0) == 0);  // a container leaf 10:1xx
  CHECK(free_class == "10:31");         // no allocation: the level's shared default leaf
  const std::string ifb = env.Ifb();
  REQUIRE(Leaf(env.host_if, leaf).rate_bits == kCapMbps * 1000000ull);
  REQUIRE(Leaf(ifb, leaf).rate_bits == kCapMbps * 1000000ull);
  REQUIRE(Leaf(env.host_if, leaf).dropped == 0);

  // --- egress: the blaster floods the peer; the uncapped container sends a little too.
  UdpBlaster out(env.blaster.cgroup->Path(), "", env.host_ip, kContainerPort, env.peer_ip,
                 kPeerPort, kBlast);
  UdpBlaster bystander(env.free.cgroup->Path(), "", env.host_ip, 0, env.peer_ip, kPeerPort, 50ms);
  std::this_thread::sleep_for(kBlast / 2);
  out.CheckAlive();
  // Live: what a scrape reports lies between two tc readings taken around it.
  const uint64_t tc_before = Leaf(env.host_if, leaf).dropped;
  const double live =
      Scrape(client).Value("netqos_container_drops_total", Series(env.blaster, "egress"));
  const uint64_t tc_after = Leaf(env.host_if, leaf).dropped;
  std::printf("queue drops: egress during the blast tc %llu <= metrics %.0f <= tc %llu\n",
              static_cast<unsigned long long>(tc_before), live,
              static_cast<unsigned long long>(tc_after));
  CHECK(tc_before > 0);
  CHECK(live >= static_cast<double>(tc_before));
  CHECK(live <= static_cast<double>(tc_after));

  const uint64_t egress_drops = SettledDrops(env.host_if, leaf);
  const TcClass egress_leaf = Leaf(env.host_if, leaf);
  doc = Scrape(client);
  std::printf("queue drops: egress after the blast tc %llu (overlimits %llu), metrics %.0f\n",
              static_cast<unsigned long long>(egress_drops),
              static_cast<unsigned long long>(egress_leaf.overlimits),
              doc->Value("netqos_container_drops_total", Series(env.blaster, "egress")));
  CHECK(egress_drops > 0);
  CHECK(doc->Value("netqos_container_drops_total", Series(env.blaster, "egress")) ==
        static_cast<double>(egress_drops));
  CHECK(doc->Value("netqos_container_overlimits_total", Series(env.blaster, "egress")) >=
        static_cast<double>(egress_leaf.overlimits));
  CHECK(doc->Value("netqos_container_overlimits_total", Series(env.blaster, "egress")) > 0);
  const auto blaster_series =
      doc->Samples("netqos_container_drops_total", Series(env.blaster, "egress"));
  REQUIRE(blaster_series.size() == 1);
  CHECK(blaster_series.front().labels.at("pod") == "blaster");
  CHECK(doc->Value("netqos_container_drops_total", Series(env.idle, "egress")) == 0);
  CHECK(doc->Value("netqos_container_drops_total", Series(env.free, "egress")) == 0);
  CHECK(doc->Value("netqos_container_drops_total", Series(env.free, "ingress")) == 0);
  CHECK(doc->Value("netqos_container_bytes_total", Series(env.free, "egress")) > 0);
  // The class sums its containers' own leaves: here only the blaster's drops.
  CHECK(doc->Value("netqos_class_drops_total", {{"class_id", class_id}, {"direction", "egress"}}) ==
        static_cast<double>(egress_drops));

  // --- ingress: the peer floods the blaster's socket (tagged by its sends) through the IFB.
  REQUIRE(Leaf(ifb, leaf).dropped == 0);
  {
    UdpBlaster in("", env.ns, env.peer_ip, 0, env.host_ip, kContainerPort, kBlast);
    std::this_thread::sleep_for(kBlast / 2);
    in.CheckAlive();
    const uint64_t ingress_drops = SettledDrops(ifb, leaf);
    doc = Scrape(client);
    std::printf("queue drops: ingress on %s tc %llu, metrics %.0f\n", ifb.c_str(),
                static_cast<unsigned long long>(ingress_drops),
                doc->Value("netqos_container_drops_total", Series(env.blaster, "ingress")));
    CHECK(ingress_drops > 0);
    CHECK(doc->Value("netqos_container_drops_total", Series(env.blaster, "ingress")) ==
          static_cast<double>(ingress_drops));
    CHECK(doc->Value("netqos_class_drops_total",
                     {{"class_id", class_id}, {"direction", "ingress"}}) ==
          static_cast<double>(ingress_drops));
    CHECK(doc->Value("netqos_container_drops_total", Series(env.idle, "ingress")) == 0);

    // The same numbers in `netqosctl top --json`, and in its table.
    auto top = env.Ctl({"top", "--json", "--iterations", "1", "--interval", "0.3",
                        "--bpf-pin-dir=" + env.bpffs.PinDir()});
    INFO(top.output);
    REQUIRE(top.exit_code == 0);
    const json frame = json::parse(top.output.substr(0, top.output.find('\n')));
    CHECK(frame.at("names_from_daemon") == true);
    const json b = TopEntry(frame, env.blaster.cgroup->Id());
    CHECK(b.at("drops").at("egress").get<uint64_t>() == egress_drops);
    CHECK(b.at("drops").at("ingress").get<uint64_t>() == ingress_drops);
    CHECK(b.at("queues").at("egress").at("htb_class") == leaf);
    CHECK(b.at("queues").at("egress").at("device") == env.host_if);
    CHECK(b.at("queues").at("ingress").at("device") == ifb);
    CHECK(b.at("egress_drops_per_second") == 0.0);  // both blasts are over
    CHECK(b.at("totals").at("drops").get<uint64_t>() == egress_drops + ingress_drops);
    for (const FakePod* p : {&env.idle, &env.free}) {
      const json e = TopEntry(frame, p->cgroup->Id());
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

    auto table = env.Ctl(
        {"top", "--iterations", "1", "--interval", "0.2", "--bpf-pin-dir=" + env.bpffs.PinDir()});
    REQUIRE(table.exit_code == 0);
    CHECK_THAT(table.output, Catch::Contains("netqos-qtest/blaster/app"));
    CHECK_THAT(table.output,
               Catch::Contains(netqos::ctl::DropsText({egress_drops, ingress_drops})));
  }
}
