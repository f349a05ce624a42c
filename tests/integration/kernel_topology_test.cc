// KernelTopologySource against real kernel objects: named network namespaces and veth pairs built
// with iproute2 (NetnsFixture), discovered through netlink + a per-namespace sysfs, and watched
// for link/address/namespace changes. Root only; every object carries this process's prefix.
#include <arpa/inet.h>
#include <sched.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "os/netns_exec.h"
#include "support/netns.h"
#include "support/temp_dir.h"
#include "topology/kernel_topology_source.h"
#include "topology/netlink_links.h"

namespace {

using netqos::core::Nic;
using netqos::core::Topology;
using netqos::os::RunInNetns;
using netqos::testing::NetnsFixture;
using netqos::testing::Sh;
using netqos::testing::TempDir;
using netqos::testing::UniquePrefix;
using netqos::topology::DiscoveryReport;
using netqos::topology::KernelTopologySource;
using netqos::topology::LinkReport;
using netqos::topology::ParseNicSelection;
using Clock = std::chrono::steady_clock;

std::string Capture(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  ::pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// What iproute2 says the ifindex of `dev` in `ns` is ("1: lo: <...") — an independent source.
int IfIndexIn(const std::string& ns, const std::string& dev) {
  std::string line = Capture(NetnsFixture::In(ns) + "-o link show dev " + dev);
  return std::atoi(line.c_str());
}

// The sysfs speed as seen in that namespace by `ip netns exec` (which mounts its own sysfs).
int64_t SysfsSpeedIn(const std::string& ns, const std::string& dev) {
  std::string cmd = (ns.empty() ? "" : "ip netns exec " + ns + " ") + "cat /sys/class/net/" + dev +
                    "/speed 2>/dev/null";
  std::string v = Capture(cmd);
  return v.empty() ? -1 : std::stoll(v);
}

uint64_t NetnsInode() {
  struct stat st {};
  ::stat("/proc/thread-self/ns/net", &st);
  return st.st_ino;
}

const Nic* Find(const Topology& t, const std::string& ns, const std::string& name) {
  for (const auto& n : t.nics)
    if (n.id.netns == ns && n.id.name == name) return &n;
  return nullptr;
}

const LinkReport* FindLink(const DiscoveryReport& r, const std::string& ns,
                           const std::string& name) {
  for (const auto& l : r.links)
    if (l.netns == ns && l.name == name) return &l;
  return nullptr;
}

KernelTopologySource::Options OptionsFor(const std::string& prefix,
                                         std::vector<std::string> overrides = {}) {
  KernelTopologySource::Options o;
  o.multi_ns = true;
  auto sel = ParseNicSelection({prefix + "*"}, {}, overrides);
  REQUIRE(sel.ok());
  o.selection = *sel;
  return o;
}

// Topologies delivered by Watch(), and a way to wait for one that satisfies a predicate.
class Deliveries {
 public:
  std::function<void(Topology)> Callback() {
    return [this](Topology t) {
      std::lock_guard<std::mutex> lock(mu_);
      latest_ = std::move(t);
      ++count_;
      cv_.notify_all();
    };
  }
  // Returns the elapsed time until a delivered topology satisfied `pred`, or -1 ms on timeout.
  std::chrono::milliseconds WaitFor(const std::function<bool(const Topology&)>& pred,
                                    Clock::time_point since,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(1)) {
    std::unique_lock<std::mutex> lock(mu_);
    bool ok = cv_.wait_until(lock, since + timeout, [&] { return count_ > 0 && pred(latest_); });
    if (!ok) return std::chrono::milliseconds(-1);
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since);
  }
  int count() {
    std::lock_guard<std::mutex> lock(mu_);
    return count_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  Topology latest_;
  int count_ = 0;
};

}  // namespace

TEST_CASE("RunInNetns enters the namespace on its own thread only", "[kernel_topology]") {
  const std::string p = UniquePrefix();
  NetnsFixture fx;
  fx.AddNamespace(p + "x");
  fx.AddVeth(p + "hx", p + "x1", p + "x");
  const std::string mounts_before = ReadFile("/proc/self/mountinfo");
  const uint64_t ns_before = NetnsInode();

  std::vector<std::string> seen;
  std::string sysfs_seen;
  auto st = RunInNetns("/var/run/netns/" + p + "x", [&](const std::string& sysfs) {
    sysfs_seen = sysfs;
    auto links = netqos::topology::DumpLinks();
    if (!links.ok()) return links.status();
    for (const auto& l : *links) seen.push_back(l.name);
    // The fresh sysfs shows this namespace's links, not the host's.
    struct stat s {};
    if (::stat(("/sys/class/net/" + p + "x1").c_str(), &s) != 0)
      return netqos::NotFound("sysfs does not show " + p + "x1");
    if (::stat("/sys/class/net/eth0", &s) == 0) return netqos::Internal("sysfs shows host eth0");
    return netqos::Status::Ok();
  });
  REQUIRE(st.ok());
  CHECK(sysfs_seen == "/sys");
  CHECK(seen == std::vector<std::string>{"lo", p + "x1"});
  CHECK(NetnsInode() == ns_before);
  CHECK(ReadFile("/proc/self/mountinfo") == mounts_before);

  SECTION("errors name the syscall and the path") {
    auto missing = RunInNetns("/var/run/netns/" + p + "nope",
                              [](const std::string&) { return netqos::Status::Ok(); });
    CHECK(missing.code() == netqos::StatusCode::kNotFound);
    CHECK(missing.message() ==
          "open(/var/run/netns/" + p + "nope): No such file or directory (errno 2)");
    TempDir dir;
    Sh("touch " + dir.file("plain"));
    auto bad =
        RunInNetns(dir.file("plain"), [](const std::string&) { return netqos::Status::Ok(); });
    CHECK(bad.message() == "setns(" + dir.file("plain") + "): Invalid argument (errno 22)");
    auto throws = RunInNetns("/var/run/netns/" + p + "x", [](const std::string&) -> netqos::Status {
      throw std::runtime_error("boom");
    });
    CHECK(throws.code() == netqos::StatusCode::kInternal);
    CHECK(throws.message().find("boom") != std::string::npos);
    CHECK(NetnsInode() == ns_before);
    CHECK(ReadFile("/proc/self/mountinfo") == mounts_before);
  }
}

TEST_CASE("Discover reports host and named-namespace NICs", "[kernel_topology]") {
  const std::string p = UniquePrefix();
  const std::string na = p + "a", nb = p + "b";
  NetnsFixture fx;
  fx.AddNamespace(na);
  fx.AddNamespace(nb);
  fx.AddVeth(p + "h1", p + "a1", na);  // up, IPv4 + IPv6, speed override
  fx.AddVeth(p + "h2", p + "a2", na);  // left down
  fx.AddVeth(p + "h3", p + "b1", nb);  // up, other namespace
  for (const auto& h : {p + "h1", p + "h2", p + "h3"}) fx.SetUp("", h, true);
  fx.SetUp(na, p + "a1", true);
  fx.SetUp(na, "lo", true);
  fx.SetUp(nb, p + "b1", true);
  fx.AddAddress(na, p + "a1", "10.250.1.2/24");
  fx.AddAddress(na, p + "a1", "fd00:250::2/64");
  fx.AddAddress(na, p + "a2", "10.250.2.2/24");
  fx.AddAddress(nb, p + "b1", "10.250.3.2/24");
  fx.AddAddress(nb, p + "b1", "fd00:250::3/64");
  fx.AddAddress("", p + "h1", "10.250.1.1/24");

  const std::string mounts_before = ReadFile("/proc/self/mountinfo");
  auto src = KernelTopologySource::Create(OptionsFor(p, {p + "a1=1000", p + "b1=2500"}));
  REQUIRE(src.ok());
  auto report = (*src)->Discover();
  REQUIRE(report.ok());
  const Topology& t = report->topology;
  CHECK(!t.numa_nodes.empty());

  const Nic* a1 = Find(t, na, p + "a1");
  REQUIRE(a1);
  CHECK(a1->ifindex == IfIndexIn(na, p + "a1"));
  CHECK(a1->ifindex > 0);
  CHECK(a1->ipv4 == std::vector<std::string>{"10.250.1.2"});
  CHECK(a1->ipv6 == std::vector<std::string>{"fd00:250::2"});  // fe80:: link-local dropped
  CHECK(a1->netns_path == "/var/run/netns/" + na);
  CHECK(a1->enabled);
  CHECK(a1->speed_mbps == 1000);
  CHECK(a1->numa_node == -1);
  CHECK(a1->pci_address.empty());
  CHECK(a1->healthy);
  CHECK(a1->unhealthy_reason.empty());

  const Nic* a2 = Find(t, na, p + "a2");
  REQUIRE(a2);
  CHECK(a2->ifindex == IfIndexIn(na, p + "a2"));
  CHECK_FALSE(a2->enabled);
  CHECK(a2->speed_mbps == -1);  // no override, sysfs speed unreadable while down
  CHECK(a2->ipv4 == std::vector<std::string>{"10.250.2.2"});
  CHECK(a2->netns_path == "/var/run/netns/" + na);
  CHECK(a2->healthy);

  const Nic* b1 = Find(t, nb, p + "b1");
  REQUIRE(b1);
  CHECK(b1->ifindex == IfIndexIn(nb, p + "b1"));
  CHECK(b1->ipv4 == std::vector<std::string>{"10.250.3.2"});
  CHECK(b1->ipv6 == std::vector<std::string>{"fd00:250::3"});
  CHECK(b1->netns_path == "/var/run/netns/" + nb);
  CHECK(b1->enabled);
  CHECK(b1->speed_mbps == 2500);
  CHECK(b1->numa_node == -1);

  const Nic* h1 = Find(t, "", p + "h1");
  REQUIRE(h1);
  CHECK(h1->ifindex == IfIndexIn("", p + "h1"));
  CHECK(h1->netns_path.empty());
  CHECK(h1->enabled);
  CHECK(h1->ipv4 == std::vector<std::string>{"10.250.1.1"});
  CHECK(h1->ipv6.empty());
  CHECK(h1->speed_mbps == SysfsSpeedIn("", p + "h1"));  // no override: what sysfs says
  const Nic* h2 = Find(t, "", p + "h2");
  REQUIRE(h2);
  CHECK_FALSE(h2->enabled);                 // its peer a2 is down: no carrier
  CHECK(Find(t, "", p + "a1") == nullptr);  // peer ends are not in the host namespace

  // Non-matching links are reported, not counted: lo everywhere, the host's virtual ifb devices.
  for (const auto& [ns, name] : std::vector<std::pair<std::string, std::string>>{
           {"", "lo"}, {na, "lo"}, {nb, "lo"}, {"", "ifb0"}}) {
    if (ns.empty() && name == "ifb0" && !FindLink(*report, "", "ifb0")) continue;
    const LinkReport* l = FindLink(*report, ns, name);
    INFO(ns << "/" << name);
    REQUIRE(l);
    CHECK_FALSE(l->counted);
    CHECK(!l->why.empty());
    CHECK(Find(t, ns, name) == nullptr);
  }
  const LinkReport* la1 = FindLink(*report, na, p + "a1");
  REQUIRE(la1);
  CHECK(la1->counted);
  CHECK(la1->ifindex == a1->ifindex);
  CHECK(la1->why.find(p + "*") != std::string::npos);

  // Host NICs: only allowed names or PCI/bond devices; the host comes first, then namespaces
  // sorted by name, each sorted by NIC name.
  for (const auto& n : t.nics) {
    if (!n.id.netns.empty()) continue;
    const LinkReport* l = FindLink(*report, "", n.id.name);
    REQUIRE(l);
    INFO(n.id.name << ": " << l->why);
    CHECK((n.id.name.rfind(p, 0) == 0 || l->why == "PCI device" || l->why == "bond"));
  }
  std::vector<std::string> ours;
  for (const auto& n : t.nics)
    if (n.id.name.rfind(p, 0) == 0) ours.push_back(n.id.Identifier());
  CHECK(ours == std::vector<std::string>{p + "h1", p + "h2", p + "h3", na + "-" + p + "a1",
                                         na + "-" + p + "a2", nb + "-" + p + "b1"});

  // Read() is the report's topology.
  auto read = (*src)->Read();
  REQUIRE(read.ok());
  CHECK(netqos::topology::SameTopology(*read, t));

  SECTION("host only without multi_ns") {
    auto o = OptionsFor(p);
    o.multi_ns = false;
    auto host_only = KernelTopologySource::Create(o);
    REQUIRE(host_only.ok());
    auto r = (*host_only)->Read();
    REQUIRE(r.ok());
    for (const auto& n : r->nics) CHECK(n.id.netns.empty());
    CHECK(Find(*r, "", p + "h1"));
  }

  SECTION("a broken namespace file is reported and skipped") {
    TempDir dir;
    Sh("touch " + dir.file("broken"));
    auto o = OptionsFor(p);
    o.netns_dirs = {"/var/run/netns", "/run/netns", dir.path()};
    auto with_broken = KernelTopologySource::Create(o);
    REQUIRE(with_broken.ok());
    auto r = (*with_broken)->Discover();
    REQUIRE(r.ok());
    bool found = false;
    for (const auto& e : r->namespace_errors) {
      if (e.find(dir.file("broken")) != std::string::npos) {
        found = true;
        CHECK(e.find("setns(" + dir.file("broken") + "): Invalid argument") != std::string::npos);
      }
    }
    CHECK(found);
    CHECK(Find(r->topology, na, p + "a1"));
    CHECK(Find(r->topology, nb, p + "b1"));
    CHECK(Find(r->topology, "", p + "h1"));
    int a1_count = 0;  // /var/run/netns and /run/netns are one directory
    for (const auto& n : r->topology.nics) a1_count += n.id.name == p + "a1";
    CHECK(a1_count == 1);
  }

  CHECK(ReadFile("/proc/self/mountinfo") == mounts_before);
}

TEST_CASE("Watch delivers link, address and namespace changes within 1 s", "[kernel_topology]") {
  const std::string p = UniquePrefix();
  const std::string nw = p + "w", nc = p + "c";
  NetnsFixture fx;
  fx.AddNamespace(nw);
  fx.AddVeth(p + "hw", p + "w1", nw);
  fx.SetUp("", p + "hw", true);
  fx.SetUp(nw, p + "w1", true);
  fx.AddAddress(nw, p + "w1", "10.250.9.2/24");

  const std::string mounts_before = ReadFile("/proc/self/mountinfo");
  {
    auto src = KernelTopologySource::Create(OptionsFor(p, {p + "w1=1000"}));
    REQUIRE(src.ok());
    auto first = (*src)->Read();
    REQUIRE(first.ok());
    const Nic* w1 = Find(*first, nw, p + "w1");
    REQUIRE(w1);
    REQUIRE(w1->enabled);
    Deliveries got;
    REQUIRE((*src)->Watch(got.Callback()).ok());
    REQUIRE_FALSE((*src)->Watch(got.Callback()).ok());  // one watcher per source
    auto nic = [&](const Topology& t) { return Find(t, nw, p + "w1"); };
    auto report = [](const char* what, std::chrono::milliseconds took) {
      std::printf("kernel_topology watch: %s after %lld ms\n", what,
                  static_cast<long long>(took.count()));
      CHECK(took.count() >= 0);  // -1: not delivered within 1 s
    };

    auto t0 = Clock::now();
    fx.SetUp(nw, p + "w1", false);
    report("link down",
           got.WaitFor([&](const Topology& t) { return nic(t) && !nic(t)->enabled; }, t0));

    t0 = Clock::now();
    fx.SetUp(nw, p + "w1", true);
    report("link up",
           got.WaitFor([&](const Topology& t) { return nic(t) && nic(t)->enabled; }, t0));

    t0 = Clock::now();
    fx.DelAddress(nw, p + "w1", "10.250.9.2/24");
    report("address removed", got.WaitFor(
                                  [&](const Topology& t) {
                                    return nic(t) && nic(t)->ipv4.empty() && nic(t)->ipv6.empty() &&
                                           nic(t)->enabled;
                                  },
                                  t0));

    t0 = Clock::now();
    fx.AddAddress(nw, p + "w1", "10.250.9.2/24");
    report("address added", got.WaitFor(
                                [&](const Topology& t) {
                                  return nic(t) &&
                                         nic(t)->ipv4 == std::vector<std::string>{"10.250.9.2"};
                                },
                                t0));

    t0 = Clock::now();
    fx.AddNamespace(nc);
    fx.AddVeth(p + "hc", p + "c1", nc);
    fx.SetUp("", p + "hc", true);
    fx.SetUp(nc, p + "c1", true);
    fx.AddAddress(nc, p + "c1", "10.250.10.2/24");
    auto c1 = [&](const Topology& t) { return Find(t, nc, p + "c1"); };
    report("new namespace", got.WaitFor(
                                [&](const Topology& t) {
                                  return c1(t) && c1(t)->enabled &&
                                         c1(t)->ipv4 == std::vector<std::string>{"10.250.10.2"} &&
                                         c1(t)->netns_path == "/var/run/netns/" + nc;
                                },
                                t0));

    t0 = Clock::now();
    Sh("ip netns del " + nc);
    report("namespace deleted", got.WaitFor(
                                    [&](const Topology& t) {
                                      // The namespace's link goes, and so does the host end once
                                      // the namespace is freed (it would not be freed if the
                                      // watcher kept a socket open in it).
                                      return !c1(t) && !Find(t, "", p + "hc") && nic(t);
                                    },
                                    t0, std::chrono::seconds(3)));
  }
  // The source is gone: its thread joined, no mount left behind.
  CHECK(ReadFile("/proc/self/mountinfo") == mounts_before);
}

TEST_CASE("IsGlobalUnicast follows Go's net.IP.IsGlobalUnicast", "[kernel_topology]") {
  using netqos::topology::IsGlobalUnicast;
  auto v4 = [](uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
    const uint8_t x[4] = {a, b, c, d};
    return IsGlobalUnicast(x, 4);
  };
  auto v6 = [](const char* text) {
    uint8_t x[16];
    REQUIRE(::inet_pton(AF_INET6, text, x) == 1);
    return IsGlobalUnicast(x, 16);
  };
  CHECK(v4(10, 250, 1, 2));
  CHECK(v4(192, 168, 0, 1));
  CHECK_FALSE(v4(0, 0, 0, 0));
  CHECK_FALSE(v4(127, 0, 0, 1));
  CHECK_FALSE(v4(169, 254, 3, 4));
  CHECK_FALSE(v4(224, 0, 0, 1));
  CHECK_FALSE(v4(239, 1, 1, 1));
  CHECK_FALSE(v4(255, 255, 255, 255));
  CHECK(v6("fd00:250::2"));
  CHECK(v6("2001:db8::1"));
  CHECK_FALSE(v6("::"));
  CHECK_FALSE(v6("::1"));
  CHECK_FALSE(v6("fe80::1"));
  CHECK_FALSE(v6("febf::1"));
  CHECK(v6("fec0::1"));  // site-local is global unicast for Go
  CHECK_FALSE(v6("ff02::1"));
  CHECK(v6("::ffff:10.1.2.3"));
  CHECK_FALSE(v6("::ffff:127.0.0.1"));
  const uint8_t odd[3] = {10, 0, 0};
  CHECK_FALSE(IsGlobalUnicast(odd, 3));
}

TEST_CASE("Watch picks up a netns directory created after it started", "[kernel_topology]") {
  const std::string p = UniquePrefix();
  const std::string nd = p + "d";
  NetnsFixture fx;
  fx.AddNamespace(nd);
  fx.AddVeth(p + "hd", p + "d1", nd);
  fx.SetUp("", p + "hd", true);
  fx.SetUp(nd, p + "d1", true);
  fx.AddAddress(nd, p + "d1", "10.250.11.2/24");

  TempDir tmp;
  const std::string dir = tmp.file("netns");  // does not exist yet
  const std::string bind = dir + "/mine";
  struct Unmount {
    std::string path;
    ~Unmount() { netqos::testing::ShOk("umount " + path); }
  } unmount{bind};

  auto o = OptionsFor(p);
  o.netns_dirs = {dir};
  auto src = KernelTopologySource::Create(o);
  REQUIRE(src.ok());
  auto first = (*src)->Read();
  REQUIRE(first.ok());
  CHECK_FALSE(Find(*first, "mine", p + "d1"));
  Deliveries got;
  REQUIRE((*src)->Watch(got.Callback()).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the watcher settle

  auto t0 = Clock::now();
  Sh("mkdir " + dir + " && touch " + bind + " && mount --bind /var/run/netns/" + nd + " " + bind);
  auto took = got.WaitFor(
      [&](const Topology& t) {
        const Nic* d1 = Find(t, "mine", p + "d1");
        return d1 && d1->netns_path == bind && d1->ipv4 == std::vector<std::string>{"10.250.11.2"};
      },
      t0);
  std::printf("kernel_topology watch: namespace in a new directory after %lld ms\n",
              static_cast<long long>(took.count()));
  CHECK(took.count() >= 0);
}

TEST_CASE("A host-namespace failure fails discovery", "[kernel_topology]") {
  TempDir empty;  // no devices/ and no class/net below it
  KernelTopologySource::Options o;
  o.sysfs_root = empty.path();
  auto src = KernelTopologySource::Create(o);
  REQUIRE_FALSE(src.ok());
  INFO(src.status().message());
  CHECK(src.status().message().find(empty.path()) != std::string::npos);
}
