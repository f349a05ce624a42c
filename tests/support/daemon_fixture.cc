// DaemonFixture (see daemon_fixture.h). Compiled once into the integration test binary, so that
// cpp-httplib and libbpf stay out of the tests' own translation units.
#include "support/daemon_fixture.h"

#include <bpf/bpf.h>
#include <httplib.h>
#include <net/if.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "common/tc_handle.h"
#include "support/files.h"
#include "support/netqosd_launcher.h"

namespace netqos::testing {
namespace {

// The daemon's socket, checkpoint and in-memory checkpoint directories, in the fixture's temp dir
// (Socket() and StateDir() name the same).
NetqosdDirs DaemonDirs(const TempDir& dir) {
  return {dir.file("sock"), dir.file("state"), dir.file("shm-state")};
}

using namespace std::chrono_literals;
using nlohmann::json;

constexpr char kForwardSysctl[] = "/proc/sys/net/ipv4/ip_forward_update_priority";
constexpr char kQosKey[] = "katalyst.kubewharf.io/qos_level";
constexpr char kIfbCreated[] = "created ifb device name=";

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

void MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    throw std::runtime_error("mkdir " + path + ": " + std::strerror(errno));
  }
}

json PodListJson(const std::deque<FakePod>& pods) {
  json items = json::array();
  for (const auto& p : pods) {
    json statuses = json::array();
    for (const auto& c : p.containers) {
      json s = {{"name", c.name}};
      if (!c.id.empty()) s["containerID"] = "containerd://" + c.id;
      statuses.push_back(s);
    }
    json metadata = {{"uid", p.uid}, {"namespace", p.ns}, {"name", p.name}};
    if (!p.annotations.empty()) metadata["annotations"] = p.annotations;
    json status = {{"qosClass", "Burstable"}, {"containerStatuses", statuses}};
    if (!p.ips.empty()) {
      json ips = json::array();
      for (const auto& ip : p.ips) ips.push_back({{"ip", ip}});
      status["podIP"] = p.ips.front();
      status["podIPs"] = ips;
    }
    items.push_back(
        {{"metadata", metadata}, {"spec", {{"hostNetwork", p.host_network}}}, {"status", status}});
  }
  return {{"kind", "PodList"}, {"apiVersion", "v1"}, {"items", items}};
}

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Helpers

double MsSince(TrafficClock::time_point t0) {
  return std::chrono::duration<double, std::milli>(TrafficClock::now() - t0).count();
}

std::optional<double> WaitFor(const std::function<bool()>& pred, Ms limit,
                              TrafficClock::time_point t0) {
  const auto deadline = t0 + limit;
  for (;;) {
    if (pred()) return MsSince(t0);
    if (TrafficClock::now() > deadline) return std::nullopt;
    std::this_thread::sleep_for(10ms);
  }
}

size_t CountLines(const std::string& text, const std::vector<std::string>& needles) {
  std::istringstream in(text);
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) {
    bool all = true;
    for (const auto& w : needles) all = all && line.find(w) != std::string::npos;
    if (all) ++n;
  }
  return n;
}

bool Within(double measured, double cap) {
  return measured >= cap * (1 - kCapTolerance) && measured <= cap * (1 + kCapTolerance);
}

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

bool IsContainerLeaf(uint32_t priority) {
  return (priority >> 16) == 0x10 && (priority & 0xffffu) >= 0x100 &&
         (priority & 0xffffu) != 0xffff;
}

uint64_t InodeOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw std::runtime_error("stat " + path);
  return static_cast<uint64_t>(st.st_ino);
}

std::string FakePodUid(unsigned n) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%08x-0000-4000-8000-%012x", n,
                static_cast<unsigned>(::getpid()));
  return buf;
}

std::string FakeContainerId(unsigned n) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "c0ffee%04x%08x", n & 0xffffu, static_cast<unsigned>(::getpid()));
  return buf;
}

// ---------------------------------------------------------------------------------------------
// Set-up

DaemonFixture::DaemonFixture(DaemonFixtureOptions options)
    : o_(std::move(options)),
      bpffs_(std::make_unique<PrivateBpffs>()),
      net_(std::make_unique<NetnsFixture>()),
      pin_dir_(bpffs_->PinDir()),
      bpffs_root_(bpffs_->Root()),
      forward_original_(ReadIntFile(kForwardSysctl)),
      forward_before_(forward_original_) {
  const std::string p = UniquePrefix() + o_.tag;
  ns_ = p + "n";
  net_->AddNamespace(ns_);
  net_->SetUp(ns_, "lo", true);
  for (int i = 0; i < o_.veths; ++i) {
    Veth v;
    v.host = p + "h" + std::to_string(i);
    v.peer = p + "p" + std::to_string(i);
    const std::string net = "10." + std::to_string(o_.subnet) + "." +
                            std::to_string(::getpid() % 100 + 20 + 100 * i) + ".";
    v.host_ip = net + "1";
    v.peer_ip = net + "2";
    veths_.push_back(v);
    CreateVeth(veths_.size() - 1);
  }
  const std::string pid = std::to_string(::getpid());
  root_name_ =
      o_.systemd_driver ? "nqtest" + pid + o_.tag + ".slice" : "netqos-test-" + pid + "-" + o_.tag;
  cg_root_ = std::make_unique<TestCgroup>(root_name_);
  root_path_ = cg_root_->Path();
  WritePods();
}

DaemonFixture::~DaemonFixture() {
  try {
    const bool failed = std::uncaught_exceptions() > 0;
    const std::string left = Leftovers();
    if (failed) {
      const std::string log = Log();
      const size_t from = log.size() > 12000 ? log.find('\n', log.size() - 12000) : 0;
      std::printf("--- netqosd log (tail) ---\n%s\n--- end of log ---\n",
                  log.substr(from == std::string::npos ? 0 : from).c_str());
    }
    if (!left.empty()) std::printf("cleanup left: %s\n", left.c_str());
  } catch (...) {
  }
}

std::string DaemonFixture::Log() const { return daemon_ ? daemon_->Log() : log_; }

bool DaemonFixture::DaemonRunning() { return daemon_ && daemon_->Running(); }

void DaemonFixture::CreateVeth(size_t i) {
  Veth& v = veths_.at(i);
  net_->AddVeth(v.host, v.peer, ns_);
  net_->AddAddress("", v.host, v.host_ip + "/24");
  net_->AddAddress(ns_, v.peer, v.peer_ip + "/24");
  net_->SetUp("", v.host, true);
  net_->SetUp(ns_, v.peer, true);
  v.ifindex = static_cast<int>(::if_nametoindex(v.host.c_str()));
  if (v.ifindex <= 0) throw std::runtime_error("no ifindex for " + v.host);
}

void DaemonFixture::DeleteVeth(size_t i) { net_->DeleteLink("", veths_.at(i).host); }

void DaemonFixture::RecreateVeth(size_t i) { CreateVeth(i); }

// ---------------------------------------------------------------------------------------------
// Pods and cgroups

FakePod& DaemonFixture::AddPod(unsigned n, const std::string& name) {
  FakePod p;
  p.uid = FakePodUid(n);
  p.name = name.empty() ? "pod-" + std::to_string(n) : name;
  p.ns = o_.pod_namespace;
  if (!o_.pod_qos_level.empty()) p.annotations[kQosKey] = o_.pod_qos_level;
  p.containers.push_back({"app", FakeContainerId(n)});
  pods.push_back(std::move(p));
  WritePods();
  return pods.back();
}

void DaemonFixture::WritePods() {
  const std::string tmp = PodsFile() + ".tmp";
  WriteFile(tmp, PodListJson(pods).dump(1));
  std::filesystem::rename(tmp, PodsFile());
}

void DaemonFixture::DeletePods() { std::filesystem::remove(PodsFile()); }

std::string DaemonFixture::WriteTenantPolicy(const std::string& json) {
  const std::string tmp = TenantPolicyFile() + ".tmp";
  WriteFile(tmp, json);
  std::filesystem::rename(tmp, TenantPolicyFile());
  return "--tenant-policy-file=" + TenantPolicyFile();
}

std::string DaemonFixture::PodDir(const FakePod& p) const {
  if (!o_.systemd_driver) return root_path_ + "/pod" + p.uid;
  std::string uid = p.uid;
  for (char& c : uid) c = c == '-' ? '_' : c;
  const std::string stem = root_name_.substr(0, root_name_.size() - std::strlen(".slice"));
  return root_path_ + "/" + stem + "-pod" + uid + ".slice";
}

std::string DaemonFixture::ContainerDir(const FakePod& p, const std::string& id) const {
  return PodDir(p) + (o_.systemd_driver ? "/cri-containerd-" + id + ".scope" : "/" + id);
}

std::string DaemonFixture::MakeCgroup(const FakePod& p, const std::string& id) {
  MakeDir(PodDir(p));
  const std::string dir = ContainerDir(p, id);
  MakeDir(dir);
  return dir;
}

void DaemonFixture::SetForwardPriorityBefore(int value) {
  WriteIntFile(kForwardSysctl, value);
  forward_before_ = ReadIntFile(kForwardSysctl);
}

// ---------------------------------------------------------------------------------------------
// The daemon

void DaemonFixture::StartDaemon(const std::vector<std::string>& extra) {
  std::set<std::string> ours;
  std::vector<std::string> allow;
  for (const auto& v : veths_) {
    ours.insert(v.host);
    allow.push_back(v.host);
  }
  std::vector<std::string> deny;
  for (const auto& link : ListDir("/sys/class/net")) {
    if (ours.count(link) == 0) deny.push_back(link);
  }
  // The pods come from a file read as the kubelet's list, unless the extra flags name another
  // source (--pod-source=cri) or another kubelet URL (a kubelet stand-in).
  bool own_url = false, own_source = false;
  for (const auto& f : extra) {
    own_url = own_url || f.rfind("--kubelet-pods-url=", 0) == 0;
    own_source = own_source || f.rfind("--pod-source=", 0) == 0;
  }
  std::vector<std::string> argv = {NETQOSD_PATH, "--enforcement=bpf"};
  const auto dirs = DaemonDirs(dir_).Flags();
  argv.insert(argv.end(), dirs.begin(), dirs.end());
  argv.insert(argv.end(), {"--bpf-pin-dir=" + PinDir(), "--addition-cgroup-paths=/" + root_name_,
                           "--nic-allow=" + Join(allow), "--nic-deny=" + Join(deny),
                           "--nic-selection=" + o_.nic_selection,
                           "--enforcement-resync-period=" + std::to_string(o_.resync_seconds)});
  if (!own_source) argv.push_back("--pod-source=kubelet");
  if (!own_url && !own_source) argv.push_back("--kubelet-pods-url=file://" + PodsFile());
  if (o_.shape_nics) {
    std::vector<std::string> enforce = allow;
    enforce.insert(enforce.end(), o_.extra_enforce_nics.begin(), o_.extra_enforce_nics.end());
    enforce_ = Join(enforce);
    argv.push_back("--enforce-nics=" + enforce_);
    // These tests read HTB leaves. The veths have one TX queue per CPU, so on a kernel with
    // sch_fq (the kernel lab's) auto would pick edt; EDT is tests/kernels/edt_test.sh's.
    const bool mode_given = std::any_of(extra.begin(), extra.end(), [](const std::string& a) {
      return a.rfind("--shaping-mode", 0) == 0;
    });
    if (!mode_given) argv.push_back("--shaping-mode=htb");
  }
  if (o_.systemd_driver) argv.push_back("--cgroup-driver=systemd");
  if (o_.metrics) argv.push_back("--metrics-bind-address=127.0.0.1:0");
  argv.insert(argv.end(), extra.begin(), extra.end());
  daemon_.reset();  // one still running is killed first: the wait must not ask it
  if (!o_.wait_serving) {
    daemon_ = std::make_unique<DaemonProcess>(argv, dir_.file("netqosd.log"));
    return;
  }
  const auto t0 = TrafficClock::now();
  daemon_ = StartNetqosd(argv, dir_.file("netqosd.log"),
                         [this] { return Ctl({"plugin-info"}).exit_code == 0; }, {15000ms, 50ms});
  std::printf("daemon: netqosd serving after %.0f ms\n", MsSince(t0));
}

int DaemonFixture::StopDaemon(int sig) {
  if (!daemon_) return -1;
  metrics_.reset();
  const int code = daemon_->Stop(sig, std::chrono::seconds(10));
  log_ = daemon_->Log();
  daemon_.reset();  // SIGKILLs it if it did not stop
  return code;
}

CommandResult DaemonFixture::Ctl(std::vector<std::string> args, std::chrono::seconds timeout) {
  args.insert(args.begin(), {NETQOSCTL_PATH, "--socket=" + Socket()});
  return RunCommand(args, dir_.file("ctl.out"), timeout);
}

json DaemonFixture::Allocate(const FakePod& p, int mbps, const std::string& container,
                             const std::map<std::string, std::string>& annotations) {
  std::vector<std::string> args = {
      "allocate",
      "--pod-uid=" + p.uid,
      "--pod-namespace=" + p.ns,
      "--pod-name=" + p.name,
      "--container=" + (container.empty() ? p.containers.at(0).name : container),
      "--qos=shared_cores",
      "--mbps=" + std::to_string(mbps),
      "--json"};
  for (const auto& [k, v] : annotations) args.push_back("--annotation=" + k + "=" + v);
  auto r = Ctl(args);
  if (r.exit_code != 0) throw std::runtime_error("netqosctl allocate failed: " + r.output);
  return json::parse(r.output);
}

void DaemonFixture::RemovePod(const FakePod& p) {
  auto r = Ctl({"remove", "--pod-uid=" + p.uid});
  if (r.exit_code != 0) throw std::runtime_error("netqosctl remove failed: " + r.output);
}

// ---------------------------------------------------------------------------------------------
// /metrics

int DaemonFixture::MetricsPort() { return daemon_ ? WaitLoggedMetricsPort(*daemon_, 20s) : 0; }

PromDocument DaemonFixture::Scrape() {
  if (!metrics_) {
    const int port = MetricsPort();
    if (port == 0) throw std::runtime_error("no metrics port in the log:\n" + Log());
    metrics_ = std::make_unique<httplib::Client>("127.0.0.1", port);
    metrics_->set_read_timeout(10, 0);
  }
  auto r = metrics_->Get("/metrics");
  if (!r || r->status != 200) throw std::runtime_error("GET /metrics failed");
  return ParsePrometheusText(r->body);
}

std::optional<int> DaemonFixture::MetricsStatus(const std::string& path) {
  const int port = MetricsPort();
  if (port == 0) return std::nullopt;
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(10, 0);
  auto r = client.Get(path);
  if (!r) return std::nullopt;
  return r->status;
}

// ---------------------------------------------------------------------------------------------
// The pinned class map

int DaemonFixture::ClassMapFd() const {
  return bpf_obj_get((PinDir() + "/" NETQOS_STR(NETQOS_MAP_CLASS)).c_str());
}

std::optional<netqos_class> DaemonFixture::Class(uint64_t cgroup_id) const {
  const int fd = ClassMapFd();
  if (fd < 0) return std::nullopt;
  netqos_class v{};
  const int rc = bpf_map_lookup_elem(fd, &cgroup_id, &v);
  ::close(fd);
  if (rc != 0) return std::nullopt;
  return v;
}

std::optional<netqos_class> DaemonFixture::ClassOf(const std::string& cgroup_dir) const {
  return Class(InodeOf(cgroup_dir));
}

std::optional<double> DaemonFixture::WaitLeaf(uint64_t cgroup_id, Ms limit,
                                              TrafficClock::time_point t0) const {
  return WaitFor(
      [&] {
        auto c = Class(cgroup_id);
        return c && IsContainerLeaf(c->priority);
      },
      limit, t0);
}

std::optional<double> DaemonFixture::WaitLeaf(const std::string& cgroup_dir, Ms limit,
                                              TrafficClock::time_point t0) const {
  return WaitLeaf(InodeOf(cgroup_dir), limit, t0);
}

// ---------------------------------------------------------------------------------------------
// Traffic

Iperf3Server& DaemonFixture::Server(size_t veth, uint16_t port) {
  servers_.push_back(std::make_unique<Iperf3Server>(ns_, veths_.at(veth).peer_ip, port));
  return *servers_.back();
}

Iperf3Client& DaemonFixture::Client(const std::string& cgroup, size_t veth, uint16_t port,
                                    int seconds, bool reverse, std::vector<std::string> extra) {
  clients_.push_back(
      std::make_unique<Iperf3Client>(Iperf3ClientOptions{.server_ip = veths_.at(veth).peer_ip,
                                                         .port = port,
                                                         .seconds = seconds,
                                                         .reverse = reverse,
                                                         .cgroup = cgroup,
                                                         .netns = "",
                                                         .extra_args = std::move(extra)}));
  return *clients_.back();
}

void DaemonFixture::StopTraffic() {
  clients_.clear();
  servers_.clear();
}

// ---------------------------------------------------------------------------------------------
// Teardown

std::string DaemonFixture::Uninstall() {
  if (uninstalled_) return "";
  uninstalled_ = true;
  std::string left;
  StopTraffic();
  if (daemon_) {
    const int code = StopDaemon(SIGTERM);
    if (code != 0) left += "netqosd exited " + std::to_string(code) + " on SIGTERM; ";
    // NETQOS_TEST_LOG_DIR=<dir> keeps each daemon's log (named after the namespace).
    if (const char* keep = std::getenv("NETQOS_TEST_LOG_DIR"); keep != nullptr && *keep != 0) {
      WriteFile(std::string(keep) + "/" + ns_ + "-netqosd.log", log_);
    }
  }
  metrics_.reset();
  std::vector<std::string> argv = DaemonDirs(dir_).Flags();
  argv.insert(argv.begin(), {NETQOSD_PATH, "--uninstall", "--bpf-pin-dir=" + PinDir()});
  if (!enforce_.empty()) argv.push_back("--enforce-nics=" + enforce_);
  auto un = RunCommand(argv, dir_.file("uninstall.out"));
  if (un.exit_code != 0) {
    left += "netqosd --uninstall exited " + std::to_string(un.exit_code) + ": " + un.output + "; ";
  }
  std::error_code ec;
  if (std::filesystem::exists(PinDir(), ec) && !std::filesystem::is_empty(PinDir(), ec)) {
    left += "pins left in " + PinDir() + "; ";
  }
  // Every IFB the daemon says it created (also for a NIC deleted since), and the ones it should
  // have created for the veths, must be gone.
  std::set<std::string> ifbs;
  if (!enforce_.empty()) {
    for (const auto& v : veths_) ifbs.insert(v.Ifb());
  }
  for (size_t at = log_.find(kIfbCreated); at != std::string::npos;
       at = log_.find(kIfbCreated, at + 1)) {
    const size_t from = at + std::strlen(kIfbCreated);
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
  if (o_.compare_forward_sysctl) {
    const int forward_now = ReadIntFile(kForwardSysctl);
    if (forward_now != forward_before_) {
      left += "ip_forward_update_priority " + std::to_string(forward_now) + ", was " +
              std::to_string(forward_before_) + "; ";
    }
    if (forward_now != forward_original_) WriteIntFile(kForwardSysctl, forward_original_);
  } else if (un.exit_code != 0) {
    // --uninstall restores it itself; by hand only when it could not run.
    WriteIntFile(kForwardSysctl, forward_before_);
  }
  // Safety net after a failed uninstall: the IFBs live in the host namespace.
  for (const auto& ifb : ifbs) ShOk("ip link del " + ifb);
  return left;
}

std::string DaemonFixture::RemoveAll() {
  if (removed_) return "";
  removed_ = true;
  std::string left;
  std::error_code ec;
  cg_root_.reset();  // kills what still runs in the containers' cgroups, removes them
  if (std::filesystem::exists(root_path_, ec)) left += root_path_ + " left; ";
  net_.reset();
  if (ShOk("ip netns pids " + ns_)) left += "netns " + ns_ + " left; ";
  for (const auto& v : veths_) {
    if (ShOk("ip link show dev " + v.host)) left += v.host + " left; ";
  }
  bpffs_.reset();
  if (CaptureOutput("cat /proc/self/mounts").find(bpffs_root_ + " ") != std::string::npos) {
    left += "bpffs " + bpffs_root_ + " still mounted; ";
  }
  return left;
}

std::string DaemonFixture::Leftovers() {
  std::string left = Uninstall();  // first: it needs the pins, the veths and the namespace
  return left + RemoveAll();
}

}  // namespace netqos::testing
