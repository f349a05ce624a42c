// DaemonFixture: the world of a privileged test of the real netqosd, set up as a node runs it. A
// network namespace with veth pairs into it (the host ends are the daemon's only NICs), container
// cgroups under an extra kubepods root (--addition-cgroup-paths) listed by a file:// pod list, a
// private bpffs for the pins, a temp dir for socket, state and logs. It starts netqosd, drives it
// as the kubelet and an operator would (netqosctl), reads its pinned class map and /metrics, owns
// the iperf3 traffic, and tears it all down in dependency order, also when a test fails: traffic,
// SIGTERM, `netqosd --uninstall`, cgroups (killing what runs in them), namespace and veths, bpffs.
// Leftovers() runs that teardown and says what it found left behind, for tests that assert on it.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/tc_handle.h"
#include "netqos_abi.h"
#include "support/bpffs_fixture.h"
#include "support/cgroup_fixture.h"
#include "support/netns.h"
#include "support/process.h"
#include "support/prom_parser.h"
#include "support/temp_dir.h"
#include "support/traffic.h"

namespace httplib {
class Client;
}

namespace netqos::testing {

using Ms = std::chrono::milliseconds;

// ---------------------------------------------------------------------------------------------
// Small helpers of these tests

double MsSince(TrafficClock::time_point t0);
// Polls `pred` every 10 ms; the milliseconds since t0 it took, or nullopt after `limit`.
std::optional<double> WaitFor(const std::function<bool()>& pred, Ms limit,
                              TrafficClock::time_point t0 = TrafficClock::now());
// Lines of `text` containing every one of `needles`.
size_t CountLines(const std::string& text, const std::vector<std::string>& needles);
// How close a rate measured on the wire must be to its cap, and over how long it is measured.
inline constexpr double kCapTolerance = 0.02;
inline constexpr Ms kWindow{3000};
bool Within(double measured, double cap);
// Measures every rate of `w` over kWindow; if none is above its cap but some is below (a sender
// starved of CPU on a small machine, not an enforcement error), measures one more window.
void MeasureCaps(WireRate& w, const std::map<std::string, double>& caps);
// A container leaf: 10:<minor> with minor in the container range (10:100 and up); the level
// classes and their default leaves (10:x0, 10:x1) are below it.
bool IsContainerLeaf(uint32_t priority);
// The inode of a path: for a cgroup directory, its cgroup id.
uint64_t InodeOf(const std::string& path);

// ---------------------------------------------------------------------------------------------
// What the kubelet would list (GET /pods), written as a file:// PodList.

struct FakeContainer {
  std::string name = "app";
  std::string id;  // lowercase hex; "" = not started (no containerID in the status)
};

struct FakePod {
  std::string uid;  // lowercase hex with dashes
  std::string name;
  std::string ns;
  std::map<std::string, std::string> annotations;
  std::vector<FakeContainer> containers;
  // status.podIP (the first) and status.podIPs, written only when not empty; spec.hostNetwork is
  // always written. A pod of its own network namespace (a CNI pod) has host_network = false and
  // its IPs here; a host-network pod lists the node's IPs, which name no pod.
  std::vector<std::string> ips;
  bool host_network = false;
};

// Distinct per n and per test process.
std::string FakePodUid(unsigned n);
std::string FakeContainerId(unsigned n);

struct Veth {
  std::string host, peer, host_ip, peer_ip;
  int ifindex = 0;  // of the host end, as last created
  std::string Ifb() const { return "nqifb" + std::to_string(ifindex); }
};

struct DaemonFixtureOptions {
  std::string tag;   // 1-4 characters telling apart the cases of one binary (names, cgroups)
  int subnet = 230;  // the veths' /24s are 10.<subnet>.<from the pid>.0
  int veths = 1;
  bool systemd_driver = false;  // --cgroup-driver=systemd: a .slice root, .slice/.scope below
  std::string pod_namespace = "netqos-test";
  std::string pod_qos_level = "shared_cores";   // the pods' qos_level annotation ("" = none)
  bool shape_nics = true;                       // --enforce-nics=<the veths>
  std::vector<std::string> extra_enforce_nics;  // appended to --enforce-nics
  std::string nic_selection = "first";          // which of equally good NICs an allocation gets
  bool metrics = false;                         // --metrics-bind-address=127.0.0.1:0
  bool wait_serving = true;                     // StartDaemon returns once plugin-info answers
  int resync_seconds = 2;                       // --enforcement-resync-period
  // Leftovers() reports an ip_forward_update_priority that --uninstall did not put back (and
  // then restores the host's value). Host-wide: a netqosd of another process (a benchmark, a
  // test run by hand) may change it meanwhile, so only the tests about it compare.
  bool compare_forward_sysctl = false;
};

class DaemonFixture {
 public:
  explicit DaemonFixture(DaemonFixtureOptions options);
  // A test that threw before its end shows the end of the daemon's log.
  ~DaemonFixture();
  DaemonFixture(const DaemonFixture&) = delete;
  DaemonFixture& operator=(const DaemonFixture&) = delete;

  const std::string& ns() const { return ns_; }
  const Veth& veth(size_t i = 0) const { return veths_.at(i); }
  const std::string& host(size_t i = 0) const { return veths_.at(i).host; }
  const std::string& PinDir() const { return pin_dir_; }
  std::string StateDir() const { return dir_.file("state"); }
  std::string Socket() const { return dir_.file("sock") + "/qrm_network_plugin_static.sock"; }
  std::string PodsFile() const { return dir_.file("pods.json"); }
  const std::string& CgroupRoot() const { return root_path_; }
  std::string Log() const;
  bool DaemonRunning();

  // --- veths ---
  // Deletes veth i (its host end; the peer goes with it) or creates it again (a new ifindex).
  void DeleteVeth(size_t i);
  void RecreateVeth(size_t i);

  // --- pods and cgroups ---
  std::deque<FakePod> pods;  // deque: references from AddPod stay valid

  // Pod n ("pod-<n>" unless named) with one started container "app"; the list is rewritten.
  FakePod& AddPod(unsigned n, const std::string& name = "");
  // Rewrites pods.json from `pods`, atomically (the daemon never reads half a file).
  void WritePods();
  void DeletePods();

  std::string PodDir(const FakePod& p) const;
  std::string ContainerDir(const FakePod& p, const std::string& id) const;
  std::string ContainerDir(const FakePod& p) const {
    return ContainerDir(p, p.containers.at(0).id);
  }
  // mkdir of the pod's and the container's cgroups (as the runtime does when it starts it).
  std::string MakeCgroup(const FakePod& p, const std::string& id);
  std::string MakeCgroup(const FakePod& p) { return MakeCgroup(p, p.containers.at(0).id); }

  // Sets net.ipv4.ip_forward_update_priority before the daemon starts (which sets it to 0 and
  // records the old value for --uninstall); the host's own value is put back at the end.
  void SetForwardPriorityBefore(int value);

  // --- the tenant policy ---
  // Writes `json` as the tenant policy file, atomically (a rename, as a ConfigMap update does);
  // returns the --tenant-policy-file flag that names it.
  std::string WriteTenantPolicy(const std::string& json);
  std::string TenantPolicyFile() const { return dir_.file("tenant-policy.json"); }

  // --- the daemon ---
  // extra flags are appended; a --kubelet-pods-url among them replaces the file:// pod list.
  void StartDaemon(const std::vector<std::string>& extra = {});
  // Sends `sig` and waits; the exit code. The pins stay (nothing is uninstalled).
  int StopDaemon(int sig);
  CommandResult Ctl(std::vector<std::string> args,
                    std::chrono::seconds timeout = std::chrono::seconds(30));
  // Allocate through gRPC (netqosctl --json), as the kubelet does before it starts the container;
  // `container` "" = the pod's first; `annotations` go into the request beside the QoS level.
  // Throws when netqosctl fails.
  nlohmann::json Allocate(const FakePod& p, int mbps, const std::string& container = "",
                          const std::map<std::string, std::string>& annotations = {});
  void RemovePod(const FakePod& p);

  // --- /metrics (options.metrics) ---
  // The port from the daemon's log ("metrics serving address=..."); 0 if it never says.
  int MetricsPort();
  // GET /metrics, parsed by the strict parser; throws when it cannot be read.
  PromDocument Scrape();
  // The HTTP status of GET `path` on the metrics port; nullopt when there is no answer.
  std::optional<int> MetricsStatus(const std::string& path);

  // --- the pinned class map, read with libbpf (value layout: bpf/netqos_abi.h) ---
  int ClassMapFd() const;  // the caller closes it; < 0 when not pinned
  std::optional<netqos_class> Class(uint64_t cgroup_id) const;
  std::optional<netqos_class> ClassOf(const std::string& cgroup_dir) const;
  // Waits for the cgroup's entry to carry a container leaf; the latency in ms, or nullopt.
  std::optional<double> WaitLeaf(uint64_t cgroup_id, Ms limit,
                                 TrafficClock::time_point t0 = TrafficClock::now()) const;
  std::optional<double> WaitLeaf(const std::string& cgroup_dir, Ms limit,
                                 TrafficClock::time_point t0 = TrafficClock::now()) const;

  // --- traffic (owned here so the teardown stops it first) ---
  Iperf3Server& Server(size_t veth, uint16_t port);
  Iperf3Client& Client(const std::string& cgroup, size_t veth, uint16_t port, int seconds,
                       bool reverse = false, std::vector<std::string> extra = {});
  void StopTraffic();

  // --- teardown ---
  // Stops traffic and netqosd (SIGTERM; it must exit 0), runs `netqosd --uninstall` and reports
  // what it left: pins, IFBs (of the veths and every one the daemon logged creating), HTB roots
  // and ingress filters on the veths, a changed ip_forward_update_priority (when compared). Then
  // deletes those IFBs, whatever it found. Runs once; "" = nothing left.
  std::string Uninstall();
  // Uninstall(), then removes the cgroups, the namespace and veths, the bpffs, and reports any of
  // them still there. Runs once; "" = nothing left.
  std::string Leftovers();

 private:
  void CreateVeth(size_t i);
  std::string RemoveAll();

  DaemonFixtureOptions o_;
  TempDir dir_;  // first of the owned objects: destroyed last (holds the daemon's log)
  std::unique_ptr<PrivateBpffs> bpffs_;
  std::unique_ptr<NetnsFixture> net_;
  std::string pin_dir_, bpffs_root_;
  int forward_original_ = -1;  // the host's value, put back at the end whatever happened
  int forward_before_ = -1;    // the value the daemon found, which --uninstall must restore
  std::string ns_;
  std::vector<Veth> veths_;
  std::string root_name_, root_path_;
  std::unique_ptr<TestCgroup> cg_root_;
  std::unique_ptr<DaemonProcess> daemon_;
  std::string enforce_;  // --enforce-nics as given, for --uninstall
  std::string log_;      // the daemon's log once it is gone
  std::unique_ptr<httplib::Client> metrics_;
  std::vector<std::unique_ptr<Iperf3Server>> servers_;
  std::vector<std::unique_ptr<Iperf3Client>> clients_;
  bool uninstalled_ = false;
  bool removed_ = false;
};

}  // namespace netqos::testing
