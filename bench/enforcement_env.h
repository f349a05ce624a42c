// One enforcement benchmark's world, built from the test fixtures (tests/support): a network
// namespace with a veth into it (the only NIC the daemon sees), an extra kubepods root cgroup
// (--addition-cgroup-paths) holding the "containers", a file:// pod list, a bpffs of its own,
// and the real netqosd with --enforcement=bpf. Everything lives under one directory of the
// benchmark's --work-dir (state/, bpf/ = the bpffs mount, sock/, pods.json), so scripts/bench.sh
// can sweep up after a run that was killed; the destructor removes it all (stopping netqosd,
// `netqosd --uninstall`, which also puts back the ip_forward_update_priority sysctl the daemon
// changed, cgroups with whatever runs in them, netns, veth, bpffs).
#pragma once

#include <bpf/bpf.h>
#include <net/if.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.h"
#include "common/tc_handle.h"
#include "kubelet_client.h"
#include "netqos_abi.h"
#include "support/cgroup_fixture.h"
#include "support/files.h"
#include "support/netns.h"
#include "support/process.h"
#include "support/traffic.h"

namespace netqos::bench {

// A container leaf: 10:<minor> with minor >= 0x100 (below are the QoS levels and their defaults).
inline bool IsContainerLeaf(uint32_t priority) {
  return (priority >> 16) == 0x10 && (priority & 0xffffu) >= 0x100 &&
         (priority & 0xffffu) != 0xffff;
}

inline uint64_t InodeOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw std::runtime_error("stat " + path);
  return static_cast<uint64_t>(st.st_ino);
}

inline void MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    throw std::runtime_error("mkdir " + path + ": " + std::strerror(errno));
  }
}

// rmdir, retried while the cgroup's last task is still leaving it.
inline void RemoveDirRetry(const std::string& path) {
  for (int i = 0; i < 300; ++i) {
    if (::rmdir(path.c_str()) == 0 || errno == ENOENT) return;
    std::this_thread::sleep_for(10ms);
  }
}

struct BenchPod {
  std::string uid;  // lowercase hex with dashes
  std::string name;
  std::string container = "app";
  std::string cid;  // container id (hex)
};

// Pod `n` of round `round`: distinct uids and container ids across rounds.
inline BenchPod MakeBenchPod(int round, int n) {
  char uid[48], cid[32];
  std::snprintf(uid, sizeof(uid), "%08x-0000-4000-8000-%06x%06x", n, round & 0xffffff,
                static_cast<unsigned>(::getpid()) & 0xffffff);
  std::snprintf(cid, sizeof(cid), "c0ffee%04x%08x", round & 0xffff, n);
  return {uid, "bench-" + std::to_string(round) + "-" + std::to_string(n), "app", cid};
}

inline std::string PodListJson(const std::vector<BenchPod>& pods) {
  nlohmann::json items = nlohmann::json::array();
  for (const auto& p : pods) {
    items.push_back({{"metadata",
                      {{"uid", p.uid},
                       {"namespace", "bench"},
                       {"name", p.name},
                       {"annotations", {{e2e::kQosKey, "shared_cores"}}}}},
                     {"status",
                      {{"qosClass", "Burstable"},
                       {"containerStatuses",
                        {{{"name", p.container}, {"containerID", "containerd://" + p.cid}}}}}}});
  }
  return nlohmann::json{{"kind", "PodList"}, {"apiVersion", "v1"}, {"items", items}}.dump();
}

class EnforcementEnv {
 public:
  // `id` (1-2 chars) tells apart the environments of one benchmark; `subnet` their addresses.
  EnforcementEnv(const Args& args, const std::string& id, int subnet)
      : dir_(std::make_unique<ScopedDir>(args.work_dir, args.tag + id + "-env")) {
    const std::string p = args.tag + id;
    ns_ = p + "n";
    host_ = p + "h";
    peer_ = p + "p";
    host_ip_ = "10.24" + std::to_string(subnet) + ".0.1";
    peer_ip_ = "10.24" + std::to_string(subnet) + ".0.2";
    net_ = std::make_unique<testing::NetnsFixture>();
    net_->AddNamespace(ns_);
    net_->SetUp(ns_, "lo", true);
    net_->AddVeth(host_, peer_, ns_);
    net_->AddAddress("", host_, host_ip_ + "/24");
    net_->AddAddress(ns_, peer_, peer_ip_ + "/24");
    net_->SetUp("", host_, true);
    net_->SetUp(ns_, peer_, true);

    MakeDir(dir_->file("bpf"));
    if (::mount("bpf", dir_->file("bpf").c_str(), "bpf", 0, "mode=0700") != 0) {
      throw std::runtime_error("mount bpffs at " + dir_->file("bpf") + ": " + std::strerror(errno));
    }
    bpffs_mounted_ = true;
    MakeDir(dir_->file("sock"));

    root_name_ = p + "-kubepods";
    cg_root_ = std::make_unique<testing::TestCgroup>(root_name_);
    WritePods();
  }

  ~EnforcementEnv() {
    try {
      StopDaemon();
    } catch (...) {
    }
    if (map_fd_ >= 0) ::close(map_fd_);
    cg_root_.reset();  // kills what still runs in the containers' cgroups, removes them
    net_.reset();
    if (bpffs_mounted_) ::umount2(dir_->file("bpf").c_str(), MNT_DETACH);
  }
  EnforcementEnv(const EnforcementEnv&) = delete;
  EnforcementEnv& operator=(const EnforcementEnv&) = delete;

  const std::string& ns() const { return ns_; }
  const std::string& host_if() const { return host_; }
  const std::string& peer_if() const { return peer_; }
  const std::string& host_ip() const { return host_ip_; }
  const std::string& peer_ip() const { return peer_ip_; }
  std::string dir() const { return dir_->path(); }
  std::string PinDir() const { return dir_->file("bpf") + "/netqos"; }
  std::string StateDir() const { return dir_->file(state_name_); }
  // The next StartDaemon's state directory, under the env's own: another node's allocations
  // (none, in a directory never used before) on the same veth and cgroups.
  void UseStateDir(const std::string& name) { state_name_ = name; }
  std::string PodsFile() const { return dir_->file("pods.json"); }
  std::string Ifb() const { return "nqifb" + std::to_string(::if_nametoindex(host_.c_str())); }

  // --- pods and container cgroups ---
  std::vector<BenchPod> pods;

  void WritePods() {
    const std::string tmp = PodsFile() + ".tmp";
    testing::WriteFile(tmp, PodListJson(pods));
    std::filesystem::rename(tmp, PodsFile());
  }
  std::string PodCgroup(const BenchPod& p) const { return cg_root_->Path() + "/pod" + p.uid; }
  std::string ContainerCgroup(const BenchPod& p) const { return PodCgroup(p) + "/" + p.cid; }
  // mkdir of the pod's and the container's cgroups, as the runtime does.
  std::string MakeCgroup(const BenchPod& p) {
    MakeDir(PodCgroup(p));
    MakeDir(ContainerCgroup(p));
    return ContainerCgroup(p);
  }
  void RemoveCgroup(const BenchPod& p) {
    RemoveDirRetry(ContainerCgroup(p));
    RemoveDirRetry(PodCgroup(p));
  }

  // --- netqosd ---
  // enforce: shape the veth (HTB + IFB); otherwise classify and count only. speed_mbps: the
  // veth's speed for netqos (the capacity allocations are checked against, and HTB's root rate).
  // The flags that make the veth this daemon's only NIC, of speed_mbps.
  std::vector<std::string> NicFlags(int speed_mbps) const {
    std::string deny;
    for (const auto& link : testing::ListDir("/sys/class/net")) {
      if (link != host_) deny += (deny.empty() ? "" : ",") + link;
    }
    return {"--nic-allow=" + host_, "--nic-deny=" + deny,
            "--nic-speed-override=" + host_ + "=" + std::to_string(speed_mbps),
            "--nic-selection=first"};
  }

  void StartDaemon(bool enforce, int speed_mbps, std::vector<std::string> extra = {}) {
    std::vector<std::string> flags = {
        "--qrm-state-dir=" + StateDir(), "--bpf-pin-dir=" + PinDir(), "--pod-source=kubelet",
        "--kubelet-pods-url=file://" + PodsFile(), "--addition-cgroup-paths=/" + root_name_};
    for (auto& f : NicFlags(speed_mbps)) flags.push_back(std::move(f));
    if (enforce) flags.push_back("--enforce-nics=" + host_);
    flags.insert(flags.end(), extra.begin(), extra.end());
    enforced_ = enforce;
    // The log holds every run's lines: this run's come after the serving lines already there.
    const std::string log_path = dir_->file("netqosd.log");
    const size_t serving_before =
        std::filesystem::exists(log_path) ? Occurrences(testing::ReadFile(log_path), kServing) : 0;
    daemon_ = std::make_unique<Netqosd>(flags, dir_->file("sock"), dir_->file("netqosd.log"),
                                        std::chrono::seconds(300));
    kubelet_ = std::make_unique<KubeletClient>(daemon_->socket());
    WaitEnforcementStarted(serving_before);
    if (map_fd_ >= 0) ::close(map_fd_);
    map_fd_ = bpf_obj_get((PinDir() + "/" NETQOS_STR(NETQOS_MAP_CLASS)).c_str());
    if (map_fd_ < 0) throw std::runtime_error("no pinned class map in " + PinDir());
  }

  // netqosd serves before its enforcement starts (the dataplane opened, the class map pinned and
  // adopted): the benches measure from a started daemon, as before. A daemon that started
  // enforcement before serving says so by an enforcement_ms phase in its serving line.
  void WaitEnforcementStarted(size_t serving_before) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string log = daemon_->Log();
      if (Occurrences(log, kServing) > serving_before) {
        const size_t serving = log.rfind(kServing);
        const size_t line_end = log.find('\n', serving);
        if (log.substr(serving, line_end - serving).find("enforcement_ms=") != std::string::npos)
          return;
        if (log.find("enforcement started", serving) != std::string::npos) return;
        if (log.find("enforcement disabled", serving) != std::string::npos)
          throw std::runtime_error("netqosd enforcement disabled:\n" + log);
      }
      // Not more often: the log holds every allocation the bench made, and this shares the CPU.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    throw std::runtime_error("netqosd enforcement did not start within 60 s");
  }

  static constexpr char kServing[] = "netqosd serving";
  static size_t Occurrences(const std::string& text, const std::string& needle) {
    size_t n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
      ++n;
    return n;
  }

  // SIGTERM, then `netqosd --uninstall`: nothing of netqos is left attached.
  void StopDaemon() {
    if (!daemon_) return;
    kubelet_.reset();
    std::string error;
    try {
      daemon_->Stop();
    } catch (const std::exception& e) {
      error = e.what();
    }
    daemon_.reset();
    std::vector<std::string> argv = {NetqosdPath(), "--uninstall", "--bpf-pin-dir=" + PinDir(),
                                     "--qrm-state-dir=" + StateDir()};
    if (enforced_) argv.push_back("--enforce-nics=" + host_);
    auto un = testing::RunCommand(argv, dir_->file("uninstall.out"), std::chrono::seconds(120));
    if (un.exit_code != 0) error += " netqosd --uninstall: " + un.output;
    if (map_fd_ >= 0) ::close(map_fd_);
    map_fd_ = -1;
    if (!error.empty()) throw std::runtime_error(error);
  }

  // SIGTERM only: the pins, qdiscs and IFBs stay for the next StartDaemon to adopt.
  void StopKeepingPins() {
    kubelet_.reset();
    if (daemon_) daemon_->Stop();
    daemon_.reset();
    if (map_fd_ >= 0) ::close(map_fd_);
    map_fd_ = -1;
  }

  Netqosd& daemon() { return *daemon_; }
  bool Running() { return daemon_ && daemon_->Running(); }
  KubeletClient& kubelet() { return *kubelet_; }

  void Allocate(const BenchPod& p, double mbps) {
    Check(kubelet_->Allocate(ContainerRequest(p.uid, p.name, p.container, mbps)),
          "Allocate " + p.name);
  }
  void RemovePod(const BenchPod& p) { Check(kubelet_->RemovePod(p.uid), "RemovePod " + p.name); }

  // The class map entry of a cgroup, read from the pinned map.
  std::optional<netqos_class> Class(uint64_t cgroup_id) const {
    netqos_class v{};
    if (map_fd_ < 0 || bpf_map_lookup_elem(map_fd_, &cgroup_id, &v) != 0) return std::nullopt;
    return v;
  }
  // Number of entries whose priority is a container leaf.
  size_t CountLeafEntries() const {
    size_t n = 0;
    uint64_t key = 0, next = 0;
    const void* prev = nullptr;
    while (map_fd_ >= 0 && bpf_map_get_next_key(map_fd_, prev, &next) == 0) {
      netqos_class v{};
      if (bpf_map_lookup_elem(map_fd_, &next, &v) == 0 && IsContainerLeaf(v.priority)) ++n;
      key = next;
      prev = &key;
    }
    return n;
  }
  // Waits until the cgroup has a class map entry (any class); false after `limit`.
  bool WaitEntry(const std::string& cgroup_dir, Clock::duration limit) const {
    const uint64_t id = InodeOf(cgroup_dir);
    const auto end = Clock::now() + limit;
    while (Clock::now() < end) {
      if (Class(id)) return true;
      CheckInterrupted();
      std::this_thread::sleep_for(2ms);
    }
    return false;
  }
  // Waits until the cgroup's entry is a container leaf; its priority, or 0 after `limit`.
  uint32_t WaitLeaf(const std::string& cgroup_dir, Clock::duration limit) const {
    const uint64_t id = InodeOf(cgroup_dir);
    const auto end = Clock::now() + limit;
    while (Clock::now() < end) {
      if (auto c = Class(id); c && IsContainerLeaf(c->priority)) return c->priority;
      CheckInterrupted();
      std::this_thread::sleep_for(2ms);
    }
    return 0;
  }

 private:
  std::unique_ptr<ScopedDir> dir_;  // destroyed last
  std::string ns_, host_, peer_, host_ip_, peer_ip_;
  std::unique_ptr<testing::NetnsFixture> net_;
  bool bpffs_mounted_ = false;
  std::string root_name_;
  std::unique_ptr<testing::TestCgroup> cg_root_;
  std::unique_ptr<Netqosd> daemon_;
  std::unique_ptr<KubeletClient> kubelet_;
  bool enforced_ = false;
  int map_fd_ = -1;
  std::string state_name_ = "state";
};

}  // namespace netqos::bench
