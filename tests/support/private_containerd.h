// A private containerd for tests: its own config, root, state, socket and CNI config under a
// temporary directory (never the system's /run/containerd), runc with the cgroupfs driver, and a
// busybox-static image built on the spot as both the container and the sandbox ("pause") image.
// Pods are made through CRI the way the kubelet makes them (its labels and annotations), in the
// node's network namespace or in their own behind a CNI bridge (host-local addresses). The
// destructor removes every sandbox, stops containerd and its shims, unmounts what it mounted
// (overlay snapshots, /dev/shm, network namespaces), and removes its cgroups, the CNI bridge and
// the directory, whether the test passed or not. containerd 1.6 keeps its shims' sockets under
// /run/containerd/s whatever its config (named by a hash of our socket's path); they go with the
// shims.
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/client_unary_call.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "sandbox_lifecycle.pb.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace netqos::testing {

class PrivateContainerd {
 public:
  static constexpr char kImage[] = "docker.io/netqos/busybox:test";
  static constexpr char kBridge[] = "nqcri0";
  static constexpr char kSubnet[] = "10.213.0.0/24";

  // `with_nri`: also serve NRI on nri_socket() (containerd 1.7+; 1.6 ignores the section).
  // `nri_request_timeout`: how long containerd waits for a plugin's reply (0: its default, 2 s).
  explicit PrivateContainerd(bool with_nri = false,
                             std::chrono::milliseconds nri_request_timeout = {})
      : cgroup_top_("nqcri-" + std::to_string(::getpid())),
        with_nri_(with_nri),
        nri_request_timeout_(nri_request_timeout) {
    for (const char* tool :
         {"containerd", "containerd-shim-runc-v2", "runc", "ctr", "busybox", "ip"}) {
      if (Which(tool).empty()) {
        throw std::runtime_error(std::string(tool) +
                                 " not installed (scripts/install-deps.sh installs it)");
      }
    }
    if (!std::filesystem::exists("/usr/lib/cni/bridge")) {
      throw std::runtime_error("/usr/lib/cni/bridge missing (containernetworking-plugins)");
    }
    major_ = MajorVersion();
    WriteConfig();
    StartDaemon();
    auto image = RunCommand({NETQOS_BUSYBOX_IMAGE_SCRIPT, dir_.file("image.tar"), kImage},
                            dir_.file("image.out"));
    auto import = image.exit_code == 0
                      ? RunCommand({Which("ctr"), "--address", socket(), "-n", "k8s.io", "images",
                                    "import", dir_.file("image.tar")},
                                   dir_.file("import.out"), std::chrono::seconds(120))
                      : image;
    if (import.exit_code != 0) {
      Cleanup();
      throw std::runtime_error("building or importing the busybox image failed: " + import.output);
    }
  }
  ~PrivateContainerd() { Cleanup(); }
  PrivateContainerd(const PrivateContainerd&) = delete;
  PrivateContainerd& operator=(const PrivateContainerd&) = delete;

  // containerd's major version (1 or 2): its config's layout and what its NRI sends differ.
  int major_version() const { return major_; }
  std::string socket() const { return dir_.file("c.sock"); }
  std::string nri_socket() const { return dir_.file("nri.sock"); }
  std::string endpoint() const { return "unix://" + socket(); }
  std::string Log() const { return ReadOutput(dir_.file("containerd.log")); }
  // The cgroup parent of pods, relative to the cgroup root: "<top>/kubepods/<qos dir>".
  std::string CgroupParentOf(const std::string& qos_dir) const {
    return "/" + cgroup_top_ + "/kubepods" + (qos_dir.empty() ? "" : "/" + qos_dir);
  }
  const std::string& cgroup_top() const { return cgroup_top_; }

  struct Pod {
    std::string uid, ns, name;
    std::string qos_dir;  // "", "burstable", "besteffort"
    bool host_network = false;
    std::map<std::string, std::string> annotations;
    // Relative to the cgroup root; "" = CgroupParentOf(qos_dir) + "/pod" + uid. Another root
    // (a test's own) is removed below the pod in the v1 hierarchies only; the caller owns it in
    // the unified one.
    std::string cgroup_parent;
  };

  // RunPodSandbox as the kubelet does it; returns the sandbox id.
  std::string RunSandbox(const Pod& pod) {
    test::cri::RunPodSandboxRequest req;
    *req.mutable_config() = SandboxConfig(pod);
    test::cri::RunPodSandboxResponse resp;
    Call("RunPodSandbox", req, &resp);
    sandboxes_.push_back(resp.pod_sandbox_id());
    configs_[resp.pod_sandbox_id()] = pod;
    return resp.pod_sandbox_id();
  }

  // CreateContainer + StartContainer; returns the container id. `command` replaces the image's
  // (which sleeps) when not empty.
  std::string StartContainer(const std::string& sandbox_id, const std::string& name,
                             const std::vector<std::string>& command = {}) {
    const Pod& pod = configs_.at(sandbox_id);
    test::cri::CreateContainerRequest req;
    req.set_pod_sandbox_id(sandbox_id);
    *req.mutable_sandbox_config() = SandboxConfig(pod);
    auto* c = req.mutable_config();
    c->mutable_metadata()->set_name(name);
    c->mutable_image()->set_image(kImage);
    for (const auto& word : command) c->add_command(word);
    c->set_log_path(name + ".log");
    (*c->mutable_labels())["io.kubernetes.pod.uid"] = pod.uid;
    (*c->mutable_labels())["io.kubernetes.pod.namespace"] = pod.ns;
    (*c->mutable_labels())["io.kubernetes.pod.name"] = pod.name;
    (*c->mutable_labels())["io.kubernetes.container.name"] = name;
    test::cri::CreateContainerResponse created;
    Call("CreateContainer", req, &created);
    test::cri::ContainerIdRequest start;
    start.set_container_id(created.container_id());
    test::cri::Empty none;
    Call("StartContainer", start, &none);
    return created.container_id();
  }

  // containerd stopped (SIGTERM) and started again on the same config and state, as a node's
  // runtime restarts: the shims and the containers keep running meanwhile.
  void Restart() {
    channel_.reset();
    StopDaemon();
    StartDaemon();
  }

  void StopContainer(const std::string& id) {
    test::cri::ContainerIdRequest req;
    req.set_container_id(id);
    req.set_timeout(0);
    test::cri::Empty none;
    Call("StopContainer", req, &none);
  }

 private:
  test::cri::PodSandboxConfig SandboxConfig(const Pod& pod) const {
    test::cri::PodSandboxConfig c;
    c.mutable_metadata()->set_uid(pod.uid);
    c.mutable_metadata()->set_namespace_(pod.ns);
    c.mutable_metadata()->set_name(pod.name);
    if (!pod.host_network) c.set_hostname(pod.name);  // the kubelet sets none for host network
    c.set_log_directory(dir_.file("logs/" + pod.uid));
    (*c.mutable_labels())["io.kubernetes.pod.uid"] = pod.uid;
    (*c.mutable_labels())["io.kubernetes.pod.namespace"] = pod.ns;
    (*c.mutable_labels())["io.kubernetes.pod.name"] = pod.name;
    for (const auto& [k, v] : pod.annotations) (*c.mutable_annotations())[k] = v;
    c.mutable_linux()->set_cgroup_parent(ParentOf(pod));
    c.mutable_linux()->mutable_security_context()->mutable_namespace_options()->set_network(
        pod.host_network ? 2 : 0);
    return c;
  }

  std::string ParentOf(const Pod& pod) const {
    return pod.cgroup_parent.empty() ? CgroupParentOf(pod.qos_dir) + "/pod" + pod.uid
                                     : pod.cgroup_parent;
  }

  template <typename Req, typename Resp>
  void Call(const std::string& method, const Req& req, Resp* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    grpc::Status s = grpc::internal::BlockingUnaryCall<Req, Resp, grpc::protobuf::MessageLite,
                                                       grpc::protobuf::MessageLite>(
        channel_.get(),
        grpc::internal::RpcMethod(("/runtime.v1.RuntimeService/" + method).c_str(),
                                  grpc::internal::RpcMethod::NORMAL_RPC),
        &ctx, req, resp);
    if (!s.ok()) {
      throw std::runtime_error("CRI " + method + ": " + s.error_message() + "\n" + Log());
    }
  }

  // The major version from `containerd --version` ("containerd <module path> 1.7.24~ds1 ...",
  // "containerd github.com/containerd/containerd/v2 2.1.9+unknown").
  int MajorVersion() {
    auto out = RunCommand({Which("containerd"), "--version"}, dir_.file("version.out"));
    std::istringstream words(out.output);
    std::string name, module, version;
    words >> name >> module >> version;
    if (out.exit_code != 0 || version.empty() || !std::isdigit(version[0])) {
      throw std::runtime_error("no version in `containerd --version`: " + out.output);
    }
    return std::stoi(version);
  }

  void WriteConfig() {
    const std::string d = dir_.path();
    std::filesystem::create_directories(d + "/cni");
    std::ofstream config(d + "/config.toml");
    config << "version = " << (major_ >= 2 ? 3 : 2) << "\n"
           << "root = \"" << d << "/root\"\nstate = \"" << d
           << "/state\"\n"
           // Plugins that would look outside the directory, or need what this host lacks (an id
           // this containerd does not have is ignored).
           << "disabled_plugins = [\"io.containerd.snapshotter.v1.aufs\", "
              "\"io.containerd.snapshotter.v1.btrfs\", \"io.containerd.snapshotter.v1.zfs\", "
              "\"io.containerd.snapshotter.v1.devmapper\", \"io.containerd.internal.v1.opt\", "
              "\"io.containerd.snapshotter.v1.blockfile\", \"io.containerd.snapshotter.v1.erofs\", "
              "\"io.containerd.differ.v1.erofs\"]\n"
           << "[grpc]\n  address = \"" << d << "/c.sock\"\n"
           << "[ttrpc]\n  address = \"" << d << "/c.sock.ttrpc\"\n";
    // containerd 2 split the CRI plugin: images (the sandbox image, the snapshotter) and runtime
    // (runtimes, CNI, OCI spec options) are plugins of their own; grpc.v1.cri keeps the server.
    const std::string cri = "plugins.\"io.containerd.grpc.v1.cri\"";
    const std::string images = major_ >= 2 ? "plugins.\"io.containerd.cri.v1.images\"" : cri;
    const std::string runtime = major_ >= 2 ? "plugins.\"io.containerd.cri.v1.runtime\"" : cri;
    config << "[" << cri << "]\n"
           << "  stream_server_address = \"127.0.0.1\"\n  stream_server_port = \"0\"\n";
    if (major_ >= 2) {
      config << "[" << images << "]\n  snapshotter = \"overlayfs\"\n"
             << "[" << images << ".pinned_images]\n  sandbox = \"" << kImage << "\"\n"
             << "[" << runtime << "]\n";
    } else {
      config << "  sandbox_image = \"" << kImage << "\"\n";
    }
    config
        // The kubelet's -998 for sandboxes needs CAP_SYS_RESOURCE, which a test host (a
        // container, a VM's restricted root) may lack: never go below containerd's own.
        << "  restrict_oom_score_adj = true\n"
        << "  netns_mounts_under_state_dir = true\n"
        << "[" << runtime << ".containerd]\n"
        << (major_ >= 2 ? "" : "  snapshotter = \"overlayfs\"\n")
        << "  default_runtime_name = \"runc\"\n"
        << "[" << runtime << ".containerd.runtimes.runc]\n"
        << "  runtime_type = \"io.containerd.runc.v2\"\n"
        << "[" << runtime << ".containerd.runtimes.runc.options]\n"
        << "  SystemdCgroup = false\n"
        // runc's state too stays in the directory, not in /run/containerd/runc.
        << "  Root = \"" << d << "/runc\"\n"
        << "[" << runtime << ".cni]\n"
        << (major_ >= 2 ? "  bin_dirs = [\"/usr/lib/cni\"]\n" : "  bin_dir = \"/usr/lib/cni\"\n")
        << "  conf_dir = \"" << d << "/cni\"\n";
    if (with_nri_) {
      // External plugins only, on a socket of ours (the default is the system's).
      config << "[plugins.\"io.containerd.nri.v1.nri\"]\n  disable = false\n"
             << "  disable_connections = false\n  socket_path = \"" << d << "/nri.sock\"\n"
             << "  plugin_path = \"" << d << "/nri-plugins\"\n  plugin_config_path = \"" << d
             << "/nri-conf\"\n";
      if (nri_request_timeout_.count() > 0) {
        config << "  plugin_request_timeout = \"" << nri_request_timeout_.count() << "ms\"\n";
      }
    }
    config.close();
    // Pods with a network namespace of their own: a bridge with host-local addresses.
    std::ofstream(d + "/cni/10-netqos-test.conflist")
        << R"({"cniVersion":"0.4.0","name":"netqos-test","plugins":[{"type":"bridge","bridge":")"
        << kBridge << R"(","isGateway":true,"ipMasq":false,"ipam":{"type":"host-local",)"
        << R"("ranges":[[{"subnet":")" << kSubnet << R"("}]],"dataDir":")" << d << R"(/ipam"}}]})";
  }

  void StartDaemon() {
    pid_ = Spawn({Which("containerd"), "--config", dir_.file("config.toml")},
                 dir_.file("containerd.log"));
    channel_ = grpc::CreateChannel(endpoint(), grpc::InsecureChannelCredentials());
    // Bounded wait for the socket to answer: containerd boots in well under a second here.
    if (!channel_->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(30))) {
      Cleanup();
      throw std::runtime_error("private containerd did not start:\n" + Log());
    }
  }

  void StopDaemon() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    if (!WaitPid(pid_, std::chrono::seconds(20))) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    pid_ = -1;
  }

  // Each step runs even when an earlier one failed.
  void Cleanup() {
    if (cleaned_) return;
    cleaned_ = true;
    for (const auto& id : sandboxes_) {
      test::cri::PodSandboxIdRequest req;
      req.set_pod_sandbox_id(id);
      test::cri::Empty none;
      try {
        Call("StopPodSandbox", req, &none);
        Call("RemovePodSandbox", req, &none);
      } catch (const std::exception&) {
        // containerd gone already: the steps below still clean up
      }
    }
    channel_.reset();
    StopDaemon();
    KillOurShims();
    UnmountUnder(dir_.path());
    RemoveCgroups();
    RunCommand({Which("ip"), "link", "del", kBridge}, dir_.file("bridge.out"));
  }

  // The program's absolute path from $PATH (Spawn execs without a search); "" when not found.
  static std::string Which(const std::string& name) {
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
      const std::string candidate = dir + "/" + name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    return "";
  }

  static bool WaitPid(pid_t pid, std::chrono::seconds bound) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    while (std::chrono::steady_clock::now() < deadline) {
      if (::waitpid(pid, nullptr, WNOHANG) == pid) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // containerd-shim-runc-v2 processes started for this containerd (their command line names our
  // socket), and what runs under them, by pid.
  void KillOurShims() {
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      const std::string name = e.path().filename();
      if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
      std::ifstream in(e.path() / "cmdline", std::ios::binary);
      std::string cmdline((std::istreambuf_iterator<char>(in)), {});
      if (cmdline.find("containerd-shim") != std::string::npos &&
          cmdline.find(dir_.path()) != std::string::npos) {
        ::kill(std::stoi(name), SIGKILL);
      }
    }
  }

  static void UnmountUnder(const std::string& root) {
    for (int pass = 0; pass < 3; ++pass) {
      std::ifstream in("/proc/self/mountinfo");
      std::vector<std::string> points;
      std::string line;
      while (std::getline(in, line)) {
        std::istringstream f(line);
        std::string id, parent, dev, rootfield, point;
        f >> id >> parent >> dev >> rootfield >> point;
        if (point.rfind(root + "/", 0) == 0) points.push_back(point);
      }
      if (points.empty()) return;
      std::sort(points.rbegin(), points.rend());  // deepest first
      for (const auto& p : points) ::umount2(p.c_str(), MNT_DETACH);
    }
  }

  // rmdir bottom-up of <hierarchy>/<cgroup_top_> in every mounted cgroup hierarchy; for pods
  // with a cgroup parent of their own, its subtree everywhere and the directories above it that
  // runc made in the v1 hierarchies.
  void RemoveCgroups() {
    for (const auto& [id, pod] : configs_) {
      if (pod.cgroup_parent.empty()) continue;
      for (const auto& e : std::filesystem::directory_iterator("/sys/fs/cgroup")) {
        std::string dir = e.path().string() + pod.cgroup_parent;
        RemoveTree(dir);
        if (e.path().filename() == "unified") continue;
        for (auto up = std::filesystem::path(dir).parent_path();
             up.string().size() > e.path().string().size(); up = up.parent_path()) {
          ::rmdir(up.c_str());
        }
      }
    }
    std::vector<std::string> roots = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
    for (const auto& e : std::filesystem::directory_iterator("/sys/fs/cgroup")) {
      roots.push_back(e.path());
    }
    for (const auto& r : roots) RemoveTree(r + "/" + cgroup_top_);
  }

  static void RemoveTree(const std::string& top) {
    std::error_code ec;
    if (!std::filesystem::is_directory(top, ec)) return;
    std::vector<std::string> dirs{top};
    for (auto it = std::filesystem::recursive_directory_iterator(top, ec);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      if (it->is_directory(ec)) dirs.push_back(it->path());
    }
    std::sort(dirs.rbegin(), dirs.rend());
    for (const auto& d : dirs) ::rmdir(d.c_str());
  }

  TempDir dir_;
  std::string cgroup_top_;
  bool with_nri_ = false;
  std::chrono::milliseconds nri_request_timeout_{};
  int major_ = 1;
  pid_t pid_ = -1;
  std::shared_ptr<grpc::Channel> channel_;
  std::vector<std::string> sandboxes_;
  std::map<std::string, Pod> configs_;
  bool cleaned_ = false;
};

}  // namespace netqos::testing
