// The real netqosd with enforcement on, driven like a kubelet would drive it: allocations through
// its gRPC socket (netqosctl), the pod list from a file:// PodList this test writes and rewrites,
// container cgroups under an extra kubepods root (--addition-cgroup-paths), a veth into a network
// namespace as the only NIC, a private bpffs for the pins, temp dirs for socket and state. What is
// asserted is what the daemon does to the kernel: the pinned class map (read with libbpf), the HTB
// classes on the veth and its IFB (tc), the bytes those classes send while iperf3 runs, and its
// log. Every object is removed on scope exit (also when a test fails) and each case checks at the
// end that `netqosd --uninstall` left nothing behind. Root only.
#include <bpf/bpf.h>
#include <net/if.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "netqos_abi.h"
#include "support/bpffs_fixture.h"
#include "support/cgroup_fixture.h"
#include "support/files.h"
#include "support/netns.h"
#include "support/process.h"
#include "support/temp_dir.h"
#include "support/traffic.h"

namespace {

using namespace std::chrono_literals;
using netqos::testing::CaptureOutput;
using netqos::testing::CommandResult;
using netqos::testing::DaemonProcess;
using netqos::testing::Iperf3Client;
using netqos::testing::Iperf3ClientOptions;
using netqos::testing::Iperf3Server;
using netqos::testing::NetnsFixture;
using netqos::testing::PrivateBpffs;
using netqos::testing::RunCommand;
using netqos::testing::ShOk;
using netqos::testing::TcClasses;
using netqos::testing::TempDir;
using netqos::testing::TestCgroup;
using netqos::testing::TrafficClock;
using netqos::testing::UniquePrefix;
using netqos::testing::WireRate;
using nlohmann::json;
using Ms = std::chrono::milliseconds;

constexpr char kForwardSysctl[] = "/proc/sys/net/ipv4/ip_forward_update_priority";
constexpr char kClassIdKey[] =
    "katalyst.kubewharf.io/net_class_id";  // kDefaultNetClassAnnotationKey
constexpr char kQosKey[] = "katalyst.kubewharf.io/qos_level";
constexpr double kCapTolerance = 0.02;
constexpr auto kWarmUp = 1200ms;  // past HTB's initial burst and TCP slow start
constexpr auto kWindow = 3000ms;

// ---------------------------------------------------------------------------------------------
// Small helpers

double Since(TrafficClock::time_point t0) {
  return std::chrono::duration<double, std::milli>(TrafficClock::now() - t0).count();
}

// Polls `pred` every 10 ms; the milliseconds it took, or nullopt after `limit`.
std::optional<double> WaitFor(const std::function<bool()>& pred, Ms limit,
                              TrafficClock::time_point t0 = TrafficClock::now()) {
  const auto deadline = t0 + limit;
  for (;;) {
    if (pred()) return Since(t0);
    if (TrafficClock::now() > deadline) return std::nullopt;
    std::this_thread::sleep_for(10ms);
  }
}

int ReadIntFile(const std::string& path) {
  std::ifstream in(path);
  int v = -1;
  in >> v;
  return v;
}

void WriteIntFile(const std::string& path, int v) {
  std::ofstream out(path);
  out << v << std::flush;
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Log lines containing every one of `needles`.
size_t CountLines(const std::string& log, const std::vector<std::string>& needles) {
  std::istringstream in(log);
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) {
    bool all = true;
    for (const auto& w : needles) all = all && line.find(w) != std::string::npos;
    if (all) ++n;
  }
  return n;
}

// "10:100" as tc prints a class handle (hex major and minor).
std::string HandleText(uint32_t handle) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%x:%x", handle >> 16, handle & 0xffffu);
  return buf;
}

// A container leaf: 10:<minor> with minor in the container range (10:100 and up); the level
// classes and their default leaves (10:x0, 10:x1) are below it.
bool IsContainerLeaf(uint32_t priority) {
  return (priority >> 16) == 0x10 && (priority & 0xffffu) >= 0x100 &&
         (priority & 0xffffu) != 0xffff;
}

uint64_t InodeOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw std::runtime_error("stat " + path);
  return static_cast<uint64_t>(st.st_ino);
}

void MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    throw std::runtime_error("mkdir " + path + ": " + std::strerror(errno));
  }
}

// ---------------------------------------------------------------------------------------------
// What the kubelet would list (GET /pods), written as a file:// PodList.

struct FakeContainer {
  std::string name;
  std::string id;  // lowercase hex; "" = not started (no containerID in the status)
};

struct FakePod {
  std::string uid;  // lowercase hex with dashes
  std::string name;
  std::map<std::string, std::string> annotations;
  std::vector<FakeContainer> containers;
  std::string ns = "netqos-test";
};

std::string PodUid(int n) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%08x-0000-4000-8000-%012x", n,
                static_cast<unsigned>(::getpid()));
  return buf;
}

std::string ContainerId(int n) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "c0ffee%02x%08x", n, static_cast<unsigned>(::getpid()));
  return buf;
}

FakePod MakePod(int n, const std::string& container_name, bool started = true) {
  FakePod p;
  p.uid = PodUid(n);
  p.name = "pod-" + std::to_string(n);
  p.annotations[kQosKey] = "shared_cores";
  p.containers.push_back({container_name, started ? ContainerId(n) : ""});
  return p;
}

json PodListJson(const std::vector<FakePod>& pods) {
  json items = json::array();
  for (const auto& p : pods) {
    json statuses = json::array();
    for (const auto& c : p.containers) {
      json s = {{"name", c.name}};
      if (!c.id.empty()) s["containerID"] = "containerd://" + c.id;
      statuses.push_back(s);
    }
    items.push_back(
        {{"metadata",
          {{"uid", p.uid}, {"namespace", p.ns}, {"name", p.name}, {"annotations", p.annotations}}},
         {"status", {{"qosClass", "Burstable"}, {"containerStatuses", statuses}}}});
  }
  return {{"kind", "PodList"}, {"apiVersion", "v1"}, {"items", items}};
}

// ---------------------------------------------------------------------------------------------
// The fixture

struct Veth {
  std::string host, peer, host_ip, peer_ip;
  int ifindex = 0;
  std::string Ifb() const { return "nqifb" + std::to_string(ifindex); }
};

// One test's world. Teardown() (also run by the destructor, so a failing test cleans up too) kills
// iperf3 and netqosd, runs `netqosd --uninstall` with the same pin and state dirs, removes the
// cgroups (killing what runs in them), the namespace and veths, and unmounts the bpffs; it returns
// what it found left behind, which a test that reaches its end asserts is nothing.
class DaemonEnv {
 public:
  enum class Driver { kCgroupfs, kSystemd };

  // `subnet` (1..9) keeps addresses apart between cases; `veths` veth pairs host <-> namespace.
  DaemonEnv(const std::string& tag, int subnet, int veths = 1, Driver driver = Driver::kCgroupfs)
      : driver_(driver),
        bpffs_(std::make_unique<PrivateBpffs>()),
        fx_(std::make_unique<NetnsFixture>()),
        pin_dir_(bpffs_->PinDir()),
        forward_original_(ReadIntFile(kForwardSysctl)),
        forward_before_(forward_original_) {
    const std::string p = UniquePrefix() + "d" + tag;
    ns_ = p;
    fx_->AddNamespace(ns_);
    fx_->SetUp(ns_, "lo", true);
    for (int i = 0; i < veths; ++i) {
      Veth v;
      v.host = p + "h" + std::to_string(i);
      v.peer = p + "p" + std::to_string(i);
      const std::string net = "10.23" + std::to_string(subnet) + "." +
                              std::to_string(::getpid() % 100 + 20 + 100 * i) + ".";
      v.host_ip = net + "1";
      v.peer_ip = net + "2";
      fx_->AddVeth(v.host, v.peer, ns_);
      fx_->AddAddress("", v.host, v.host_ip + "/24");
      fx_->AddAddress(ns_, v.peer, v.peer_ip + "/24");
      fx_->SetUp("", v.host, true);
      fx_->SetUp(ns_, v.peer, true);
      v.ifindex = static_cast<int>(::if_nametoindex(v.host.c_str()));
      if (v.ifindex <= 0) throw std::runtime_error("no ifindex for " + v.host);
      veths_.push_back(v);
    }
    root_name_ = "netqos-dtest-" + std::to_string(::getpid()) + tag;
    if (driver_ == Driver::kSystemd)
      root_name_ = "nqdtest" + std::to_string(::getpid()) + tag + ".slice";
    cg_root_ = std::make_unique<TestCgroup>(root_name_);
    mount_ = TestCgroup::Cgroup2Mount();
    WritePods();
  }
  // A test that did not reach its own Teardown failed: show the end of the daemon's log.
  ~DaemonEnv() {
    try {
      const bool failed = !uninstalled_;
      (void)Teardown();
      if (failed) {
        const std::string log = Log();
        const size_t from = log.size() > 12000 ? log.find('\n', log.size() - 12000) : 0;
        std::printf("--- netqosd log (tail) ---\n%s\n--- end of log ---\n",
                    log.substr(from == std::string::npos ? 0 : from).c_str());
      }
    } catch (...) {
    }
  }
  DaemonEnv(const DaemonEnv&) = delete;
  DaemonEnv& operator=(const DaemonEnv&) = delete;

  const Veth& veth(size_t i = 0) const { return veths_.at(i); }
  const std::string& ns() const { return ns_; }
  const std::string& PinDir() const { return pin_dir_; }
  std::string StateDir() const { return dir_.file("state"); }
  std::string Socket() const { return dir_.file("sock") + "/qrm_network_plugin_static.sock"; }
  std::string PodsFile() const { return dir_.file("pods.json"); }
  std::string Log() const { return daemon_ ? daemon_->Log() : log_; }
  bool DaemonRunning() { return daemon_ && daemon_->Running(); }

  // --- pods and cgroups ---
  std::vector<FakePod> pods;

  // Rewrites pods.json from `pods`, atomically (the daemon never reads half a file).
  void WritePods() {
    const std::string tmp = PodsFile() + ".tmp";
    netqos::testing::WriteFile(tmp, PodListJson(pods).dump(1));
    std::filesystem::rename(tmp, PodsFile());
  }
  void DeletePods() { std::filesystem::remove(PodsFile()); }

  std::string PodDir(const FakePod& p) const {
    const std::string root = mount_ + "/" + root_name_;
    if (driver_ == Driver::kCgroupfs) return root + "/pod" + p.uid;
    std::string uid_ = p.uid;
    for (char& c : uid_) c = c == '-' ? '_' : c;
    const std::string stem = root_name_.substr(0, root_name_.size() - 6);
    return root + "/" + stem + "-pod" + uid_ + ".slice";
  }
  std::string ContainerDir(const FakePod& p, const std::string& id) const {
    return PodDir(p) +
           (driver_ == Driver::kCgroupfs ? "/" + id : "/cri-containerd-" + id + ".scope");
  }
  std::string ContainerDir(const FakePod& p) const {
    return ContainerDir(p, p.containers.at(0).id);
  }
  // mkdir of the pod's and the container's cgroups (as the runtime does when it starts it).
  std::string MakeCgroup(const FakePod& p, const std::string& id) {
    MakeDir(PodDir(p));
    const std::string dir = ContainerDir(p, id);
    MakeDir(dir);
    return dir;
  }
  std::string MakeCgroup(const FakePod& p) { return MakeCgroup(p, p.containers.at(0).id); }

  // Sets net.ipv4.ip_forward_update_priority before the daemon starts (which sets it to 0 and
  // records the old value for --uninstall); the host's own value is put back at the end.
  void SetForwardPriorityBefore(int value) {
    WriteIntFile(kForwardSysctl, value);
    forward_before_ = ReadIntFile(kForwardSysctl);
  }

  // --- the daemon ---
  std::string nic_selection = "first";  // which of equally good NICs an allocation gets
  void StartDaemon(const std::vector<std::string>& extra = {},
                   const std::vector<std::string>& extra_enforce = {}) {
    std::set<std::string> ours;
    std::string allow, enforce;
    for (const auto& v : veths_) {
      ours.insert(v.host);
      allow += (allow.empty() ? "" : ",") + v.host;
    }
    enforce = allow;
    for (const auto& e : extra_enforce) enforce += "," + e;
    enforce_ = enforce;
    std::string deny;
    for (const auto& link : netqos::testing::ListDir("/sys/class/net")) {
      if (ours.count(link) == 0) deny += (deny.empty() ? "" : ",") + link;
    }
    std::vector<std::string> argv = {NETQOSD_PATH,
                                     "--qrm-socket-dirs=" + dir_.file("sock"),
                                     "--qrm-state-dir=" + StateDir(),
                                     "--bpf-pin-dir=" + PinDir(),
                                     "--kubelet-pods-url=file://" + PodsFile(),
                                     "--addition-cgroup-paths=/" + root_name_,
                                     "--nic-allow=" + allow,
                                     "--nic-deny=" + deny,
                                     "--enforce-nics=" + enforce,
                                     "--nic-selection=" + nic_selection,
                                     "--enforcement-resync-period=2"};
    if (driver_ == Driver::kSystemd) argv.push_back("--cgroup-driver=systemd");
    argv.insert(argv.end(), extra.begin(), extra.end());
    daemon_ = std::make_unique<DaemonProcess>(argv, dir_.file("netqosd.log"));
    const auto t0 = TrafficClock::now();
    while (Since(t0) < 15000) {
      if (Ctl({"plugin-info"}).exit_code == 0) {
        std::printf("daemon: netqosd serving after %.0f ms\n", Since(t0));
        return;
      }
      if (!daemon_->Running()) break;
      std::this_thread::sleep_for(50ms);
    }
    throw std::runtime_error("netqosd did not start:\n" + daemon_->Log());
  }

  CommandResult Ctl(std::vector<std::string> args) {
    args.insert(args.begin(), {NETQOSCTL_PATH, "--socket=" + Socket()});
    return RunCommand(args, dir_.file("ctl.out"));
  }

  // Allocate through gRPC, as the kubelet does before it starts the container.
  json Allocate(const FakePod& p, const std::string& container, int mbps) {
    auto r = Ctl({"allocate", "--pod-uid=" + p.uid, "--pod-namespace=" + p.ns,
                  "--pod-name=" + p.name, "--container=" + container, "--qos=shared_cores",
                  "--mbps=" + std::to_string(mbps), "--json"});
    if (r.exit_code != 0) throw std::runtime_error("netqosctl allocate failed: " + r.output);
    return json::parse(r.output);
  }
  void RemovePod(const FakePod& p) {
    auto r = Ctl({"remove", "--pod-uid=" + p.uid});
    if (r.exit_code != 0) throw std::runtime_error("netqosctl remove failed: " + r.output);
  }

  // --- the pinned class map, read with libbpf (value layout: bpf/netqos_abi.h) ---
  std::optional<netqos_class> Class(uint64_t cgroup_id) const {
    const int fd = bpf_obj_get((PinDir() + "/" NETQOS_STR(NETQOS_MAP_CLASS)).c_str());
    if (fd < 0) return std::nullopt;
    netqos_class v{};
    const int rc = bpf_map_lookup_elem(fd, &cgroup_id, &v);
    ::close(fd);
    if (rc != 0) return std::nullopt;
    return v;
  }
  std::optional<netqos_class> ClassOf(const std::string& cgroup_dir) const {
    return Class(InodeOf(cgroup_dir));
  }
  // Waits for the cgroup's entry to carry a container leaf; the latency in ms, or nullopt.
  std::optional<double> WaitLeaf(const std::string& cgroup_dir, Ms limit,
                                 TrafficClock::time_point t0 = TrafficClock::now()) const {
    const uint64_t id = InodeOf(cgroup_dir);
    return WaitFor(
        [&] {
          auto c = Class(id);
          return c && IsContainerLeaf(c->priority);
        },
        limit, t0);
  }

  // --- traffic (owned here so Teardown kills it first) ---
  Iperf3Server& Server(size_t veth_index, uint16_t port) {
    servers_.push_back(std::make_unique<Iperf3Server>(ns_, veths_.at(veth_index).peer_ip, port));
    return *servers_.back();
  }
  Iperf3Client& Client(const std::string& cgroup, size_t veth_index, uint16_t port, int seconds,
                       bool reverse, std::vector<std::string> extra = {}) {
    clients_.push_back(std::make_unique<Iperf3Client>(
        Iperf3ClientOptions{.server_ip = veths_.at(veth_index).peer_ip,
                            .port = port,
                            .seconds = seconds,
                            .reverse = reverse,
                            .cgroup = cgroup,
                            .netns = "",
                            .extra_args = std::move(extra)}));
    return *clients_.back();
  }
  void StopTraffic() {
    clients_.clear();
    servers_.clear();
  }

  // Everything down, in dependency order; returns what was left behind ("" = nothing).
  std::string Teardown() {
    std::string left = Uninstall();  // first: it needs the pins, the veths and the namespace
    return left + RemoveAll();
  }

  // Stops traffic and netqosd, runs `netqosd --uninstall`, and reports what the uninstall left:
  // pins, IFBs, HTB roots, ingress filters, a changed ip_forward_update_priority.
  std::string Uninstall() {
    if (uninstalled_) return "";
    uninstalled_ = true;
    std::string left;
    StopTraffic();
    if (daemon_) {
      const int code = daemon_->Stop(SIGTERM, std::chrono::seconds(10));
      if (code != 0) left += "netqosd exited " + std::to_string(code) + " on SIGTERM; ";
      log_ = daemon_->Log();
      daemon_.reset();  // SIGKILLs it if it did not stop
      // NETQOS_TEST_LOG_DIR=<dir> keeps each daemon's log (named after the namespace).
      if (const char* keep = std::getenv("NETQOS_TEST_LOG_DIR"); keep != nullptr && *keep != 0) {
        netqos::testing::WriteFile(std::string(keep) + "/" + ns_ + "-netqosd.log", log_);
      }
    }
    std::vector<std::string> argv = {NETQOSD_PATH, "--uninstall", "--bpf-pin-dir=" + PinDir(),
                                     "--qrm-state-dir=" + StateDir()};
    if (!enforce_.empty()) argv.push_back("--enforce-nics=" + enforce_);
    auto un = RunCommand(argv, dir_.file("uninstall.out"));
    if (un.exit_code != 0) {
      left +=
          "netqosd --uninstall exited " + std::to_string(un.exit_code) + ": " + un.output + "; ";
    }
    std::error_code ec;
    if (std::filesystem::exists(PinDir(), ec) && !std::filesystem::is_empty(PinDir(), ec)) {
      left += "pins left in " + PinDir() + "; ";
    }
    // Every IFB the daemon says it created (and the ones it should have) must be gone.
    std::set<std::string> ifbs;
    for (const auto& v : veths_) ifbs.insert(v.Ifb());
    for (size_t at = log_.find("created ifb device name="); at != std::string::npos;
         at = log_.find("created ifb device name=", at + 1)) {
      const size_t from = at + std::strlen("created ifb device name=");
      ifbs.insert(log_.substr(from, log_.find_first_of(" \n", from) - from));
    }
    for (const auto& ifb : ifbs) {
      if (ShOk("ip link show dev " + ifb)) left += ifb + " left; ";
    }
    for (const auto& v : veths_) {
      if (CaptureOutput("tc qdisc show dev " + v.host).find("htb") != std::string::npos) {
        left += "htb left on " + v.host + "; ";
      }
      if (!CaptureOutput("tc filter show dev " + v.host + " ingress").empty()) {
        left += "ingress filter left on " + v.host + "; ";
      }
    }
    const int forward_now = ReadIntFile(kForwardSysctl);
    if (forward_now != forward_before_) {
      left += "ip_forward_update_priority " + std::to_string(forward_now) + ", was " +
              std::to_string(forward_before_) + "; ";
    }
    if (forward_now != forward_original_) WriteIntFile(kForwardSysctl, forward_original_);
    // Safety net after a failed uninstall: the IFBs live in the host namespace.
    for (const auto& ifb : ifbs) ShOk("ip link del " + ifb);
    return left;
  }

  // Removes the cgroups (killing what runs in them), the namespace and veths, the bpffs.
  std::string RemoveAll() {
    if (removed_) return "";
    removed_ = true;
    std::string left;
    std::error_code ec;
    const std::string root_dir = cg_root_ ? cg_root_->Path() : "";
    cg_root_.reset();
    if (!root_dir.empty() && std::filesystem::exists(root_dir, ec)) left += root_dir + " left; ";
    fx_.reset();
    if (ShOk("ip netns pids " + ns_)) left += "netns " + ns_ + " left; ";
    for (const auto& v : veths_) {
      if (ShOk("ip link show dev " + v.host)) left += v.host + " left; ";
    }
    const std::string bpffs_root = bpffs_->Root();
    bpffs_.reset();
    if (CaptureOutput("cat /proc/self/mounts").find(bpffs_root + " ") != std::string::npos) {
      left += "bpffs " + bpffs_root + " still mounted; ";
    }
    return left;
  }

 private:
  Driver driver_;
  TempDir dir_;  // declared first of the owned objects: destroyed last (holds the log)
  std::unique_ptr<PrivateBpffs> bpffs_;
  std::unique_ptr<NetnsFixture> fx_;
  std::string pin_dir_;
  int forward_original_ = -1;  // the host's value, put back at the end whatever happened
  int forward_before_ = -1;    // the value the daemon found, which --uninstall must restore
  std::string ns_;
  std::vector<Veth> veths_;
  std::string mount_;
  std::string root_name_;
  std::unique_ptr<TestCgroup> cg_root_;
  std::unique_ptr<DaemonProcess> daemon_;
  std::string enforce_;
  std::string log_;
  std::vector<std::unique_ptr<Iperf3Server>> servers_;
  std::vector<std::unique_ptr<Iperf3Client>> clients_;
  bool uninstalled_ = false;
  bool removed_ = false;
};

// The NIC an allocation landed on (its nic_name annotation).
std::string AllocatedNic(const json& alloc) {
  return alloc.at("allocation_result")
      .at("resource.katalyst.kubewharf.io/net_bandwidth")
      .at("annotations")
      .value("qrm.katalyst.kubewharf.io/nic_name", "");
}

bool Within(double measured, double cap) {
  return measured >= cap * (1 - kCapTolerance) && measured <= cap * (1 + kCapTolerance);
}

// Measures every rate of `w` over kWindow; if none is above its cap but some is below (a sender
// starved of CPU on a small machine, not an enforcement error), measures one more window.
void MeasureCaps(WireRate& w, const std::map<std::string, double>& caps) {
  w.Measure(kWindow);
  bool above = false, below = false;
  for (const auto& [name, cap] : caps) {
    above = above || w.Mbps(name) > cap * (1 + kCapTolerance);
    below = below || w.Mbps(name) < cap * (1 - kCapTolerance);
  }
  if (below && !above) {
    std::printf("  below a cap (senders not saturating?), measuring one more window\n");
    w.Measure(kWindow);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------

TEST_CASE(
    "daemon enforcement: a container cgroup created after its Allocate is classified within 2 s",
    "[enforcement]") {
  DaemonEnv env("a", 1);
  // Pod 1: the kubelet already lists the container id, the runtime has not created the cgroup.
  // Pod 2: the kubelet lists the pod but not the container yet (no containerID).
  env.pods = {MakePod(1, "app"), MakePod(2, "app", /*started=*/false)};
  env.WritePods();
  env.StartDaemon();

  const FakePod& p1 = env.pods[0];
  env.Allocate(p1, "app", 100);
  std::this_thread::sleep_for(200ms);
  auto t0 = TrafficClock::now();
  const std::string cg1 = env.MakeCgroup(p1);
  auto took1 = env.WaitLeaf(cg1, 2000ms, t0);
  REQUIRE(took1.has_value());
  std::printf("late cgroup, id already listed: class entry with leaf after %.1f ms\n", *took1);
  CHECK(*took1 < 1500);
  const uint32_t prio1 = env.ClassOf(cg1)->priority;

  // Pod 2: Allocate, then the runtime creates the cgroup, then (300 ms later) the kubelet's pod
  // list gets the container id. The watcher's pending retry picks it up.
  FakePod& p2 = env.pods[1];
  env.Allocate(p2, "app", 150);
  p2.containers[0].id = ContainerId(2);
  std::this_thread::sleep_for(200ms);
  t0 = TrafficClock::now();
  const std::string cg2 = env.MakeCgroup(p2);
  std::this_thread::sleep_for(300ms);
  env.WritePods();
  auto took2 = env.WaitLeaf(cg2, 2000ms, t0);
  REQUIRE(took2.has_value());
  std::printf("late cgroup, id listed 300 ms after mkdir: class entry with leaf after %.1f ms\n",
              *took2);
  CHECK(*took2 < 1500);
  const uint32_t prio2 = env.ClassOf(cg2)->priority;
  CHECK(prio1 != prio2);

  // Both leaves exist on the veth and on its IFB, at the allocated rates.
  std::this_thread::sleep_for(100ms);
  auto eg = TcClasses(env.veth().host);
  auto in = TcClasses(env.veth().Ifb());
  for (auto [prio, mbps] : {std::pair{prio1, 100ull}, std::pair{prio2, 150ull}}) {
    INFO("leaf " << HandleText(prio));
    REQUIRE(eg.count(HandleText(prio)) == 1);
    CHECK(eg[HandleText(prio)].rate_bits == mbps * 1000000);
    CHECK(eg[HandleText(prio)].ceil_bits == mbps * 1000000);
    REQUIRE(in.count(HandleText(prio)) == 1);
    CHECK(in[HandleText(prio)].rate_bits == mbps * 1000000);
  }
  CHECK(env.DaemonRunning());
  const std::string left = env.Teardown();
  CHECK(left == "");
}

TEST_CASE(
    "daemon enforcement: ingress and egress caps of two containers hold at once and an unallocated "
    "one is not capped",
    "[enforcement]") {
  DaemonEnv env("b", 2);
  env.pods = {MakePod(1, "app"), MakePod(2, "app"), MakePod(3, "app")};
  env.WritePods();
  const std::string cg_a = env.MakeCgroup(env.pods[0]);
  const std::string cg_b = env.MakeCgroup(env.pods[1]);
  const std::string cg_c = env.MakeCgroup(env.pods[2]);
  env.StartDaemon();
  env.Allocate(env.pods[0], "app", 50);
  env.Allocate(env.pods[1], "app", 200);
  REQUIRE(env.WaitLeaf(cg_a, 2000ms).has_value());
  REQUIRE(env.WaitLeaf(cg_b, 2000ms).has_value());
  const std::string leaf_a = HandleText(env.ClassOf(cg_a)->priority);
  const std::string leaf_b = HandleText(env.ClassOf(cg_b)->priority);
  // The unallocated container is classified (counted, its level's default leaf), not capped.
  auto c_class = env.ClassOf(cg_c);
  REQUIRE(c_class.has_value());
  CHECK_FALSE(IsContainerLeaf(c_class->priority));
  const std::string leaf_c = HandleText(c_class->priority);
  CHECK(leaf_c == "10:31");  // shared_cores' default leaf

  const std::string host = env.veth().host, ifb = env.veth().Ifb();
  uint16_t port = 15400;
  struct Flow {
    std::string name, cgroup, dev, leaf;
    bool reverse = false;
    double cap = 0;  // 0: not capped by a leaf
  };
  // Runs the flows at once (C, unallocated, paced at 800 Mbit/s alongside) and measures each on
  // its HTB leaf: egress on the veth, ingress (iperf3 -R) on the veth's IFB.
  auto run = [&](const std::string& title, std::vector<Flow> flows, bool exact = true) {
    flows.push_back({"c egress", cg_c, host, leaf_c, false, 0});
    std::map<std::string, double> caps;
    WireRate w;
    for (const auto& f : flows) {
      env.Server(0, ++port);
      std::vector<std::string> extra;
      if (f.cap == 0) extra = {"-b", "800M"};
      env.Client(f.cgroup, 0, port, 9, f.reverse, extra);  // warm-up + up to two windows
      w.HtbClass(f.name, "", f.dev, f.leaf);
      if (f.cap > 0 && exact) caps[f.name] = f.cap;
    }
    std::this_thread::sleep_for(kWarmUp);
    MeasureCaps(w, caps);
    env.StopTraffic();
    std::printf("%s (HTB leaf bytes over %.2f s):\n", title.c_str(), w.Get(flows[0].name).seconds);
    for (const auto& f : flows) {
      std::printf("  %-10s %8.2f Mbit/s (cap %s)\n", f.name.c_str(), w.Mbps(f.name),
                  f.cap > 0 ? std::to_string(static_cast<int>(f.cap)).c_str() : "none");
    }
    return w;
  };

  {
    WireRate w = run("A receives while B sends", {{"a ingress", cg_a, ifb, leaf_a, true, 50},
                                                  {"b egress", cg_b, host, leaf_b, false, 200}});
    CHECK(Within(w.Mbps("a ingress"), 50));
    CHECK(Within(w.Mbps("b egress"), 200));
    CHECK(w.Mbps("c egress") > 400);  // paced at 800: well above any leaf here
  }
  {
    WireRate w = run("A sends while B receives", {{"a egress", cg_a, host, leaf_a, false, 50},
                                                  {"b ingress", cg_b, ifb, leaf_b, true, 200}});
    CHECK(Within(w.Mbps("a egress"), 50));
    CHECK(Within(w.Mbps("b ingress"), 200));
    CHECK(w.Mbps("c egress") > 400);
  }
  {
    // One container both ways at once: each direction's leaf also carries the other flow's
    // ACKs, queued behind its own bulk data (FIFO leaves), so the receiving side may run below
    // its cap; the caps must still never be exceeded.
    WireRate w = run(
        "A sends and receives at once",
        {{"a egress", cg_a, host, leaf_a, false, 50}, {"a ingress", cg_a, ifb, leaf_a, true, 50}},
        /*exact=*/false);
    CHECK(w.Mbps("a egress") <= 50 * (1 + kCapTolerance));
    CHECK(w.Mbps("a ingress") <= 50 * (1 + kCapTolerance));
  }
  CHECK(env.DaemonRunning());
  const std::string left = env.Teardown();
  CHECK(left == "");
}

TEST_CASE(
    "daemon enforcement: class id, RemovePod, cgroup removal and a new Allocate take effect live",
    "[enforcement]") {
  DaemonEnv env("c", 3);
  env.pods = {MakePod(1, "app"), MakePod(2, "app")};
  env.pods[0].annotations[kClassIdKey] = "7";
  env.WritePods();
  FakePod& p1 = env.pods[0];
  FakePod& p2 = env.pods[1];
  const std::string cg1 = env.MakeCgroup(p1);
  env.StartDaemon();
  env.Allocate(p1, "app", 100);
  REQUIRE(env.WaitLeaf(cg1, 2000ms).has_value());
  CHECK(env.ClassOf(cg1)->net_class_id == 7);
  const uint32_t prio1 = env.ClassOf(cg1)->priority;

  // (a) The pod's class-id annotation changes: the kubelet's list is re-read (every
  // min(resync, 5 s) = 2 s here) and the entry follows, without a restart or an Allocate.
  p1.annotations[kClassIdKey] = "9";
  auto t0 = TrafficClock::now();
  env.WritePods();
  auto took = WaitFor(
      [&] {
        auto c = env.ClassOf(cg1);
        return c && c->net_class_id == 9;
      },
      6500ms, t0);
  REQUIRE(took.has_value());
  std::printf("class id annotation 7 -> 9: in the class map after %.0f ms\n", *took);
  CHECK(*took < 3500);
  CHECK(env.ClassOf(cg1)->priority == prio1);  // same leaf

  // (d) A second Allocate adds a leaf while the first container's flow keeps its cap.
  const std::string host = env.veth().host;
  env.Server(0, 15411);
  env.Client(cg1, 0, 15411, 6, false);
  std::this_thread::sleep_for(kWarmUp);
  WireRate w;
  w.HtbClass("p1", "", host, HandleText(prio1));
  w.Start();
  const auto window_end = TrafficClock::now() + kWindow;
  std::this_thread::sleep_for(500ms);
  env.Allocate(p2, "app", 150);
  t0 = TrafficClock::now();
  const std::string cg2 = env.MakeCgroup(p2);
  auto took2 = env.WaitLeaf(cg2, 2000ms, t0);
  std::this_thread::sleep_until(window_end);
  w.Stop();
  env.StopTraffic();
  REQUIRE(took2.has_value());
  std::printf(
      "second Allocate mid-flow: its leaf after %.1f ms; first container %.2f Mbit/s "
      "(cap 100) over %.2f s around it\n",
      *took2, w.Mbps("p1"), w.Get("p1").seconds);
  CHECK(Within(w.Mbps("p1"), 100));
  CHECK(env.ClassOf(cg1)->priority == prio1);
  const uint32_t prio2 = env.ClassOf(cg2)->priority;
  CHECK(prio2 != prio1);
  {
    auto eg = TcClasses(host);
    REQUIRE(eg.count(HandleText(prio2)) == 1);
    CHECK(eg[HandleText(prio2)].rate_bits == 150000000ull);
    CHECK(eg[HandleText(prio1)].rate_bits == 100000000ull);
  }

  // (c) The runtime removes container 2's cgroup: its entry goes at once (inotify).
  const uint64_t id2 = InodeOf(cg2);
  t0 = TrafficClock::now();
  REQUIRE(::rmdir(cg2.c_str()) == 0);
  took = WaitFor([&] { return !env.Class(id2).has_value(); }, 1000ms, t0);
  REQUIRE(took.has_value());
  std::printf("rmdir of a container cgroup: entry gone after %.1f ms\n", *took);

  // (b) RemovePod of pod 1 (still listed by the kubelet, cgroup still there): entry and leaf go.
  const uint64_t id1 = InodeOf(cg1);
  t0 = TrafficClock::now();
  env.RemovePod(p1);
  took = WaitFor([&] { return !env.Class(id1).has_value(); }, 1000ms, t0);
  REQUIRE(took.has_value());
  std::printf("RemovePod: entry gone after %.1f ms\n", *took);
  took = WaitFor(
      [&] {
        return TcClasses(host).count(HandleText(prio1)) == 0 &&
               TcClasses(env.veth().Ifb()).count(HandleText(prio1)) == 0;
      },
      1000ms, t0);
  REQUIRE(took.has_value());
  std::printf("RemovePod: leaf %s gone from the veth and the IFB after %.1f ms\n",
              HandleText(prio1).c_str(), *took);
  // And it stays gone across resyncs although the kubelet still lists the pod (terminating).
  std::this_thread::sleep_for(2500ms);
  CHECK_FALSE(env.Class(id1).has_value());
  CHECK(TcClasses(host).count(HandleText(prio1)) == 0);
  CHECK(env.DaemonRunning());
  const std::string left = env.Teardown();
  CHECK(left == "");
}

TEST_CASE(
    "daemon enforcement: a foreign root qdisc, a missing NIC and a missing pod list are reported "
    "once and the rest keeps working",
    "[enforcement]") {
  DaemonEnv env("d", 4, /*veths=*/2);
  // The foreign NIC sorts first, so the daemon tries it first on every pass (and must neither
  // lose the other NIC's shaping nor the sysctl's old value over it); allocations go to the last.
  const Veth& foreign = env.veth(0);
  const Veth& good = env.veth(1);
  env.nic_selection = "last";
  ShOk("tc qdisc add dev " + foreign.host +
       " root handle 77: tbf rate 1gbit burst 64kb latency 50ms");
  const std::string foreign_before = CaptureOutput("tc qdisc show dev " + foreign.host + " root");
  REQUIRE(foreign_before.find("tbf 77:") != std::string::npos);
  const std::string ghost = UniquePrefix() + "ghost";
  env.pods = {MakePod(1, "app")};
  env.WritePods();
  const std::string cg = env.MakeCgroup(env.pods[0]);
  // A value the daemon changes, so --uninstall must restore it although the first NIC it tried
  // failed after the sysctl was set.
  env.SetForwardPriorityBefore(1);
  env.StartDaemon({}, {ghost});
  const json alloc = env.Allocate(env.pods[0], "app", 100);
  REQUIRE(AllocatedNic(alloc) == good.host);
  REQUIRE(env.WaitLeaf(cg, 2000ms).has_value());
  const uint32_t prio = env.ClassOf(cg)->priority;

  // (a) The foreign qdisc: reported naming the NIC and the flag, left as it was; the other veth
  // is shaped (measured while the daemon keeps retrying the foreign one on its resyncs).
  env.Server(1, 15421);
  env.Client(cg, 1, 15421, 6, false);
  std::this_thread::sleep_for(kWarmUp);
  WireRate w;
  w.HtbClass("good", "", good.host, HandleText(prio));
  MeasureCaps(w, {{"good", 100}});
  env.StopTraffic();
  std::printf("foreign qdisc on %s: %s still capped at %.2f Mbit/s (cap 100)\n",
              foreign.host.c_str(), good.host.c_str(), w.Mbps("good"));
  CHECK(Within(w.Mbps("good"), 100));

  // (c) The kubelet's pod list disappears: reported once, entries kept across resyncs.
  env.DeletePods();
  std::this_thread::sleep_for(5000ms);  // two resyncs, two pod-list refreshes at least
  auto kept = env.ClassOf(cg);
  REQUIRE(kept.has_value());
  CHECK(kept->priority == prio);
  CHECK(env.Ctl({"plugin-info"}).exit_code == 0);
  const std::string log = env.Log();
  // "enforcement problem object=<key> ..." when it appears, "... resolved object=<key>" when it
  // clears: each of these three appears once and does not flap.
  auto reported = [&](const std::string& key) {
    return CountLines(log, {"enforcement problem object=" + key + " "});
  };
  auto resolved = [&](const std::string& key) {
    return CountLines(log, {"enforcement problem resolved object=" + key + " "});
  };
  const std::string foreign_key = "nic:" + foreign.host, ghost_key = "nic:" + ghost;
  std::printf(
      "problem lines after >= 4 resyncs: foreign qdisc %zu, missing NIC %zu, pod list %zu\n",
      reported(foreign_key), reported(ghost_key), reported("kubelet"));
  CHECK(reported(foreign_key) == 1);
  CHECK(CountLines(
            log, {"enforcement problem object=" + foreign_key + " ", "--replace-root-qdisc"}) == 1);
  CHECK(resolved(foreign_key) == 0);
  CHECK(reported(ghost_key) == 1);
  CHECK(resolved(ghost_key) == 0);
  CHECK(reported("kubelet") == 1);
  CHECK(resolved("kubelet") == 0);
  CHECK(CaptureOutput("tc qdisc show dev " + foreign.host + " root") == foreign_before);
  CHECK(CaptureOutput("tc qdisc show dev " + good.host + " root").find("htb 10:") !=
        std::string::npos);

  // The pod list comes back: the problem is resolved (logged), the entry is still the same.
  env.WritePods();
  auto took = WaitFor(
      [&] { return Count(env.Log(), "enforcement problem resolved object=kubelet") == 1; }, 3500ms);
  CHECK(took.has_value());
  if (took) std::printf("pod list restored: problem resolved after %.0f ms\n", *took);
  CHECK(env.ClassOf(cg)->priority == prio);
  CHECK(env.DaemonRunning());

  std::string left = env.Uninstall();
  // --uninstall, given the foreign NIC in --enforce-nics, left its qdisc alone too.
  CHECK(CaptureOutput("tc qdisc show dev " + foreign.host + " root") == foreign_before);
  left += env.RemoveAll();
  CHECK(left == "");
  CHECK(Count(env.Log(), "replacing foreign root qdisc") == 0);
}

TEST_CASE(
    "daemon enforcement: systemd cgroup driver with a .slice extra root classifies containers",
    "[enforcement]") {
  DaemonEnv env("s", 5, 1, DaemonEnv::Driver::kSystemd);
  env.pods = {MakePod(1, "app"), MakePod(2, "app")};
  env.WritePods();
  // Container 2 runs before the daemon starts, container 1 starts after its Allocate.
  const std::string cg2 = env.MakeCgroup(env.pods[1]);
  REQUIRE(cg2.find(".slice/") != std::string::npos);
  REQUIRE(cg2.find("/cri-containerd-") != std::string::npos);
  env.StartDaemon();
  env.Allocate(env.pods[0], "app", 120);
  env.Allocate(env.pods[1], "app", 80);
  const auto t0 = TrafficClock::now();
  const std::string cg1 = env.MakeCgroup(env.pods[0]);
  auto took = env.WaitLeaf(cg1, 2000ms, t0);
  REQUIRE(took.has_value());
  std::printf("systemd layout %s: class entry with leaf after %.1f ms\n", cg1.c_str(), *took);
  CHECK(*took < 1500);
  REQUIRE(env.WaitLeaf(cg2, 2000ms).has_value());
  auto eg = TcClasses(env.veth().host);
  const std::string leaf1 = HandleText(env.ClassOf(cg1)->priority);
  const std::string leaf2 = HandleText(env.ClassOf(cg2)->priority);
  REQUIRE(eg.count(leaf1) == 1);
  REQUIRE(eg.count(leaf2) == 1);
  CHECK(eg[leaf1].rate_bits == 120000000ull);
  CHECK(eg[leaf2].rate_bits == 80000000ull);
  CHECK(env.DaemonRunning());
  const std::string left = env.Teardown();
  CHECK(left == "");
}
