// netqosd without a topology file, on a topology this test builds: a veth pair whose host end is
// in the host namespace and whose peer is in a named namespace. The daemon must report what
// `ip -n <ns> -br addr` shows, serve hints and allocations on those NICs, and react to a link
// going down (or losing its address) within a second.
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "support/netns.h"
#include "support/netqosd_launcher.h"
#include "support/process.h"
#include "support/temp_dir.h"

using netqos::testing::NetnsFixture;
using nlohmann::json;

namespace {

// `ip [-n ns] args...`
std::vector<std::string> IpArgv(const std::string& ns, std::vector<std::string> args) {
  std::vector<std::string> argv = {"/usr/sbin/ip"};
  if (!ns.empty()) argv.insert(argv.end(), {"-n", ns});
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// The addresses `ip -br addr` lists for a device, in order ("10.0.0.1/24" -> "10.0.0.1").
std::vector<std::string> IpBriefAddresses(const std::string& ns, const std::string& dev,
                                          const std::string& scratch) {
  auto r = netqos::testing::RunCommand(IpArgv(ns, {"-br", "addr", "show", "dev", dev}), scratch);
  std::istringstream in(r.output);
  std::string name, state, item;
  in >> name >> state;
  std::vector<std::string> out;
  while (in >> item) {
    auto slash = item.find('/');
    std::string ip = item.substr(0, slash);
    if (ip.rfind("fe80:", 0) == 0) continue;  // link-local: not a NIC address for netqos
    out.push_back(ip);
  }
  return out;
}

int IfIndexIn(const std::string& ns, const std::string& dev, const std::string& scratch) {
  auto r = netqos::testing::RunCommand(IpArgv(ns, {"-o", "link", "show", dev}), scratch);
  return std::atoi(r.output.c_str());
}

class Daemon {
 public:
  Daemon(const std::string& root, const std::vector<std::string>& extra)
      : root_(root), dirs_{root + "/sock", root + "/state", root + "/shm-state"} {
    std::vector<std::string> argv = {NETQOSD_PATH, "--log-level=debug", "--nic-selection=first",
                                     "--enforcement=none"};
    const auto dirs = dirs_.Flags();
    argv.insert(argv.end(), dirs.begin(), dirs.end());
    argv.insert(argv.end(), extra.begin(), extra.end());
    proc_ = netqos::testing::StartNetqosd(
        argv, root + "/netqosd.log", [this] { return Ctl({"plugin-info"}).exit_code == 0; },
        {std::chrono::seconds(10), std::chrono::milliseconds(50)});
  }
  netqos::testing::CommandResult Ctl(std::vector<std::string> args) {
    args.insert(args.begin(), {NETQOSCTL_PATH, "--socket=" + dirs_.SocketPath()});
    return netqos::testing::RunCommand(args, root_ + "/ctl.out");
  }
  json CtlJson(std::vector<std::string> args) {
    args.push_back("--json");
    auto r = Ctl(args);
    if (r.exit_code != 0) throw std::runtime_error("netqosctl failed: " + r.output);
    return json::parse(r.output);
  }
  std::string Log() { return proc_->Log(); }

 private:
  std::string root_;
  netqos::testing::NetqosdDirs dirs_;
  std::unique_ptr<netqos::testing::DaemonProcess> proc_;
};

json FindNic(const json& topo, const std::string& netns, const std::string& name) {
  for (const auto& n : topo["nics"]) {
    // The host's NICs have no netns: null in the JSON of netqosctl and netqosd --print-topology.
    const bool same_netns = netns.empty() ? n["netns"].is_null() : n["netns"] == netns;
    if (same_netns && n["name"] == name) return n;
  }
  return nullptr;
}

// Polls until pred(topology json) holds; returns the time it took, or -1 ms after `limit`.
std::chrono::milliseconds WaitTopology(Daemon& d, const std::function<bool(const json&)>& pred,
                                       std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < limit) {
    if (pred(d.CtlJson({"topology"})))
      return std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - t0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return std::chrono::milliseconds(-1);
}

}  // namespace

TEST_CASE("netqosd discovers host and namespace NICs from the kernel and follows link changes") {
  const std::string p = netqos::testing::UniquePrefix();
  const std::string ns = p + "-a";
  const std::string host_end = p + "h0", ns_end = p + "n0";
  NetnsFixture fx;
  fx.AddNamespace(ns);
  fx.AddVeth(host_end, ns_end, ns);
  fx.AddAddress("", host_end, "10.251.7.1/24");
  fx.AddAddress("", host_end, "fd00:251::1/64");
  fx.AddAddress(ns, ns_end, "10.251.7.2/24");
  fx.SetUp("", host_end, true);
  fx.SetUp(ns, ns_end, true);

  netqos::testing::TempDir dir;
  Daemon d(dir.path(), {"--machine-net-multi-ns", "--machine-net-ns-dir=/var/run/netns",
                        "--nic-allow=" + p + "*", "--nic-speed-override=" + host_end + "=1000",
                        "--nic-speed-override=" + ns_end + "=2000"});

  // Both ends are up once the pair is configured; wait for the kernel to settle.
  REQUIRE(WaitTopology(d, [&](const json& t) {
            auto a = FindNic(t, "", host_end), b = FindNic(t, ns, ns_end);
            return !a.is_null() && !b.is_null() && a["healthy"] == true && b["healthy"] == true;
          }).count() >= 0);
  const json topo = d.CtlJson({"topology"});
  INFO(topo.dump(2));
  CHECK(topo["source"].get<std::string>().find("kernel") != std::string::npos);

  const json h = FindNic(topo, "", host_end);
  CHECK(h["ifindex"] == IfIndexIn("", host_end, dir.file("ip.out")));
  CHECK(h["speed_mbps"] == 1000);
  CHECK(h["netns_path"].is_null());
  std::vector<std::string> h_ips = h["ipv4"];
  for (const auto& ip : h["ipv6"]) h_ips.push_back(ip);
  CHECK(h_ips == IpBriefAddresses("", host_end, dir.file("ip.out")));

  const json n = FindNic(topo, ns, ns_end);
  CHECK(n["ifindex"] == IfIndexIn(ns, ns_end, dir.file("ip.out")));
  CHECK(n["speed_mbps"] == 2000);
  CHECK(n["netns_path"] == "/var/run/netns/" + ns);
  CHECK(n["ipv4"] == json::array({"10.251.7.2"}));
  CHECK(std::vector<std::string>(n["ipv4"]) == IpBriefAddresses(ns, ns_end, dir.file("ip.out")));
  // Besides the allowed links, only PCI-backed ones count: never lo or other virtual links.
  for (const auto& nic : topo["nics"]) {
    const std::string name = nic["name"];
    INFO(name);
    CHECK((name.rfind(p, 0) == 0 || !nic["pci_address"].get<std::string>().empty()));
    CHECK(name != "lo");
  }

  // Hints and allocations on the discovered NICs: anti_host_ns can only use the namespace end.
  const std::string anti =
      R"(katalyst.kubewharf.io/network_enhancement={"namespace_type":"anti_host_ns"})";
  auto hints = d.CtlJson({"hints", "--pod-uid=u1", "--pod-name=p", "--container=c", "--mbps=500",
                          "--annotation=" + anti});
  CHECK(hints["resource_hints"]["resource.katalyst.kubewharf.io/net_bandwidth"].size() == 1);
  auto alloc = d.CtlJson({"allocate", "--pod-uid=u1", "--pod-name=p", "--container=c", "--mbps=500",
                          "--annotation=" + anti});
  INFO(alloc.dump(2));
  const auto& info = alloc["allocation_result"]["resource.katalyst.kubewharf.io/net_bandwidth"];
  CHECK(info["annotations"]["qrm.katalyst.kubewharf.io/nic_name"] == ns_end);
  CHECK(info["annotations"]["qrm.katalyst.kubewharf.io/netns_path"] == "/var/run/netns/" + ns);
  CHECK(info["annotations"]["qrm.katalyst.kubewharf.io/inet_addr"] == "10.251.7.2");

  // The namespace end goes down: unhealthy within a second, no new hints, allocation kept.
  fx.SetUp(ns, ns_end, false);
  auto took = WaitTopology(d, [&](const json& t) {
    auto x = FindNic(t, ns, ns_end);
    return !x.is_null() && x["healthy"] == false;
  });
  INFO("link down noticed after " << took.count() << " ms");
  CHECK(took.count() >= 0);
  CHECK(took.count() < 1000);
  CHECK(FindNic(d.CtlJson({"topology"}), ns, ns_end)["unhealthy_reason"] == "link disabled");
  hints = d.CtlJson({"hints", "--pod-uid=u2", "--pod-name=p", "--container=c", "--mbps=500",
                     "--annotation=" + anti});
  CHECK(hints["resource_hints"]["resource.katalyst.kubewharf.io/net_bandwidth"] == json::array());
  auto allocs = d.CtlJson({"allocations"});
  CHECK(allocs["allocations"].size() == 1);

  // Back up: healthy again.
  fx.SetUp(ns, ns_end, true);
  took = WaitTopology(d, [&](const json& t) {
    auto x = FindNic(t, ns, ns_end);
    return !x.is_null() && x["healthy"] == true;
  });
  CHECK(took.count() >= 0);
  CHECK(took.count() < 1000);

  // The host end loses its IPv4 and IPv6 addresses: unhealthy ("no IP address").
  fx.DelAddress("", host_end, "10.251.7.1/24");
  fx.DelAddress("", host_end, "fd00:251::1/64");
  took = WaitTopology(d, [&](const json& t) {
    auto x = FindNic(t, "", host_end);
    return !x.is_null() && x["healthy"] == false && x["unhealthy_reason"] == "no IP address";
  });
  CHECK(took.count() >= 0);
  CHECK(took.count() < 1000);
}

TEST_CASE("netqosd --print-topology discovers once and exits") {
  const std::string p = netqos::testing::UniquePrefix();
  const std::string host_end = p + "h1", peer = p + "p1";
  NetnsFixture fx;
  fx.AddVeth(host_end, peer);
  fx.AddAddress("", host_end, "10.251.8.1/24");
  fx.SetUp("", host_end, true);
  fx.SetUp("", peer, true);
  netqos::testing::TempDir dir;
  auto r = netqos::testing::RunCommand(
      {NETQOSD_PATH, "--print-topology", "--json", "--nic-allow=" + host_end,
       "--nic-speed-override=" + host_end + "=10000"},
      dir.file("out"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto doc = json::parse(r.output.substr(r.output.find('{')));
  auto nic = FindNic(doc, "", host_end);
  REQUIRE_FALSE(nic.is_null());
  CHECK(nic["speed_mbps"] == 10000);
  CHECK(nic["ipv4"] == json::array({"10.251.8.1"}));
  CHECK(FindNic(doc, "", peer).is_null());  // not allowed: a virtual link

  auto table = netqos::testing::RunCommand(
      {NETQOSD_PATH, "--print-topology", "--nic-allow=" + host_end}, dir.file("out2"));
  CHECK(table.exit_code == 0);
  CHECK_THAT(table.output, Catch::Contains(host_end));
  CHECK_THAT(table.output, Catch::Contains("links not counted as NICs"));
  CHECK_THAT(table.output, Catch::Contains(peer));
}
