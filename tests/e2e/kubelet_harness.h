// The kubelet side of the end-to-end tests: starts the real netqosd on temp dirs with a topology
// file, and talks to it over its unix socket with stubs generated from the upstream-shaped
// schema (tests/upstream_proto), exactly as the kubelet's QoS resource manager would.
#pragma once

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pluginregistration/v1/api.grpc.pb.h"
#include "resourceplugin/v1alpha1/api.grpc.pb.h"
#include "support/netqosd_launcher.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace netqos::e2e {

namespace rp = ::resourceplugin::v1alpha1;
namespace reg = ::pluginregistration;

inline constexpr char kResource[] = "resource.katalyst.kubewharf.io/net_bandwidth";
inline constexpr char kQosKey[] = "katalyst.kubewharf.io/qos_level";
inline constexpr char kEnhancementKey[] = "katalyst.kubewharf.io/network_enhancement";
inline constexpr char kClassKey[] = "katalyst.kubewharf.io/net_class_id";

// The fixture of Katalyst's policy_test.go: 4 NUMA nodes on 2 sockets; eth0 (host, NUMA 0), eth1
// (disabled), eth2 (netns ns2, NUMA 2, an IPv4-mapped IPv6 address).
inline std::string FixtureTopology(bool nics_enabled = true) {
  const char* en = nics_enabled ? "true" : "false";
  return std::string(R"({"numa_nodes": [{"id": 0, "socket": 0}, {"id": 1, "socket": 0},
                                       {"id": 2, "socket": 1}, {"id": 3, "socket": 1}],
    "nics": [
      {"name": "eth0", "speed_mbps": 25000, "numa_node": 0, "enabled": )") +
         en +
         R"(, "ipv4": ["1.1.1.1"]},
      {"name": "eth1", "speed_mbps": 25000, "numa_node": 1, "enabled": false},
      {"name": "eth2", "netns": "ns2", "netns_path": "/var/run/ns2", "speed_mbps": 25000,
       "numa_node": 2, "enabled": )" +
         en + R"(, "ipv6": ["::ffff:192.0.2.1"]}]})";
}

// The fixture's policy flags: reservation 4000 on the first NIC, rates 0.9 / 0.85, class ids.
inline std::vector<std::string> FixtureFlags() {
  return {"--network-resource-plugin-reserved-bandwidth=4000",
          "--network-resource-plugin-egress-capacity-rate=0.9",
          "--network-resource-plugin-ingress-capacity-rate=0.85",
          "--network-resource-plugin-class-id-shared-cores=22345",
          "--network-resource-plugin-class-id-reclaimed-cores=22346",
          "--network-resource-plugin-class-id-dedicated-cores=22347",
          "--nic-selection=first"};
}

// One ResourcePlugin call through the generic stub: the response bytes exactly as they crossed
// the socket (what a kubelet's Go decoder would read, where C++ protobuf loses the difference
// between an absent and an empty message).
inline grpc::Status RawUnary(const std::shared_ptr<grpc::Channel>& channel,
                             const std::string& method, const google::protobuf::Message& req,
                             std::string* out_bytes) {
  grpc::GenericStub stub(channel);
  std::string bytes = req.SerializeAsString();
  grpc::Slice slice(bytes);
  grpc::ByteBuffer send(&slice, 1), recv;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Status status;
  bool done = false;
  std::mutex mu;
  std::condition_variable cv;
  stub.UnaryCall(&ctx, "/resourceplugin.v1alpha1.ResourcePlugin/" + method, grpc::StubOptions(),
                 &send, &recv, [&](grpc::Status s) {
                   std::lock_guard lk(mu);
                   status = std::move(s);
                   done = true;
                   cv.notify_all();
                 });
  std::unique_lock lk(mu);
  cv.wait(lk, [&] { return done; });
  if (status.ok()) {
    std::vector<grpc::Slice> slices;
    (void)recv.Dump(&slices);
    out_bytes->clear();
    for (const auto& s : slices)
      out_bytes->append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return status;
}

class Harness {
 public:
  explicit Harness(const std::string& topology = FixtureTopology()) {
    sock_dir_ = dir_.path() + "/plugins_registry";
    state_dir_ = dir_.path() + "/state";
    topo_path_ = dir_.path() + "/topology.json";
    std::ofstream(topo_path_) << topology;
  }

  const std::string& root() const { return dir_.path(); }
  std::string socket_path() const { return Dirs().SocketPath(); }
  const std::string& state_dir() const { return state_dir_; }
  const std::string& sock_dir() const { return sock_dir_; }
  std::string checkpoint_path() const { return state_dir_ + "/network_plugin_state"; }
  std::string in_memory_state_dir() const { return dir_.path() + "/shm-state"; }
  std::string log_path() const { return dir_.path() + "/netqosd.log"; }

  std::vector<std::string> DaemonArgv(const std::vector<std::string>& extra) const {
    std::vector<std::string> argv = {NETQOSD_PATH, "--topology-file=" + topo_path_,
                                     "--log-level=debug"};
    const auto dirs = Dirs().Flags();
    argv.insert(argv.end(), dirs.begin(), dirs.end());
    // Allocation only unless a test asks otherwise: these tests exercise the kubelet protocol,
    // not the kernel dataplane (netqosd would take the last --enforcement; not adding one keeps
    // the command line plain).
    const bool sets_enforcement = std::any_of(extra.begin(), extra.end(), [](const std::string& a) {
      return a == "--enforcement" || a.rfind("--enforcement=", 0) == 0;
    });
    if (!sets_enforcement) argv.push_back("--enforcement=none");
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }

  // `netqosd --uninstall` of this harness's state with `extra` flags; no maps are pinned.
  std::vector<std::string> UninstallArgv(const std::vector<std::string>& extra) const {
    std::vector<std::string> argv = DaemonArgv(extra);
    argv.push_back("--uninstall");
    argv.push_back("--bpf-pin-dir=" + root() + "/no-pins");
    return argv;
  }

  // Starts netqosd and waits until it answers GetInfo on its socket.
  void Start(const std::vector<std::string>& extra = FixtureFlags()) {
    StartArgv(DaemonArgv(extra));
  }
  // The same with a whole command line: DaemonArgv's behind a wrapper such as strace.
  void StartArgv(const std::vector<std::string>& argv) {
    daemon_.reset();  // a daemon of this harness still running stops first
    daemon_ = testing::StartNetqosd(argv, log_path(), [this] { return Answers(); },
                                    {std::chrono::seconds(20), std::chrono::milliseconds(20)});
  }

  testing::DaemonProcess& daemon() { return *daemon_; }
  void ResetDaemon() { daemon_.reset(); }

  // The metrics port the daemon logged ("metrics serving address=127.0.0.1:PORT"), waited for up
  // to 10 s; 0 if it never did.
  int WaitMetricsPort() {
    return testing::WaitLoggedMetricsPort(*daemon_, std::chrono::seconds(10));
  }

  bool WaitServing(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (daemon_ && !daemon_->Running()) return false;
      if (Answers()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  std::shared_ptr<grpc::Channel> Channel() {
    // A fresh channel each time: the socket may have been re-created by the daemon.
    return grpc::CreateChannel("unix://" + socket_path(), grpc::InsecureChannelCredentials());
  }

  grpc::Status GetInfo(reg::PluginInfo* out,
                       std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    auto stub = reg::Registration::NewStub(Channel());
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + timeout);
    reg::InfoRequest req;
    return stub->GetInfo(&ctx, req, out);
  }

  std::unique_ptr<rp::ResourcePlugin::Stub> Plugin() {
    return rp::ResourcePlugin::NewStub(Channel());
  }

  // Calls a ResourcePlugin method through the generic stub and returns the response bytes
  // exactly as they crossed the socket.
  grpc::Status RawCall(const std::string& method, const google::protobuf::Message& req,
                       std::string* out_bytes) {
    return RawUnary(Channel(), method, req, out_bytes);
  }

  testing::CommandResult Ctl(std::vector<std::string> args) {
    args.insert(args.begin(), {NETQOSCTL_PATH, "--socket=" + socket_path()});
    return testing::RunCommand(args, dir_.path() + "/ctl.out");
  }

  // netqosctl allocate of one shared_cores container (pod p1 "web", container "app", 500 Mbps):
  // something for the views to show. Its output, for the caller to check.
  testing::CommandResult CtlAllocateWeb() {
    return Ctl({"allocate", "--pod-uid", "p1", "--pod-name", "web", "--container", "app", "--qos",
                "shared_cores", "--mbps", "500"});
  }

 private:
  // The socket is there and GetInfo answers on it.
  bool Answers() {
    if (!std::filesystem::exists(socket_path())) return false;
    reg::PluginInfo info;
    return GetInfo(&info, std::chrono::milliseconds(500)).ok();
  }
  testing::NetqosdDirs Dirs() const { return {sock_dir_, state_dir_, in_memory_state_dir()}; }

  testing::TempDir dir_;
  std::string sock_dir_;
  std::string state_dir_;
  std::string topo_path_;
  std::unique_ptr<testing::DaemonProcess> daemon_;
};

// Builders for kubelet requests in the fixture's shorthand.
struct Req {
  static rp::ResourceRequest Container(const std::string& pod_uid, rp::ContainerType type,
                                       const std::string& qos, double mbps) {
    rp::ResourceRequest r;
    r.set_pod_uid(pod_uid);
    r.set_pod_namespace("test");
    r.set_pod_name("test");
    r.set_container_name("test");
    r.set_container_type(type);
    r.set_container_index(0);
    r.set_resource_name(kResource);
    (*r.mutable_resource_requests())[kResource] = mbps;
    (*r.mutable_annotations())[kQosKey] = qos;
    (*r.mutable_labels())[kQosKey] = qos;
    return r;
  }
  static void NamespaceType(rp::ResourceRequest* r, const std::string& type) {
    (*r->mutable_annotations())[kEnhancementKey] = "{\"namespace_type\": \"" + type + "\"}";
  }
  static void Hint(rp::ResourceRequest* r, std::vector<uint64_t> nodes, bool preferred) {
    for (auto n : nodes) r->mutable_hint()->add_nodes(n);
    r->mutable_hint()->set_preferred(preferred);
  }
};

using HintTuple = std::pair<std::vector<uint64_t>, bool>;

inline std::map<std::string, std::string> ToMap(
    const google::protobuf::Map<std::string, std::string>& m) {
  return {m.begin(), m.end()};
}

inline std::vector<HintTuple> SortedHints(const rp::ListOfTopologyHints& list) {
  std::vector<HintTuple> out;
  for (const auto& h : list.hints())
    out.emplace_back(std::vector<uint64_t>(h.nodes().begin(), h.nodes().end()), h.preferred());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace netqos::e2e
