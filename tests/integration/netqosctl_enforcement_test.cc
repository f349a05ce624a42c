// netqosctl's operator commands (status, classes, top, cgroup) against the real netqosd enforcing
// on this machine, set up as scripts/demo-run.sh does: a veth into a network namespace as
// the only (shaped) NIC, two container cgroups under an extra kubepods root
// (--addition-cgroup-paths) listed by a file:// pod list, a private bpffs. Checked: what status,
// classes and cgroup report with the daemon up; that top's rate for a container sending through
// its 100 Mbit/s leaf is that cap (within 10 %); and that after SIGKILL of the daemon, classes and
// top still work from the pinned maps alone. Everything is removed on scope exit, also on
// failure. Root only.
#include <net/if.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

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
using netqos::testing::TempDir;
using netqos::testing::TestCgroup;
using netqos::testing::TrafficClock;
using netqos::testing::UniquePrefix;
using nlohmann::json;

constexpr char kForwardSysctl[] = "/proc/sys/net/ipv4/ip_forward_update_priority";
constexpr int kCapA = 100;  // Mbit/s
constexpr int kCapB = 300;
constexpr double kTopTolerance = 0.10;

uint64_t InodeOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw std::runtime_error("stat " + path);
  return static_cast<uint64_t>(st.st_ino);
}

int ReadIntFile(const std::string& path) {
  std::ifstream in(path);
  int v = -1;
  in >> v;
  return v;
}

void MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    throw std::runtime_error("mkdir " + path + ": " + std::strerror(errno));
  }
}

bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds limit) {
  const auto deadline = TrafficClock::now() + limit;
  while (TrafficClock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return pred();
}

struct Pod {
  std::string uid, name, container, container_id, cgroup;
};

// The world of this test. Its destructor tears everything down in dependency order: traffic, the
// daemon, `netqosd --uninstall` (pins, HTB, IFB, sysctl), cgroups, namespace and veth, bpffs.
class CtlEnv {
 public:
  CtlEnv() : bpffs_(std::make_unique<PrivateBpffs>()), fx_(std::make_unique<NetnsFixture>()) {
    forward_before_ = ReadIntFile(kForwardSysctl);
    const std::string p = UniquePrefix() + "c";
    ns_ = p;
    host_ = p + "h";
    peer_ = p + "p";
    const std::string net = "10.247." + std::to_string(::getpid() % 200 + 20) + ".";
    host_ip_ = net + "1";
    peer_ip_ = net + "2";
    fx_->AddNamespace(ns_);
    fx_->SetUp(ns_, "lo", true);
    fx_->AddVeth(host_, peer_, ns_);
    fx_->AddAddress("", host_, host_ip_ + "/24");
    fx_->AddAddress(ns_, peer_, peer_ip_ + "/24");
    fx_->SetUp("", host_, true);
    fx_->SetUp(ns_, peer_, true);

    root_name_ = "netqos-ctltest-" + std::to_string(::getpid());
    cg_root_ = std::make_unique<TestCgroup>(root_name_);
    for (int i = 0; i < 2; ++i) {
      char uid[40], cid[24];
      std::snprintf(uid, sizeof(uid), "%08x-0000-4000-8000-%012x", 0xc7100 + i,
                    static_cast<unsigned>(::getpid()));
      std::snprintf(cid, sizeof(cid), "c7c7%02x%08x", i, static_cast<unsigned>(::getpid()));
      Pod pod{uid, i == 0 ? "pod-a" : "pod-b", "app", cid, ""};
      MakeDir(cg_root_->Path() + "/pod" + pod.uid);
      pod.cgroup = cg_root_->Path() + "/pod" + pod.uid + "/" + pod.container_id;
      MakeDir(pod.cgroup);
      pods_.push_back(pod);
    }
    plain_ = cg_root_->Path() + "/not-a-container";
    MakeDir(plain_);
    WritePods();
  }

  ~CtlEnv() {
    try {
      const std::string left = Teardown();
      if (!left.empty()) std::printf("cleanup left: %s\n", left.c_str());
    } catch (...) {
    }
  }
  CtlEnv(const CtlEnv&) = delete;
  CtlEnv& operator=(const CtlEnv&) = delete;

  const Pod& pod(size_t i) const { return pods_.at(i); }
  const std::string& plain() const { return plain_; }
  const std::string& host() const { return host_; }
  std::string PinDir() const { return bpffs_->PinDir(); }
  std::string Socket() const { return dir_.file("sock") + "/qrm_network_plugin_static.sock"; }
  std::string Log() const { return daemon_ ? daemon_->Log() : log_; }

  void StartDaemon() {
    std::string deny;
    for (const auto& link : netqos::testing::ListDir("/sys/class/net")) {
      if (link != host_) deny += (deny.empty() ? "" : ",") + link;
    }
    daemon_ = std::make_unique<DaemonProcess>(
        std::vector<std::string>{
            NETQOSD_PATH, "--enforcement=bpf", "--qrm-socket-dirs=" + dir_.file("sock"),
            "--qrm-state-dir=" + dir_.file("state"), "--bpf-pin-dir=" + PinDir(),
            "--kubelet-pods-url=file://" + dir_.file("pods.json"),
            "--addition-cgroup-paths=/" + root_name_, "--nic-allow=" + host_, "--nic-deny=" + deny,
            "--enforce-nics=" + host_, "--nic-selection=first", "--enforcement-resync-period=2"},
        dir_.file("netqosd.log"));
    if (!WaitFor([&] { return !daemon_->Running() || Ctl({"plugin-info"}).exit_code == 0; },
                 15000ms) ||
        !daemon_->Running()) {
      throw std::runtime_error("netqosd did not start:\n" + daemon_->Log());
    }
  }

  void KillDaemon() {
    REQUIRE(daemon_->Stop(SIGKILL) == 128 + SIGKILL);
    log_ = daemon_->Log();
    daemon_.reset();
  }

  CommandResult Ctl(std::vector<std::string> args, std::chrono::seconds timeout = 30s) {
    args.insert(args.begin(), {NETQOSCTL_PATH, "--socket=" + Socket()});
    return RunCommand(args, dir_.file("ctl.out"), timeout);
  }

  // Runs netqosctl and parses its --json output (failing the test with the output otherwise).
  json CtlJson(std::vector<std::string> args, int want_exit = 0) {
    args.push_back("--json");
    const CommandResult r = Ctl(args);
    INFO("netqosctl output: " << r.output);
    REQUIRE(r.exit_code == want_exit);
    return json::parse(r.output);
  }

  void Allocate(const Pod& p, int mbps) {
    auto r =
        Ctl({"allocate", "--pod-uid=" + p.uid, "--pod-namespace=ctltest", "--pod-name=" + p.name,
             "--container=" + p.container, "--qos=shared_cores", "--mbps=" + std::to_string(mbps)});
    if (r.exit_code != 0) throw std::runtime_error("netqosctl allocate failed: " + r.output);
  }

  Iperf3Server& Server(uint16_t port) {
    servers_.push_back(std::make_unique<Iperf3Server>(ns_, peer_ip_, port));
    return *servers_.back();
  }
  Iperf3Client& Send(const Pod& p, uint16_t port, int seconds) {
    clients_.push_back(std::make_unique<Iperf3Client>(Iperf3ClientOptions{
        .server_ip = peer_ip_, .port = port, .seconds = seconds, .cgroup = p.cgroup}));
    return *clients_.back();
  }

  // Everything down; returns what was left behind ("" = nothing).
  std::string Teardown() {
    if (torn_down_) return "";
    torn_down_ = true;
    std::string left;
    clients_.clear();
    servers_.clear();
    if (daemon_) {
      daemon_->Stop(SIGTERM, 10s);
      log_ = daemon_->Log();
      daemon_.reset();
    }
    auto un = RunCommand({NETQOSD_PATH, "--uninstall", "--bpf-pin-dir=" + PinDir(),
                          "--qrm-state-dir=" + dir_.file("state"), "--enforce-nics=" + host_},
                         dir_.file("uninstall.out"));
    if (un.exit_code != 0) {
      left += "netqosd --uninstall: " + un.output + "; ";
      // It restores the sysctl itself; put it back by hand only when it could not run. (Not
      // compared otherwise: other privileged tests may run netqosd at the same time.)
      std::ofstream(kForwardSysctl) << forward_before_ << std::flush;
    }
    const std::string root_dir = cg_root_ ? cg_root_->Path() : "";
    cg_root_.reset();
    std::error_code ec;
    if (!root_dir.empty() && std::filesystem::exists(root_dir, ec)) left += root_dir + " left; ";
    fx_.reset();  // the namespace and the veth (with its HTB and IFB peer state)
    ShOk("ip link del nqifb" + std::to_string(ifindex_));
    bpffs_.reset();
    return left;
  }

  void RecordIfindex() { ifindex_ = static_cast<int>(::if_nametoindex(host_.c_str())); }

 private:
  void WritePods() {
    json items = json::array();
    for (const auto& p : pods_) {
      items.push_back(
          {{"metadata",
            {{"uid", p.uid},
             {"namespace", "ctltest"},
             {"name", p.name},
             {"annotations", {{"katalyst.kubewharf.io/qos_level", "shared_cores"}}}}},
           {"status",
            {{"qosClass", "Burstable"},
             {"containerStatuses",
              {{{"name", p.container}, {"containerID", "containerd://" + p.container_id}}}}}}});
    }
    netqos::testing::WriteFile(dir_.file("pods.json"),
                               json{{"kind", "PodList"}, {"items", items}}.dump(1));
  }

  TempDir dir_;  // first member: destroyed last (holds the daemon's log)
  std::unique_ptr<PrivateBpffs> bpffs_;
  std::unique_ptr<NetnsFixture> fx_;
  int forward_before_ = -1;
  int ifindex_ = 0;
  std::string ns_, host_, peer_, host_ip_, peer_ip_;
  std::string root_name_;
  std::unique_ptr<TestCgroup> cg_root_;
  std::vector<Pod> pods_;
  std::string plain_;
  std::unique_ptr<DaemonProcess> daemon_;
  std::string log_;
  std::vector<std::unique_ptr<Iperf3Server>> servers_;
  std::vector<std::unique_ptr<Iperf3Client>> clients_;
  bool torn_down_ = false;
};

const json* FindCgroup(const json& containers, uint64_t id) {
  for (const auto& c : containers) {
    if (c.at("cgroup_id").get<uint64_t>() == id) return &c;
  }
  return nullptr;
}

std::vector<json> JsonLines(const std::string& text) {
  std::vector<json> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(json::parse(line));
  }
  return out;
}

// The container's tx rate in the last frame of `top --json` output, in Mbit/s.
double TopTxMbps(const std::vector<json>& frames, uint64_t id) {
  REQUIRE_FALSE(frames.empty());
  const json* c = FindCgroup(frames.back().at("containers"), id);
  REQUIRE(c != nullptr);
  return c->at("tx_bits_per_second").get<double>() / 1e6;
}

bool Near(double measured, double want) {
  return measured >= want * (1 - kTopTolerance) && measured <= want * (1 + kTopTolerance);
}

}  // namespace

TEST_CASE("netqosctl: status, classes, top and cgroup on a live enforcing netqosd, then without it",
          "[enforcement][ctl]") {
  CtlEnv env;
  env.StartDaemon();
  env.RecordIfindex();
  const Pod& a = env.pod(0);
  const Pod& b = env.pod(1);
  const uint64_t id_a = InodeOf(a.cgroup), id_b = InodeOf(b.cgroup);
  env.Allocate(a, kCapA);
  env.Allocate(b, kCapB);

  // Both containers classified, named and capped.
  json classes;
  const bool classified = WaitFor(
      [&] {
        const auto r = env.Ctl({"classes", "--json"});
        if (r.exit_code != 0) return false;
        classes = json::parse(r.output);
        for (uint64_t id : {id_a, id_b}) {
          const json* c = FindCgroup(classes.at("containers"), id);
          if (c == nullptr || !c->at("in_pinned_map").get<bool>() ||
              !c->at("known_to_daemon").get<bool>() || !c->at("capped").get<bool>()) {
            return false;
          }
        }
        return true;
      },
      10000ms);
  INFO("classes: " << classes.dump(1) << "\nnetqosd log:\n" << env.Log());
  REQUIRE(classified);

  SECTION("status, classes and cgroup with the daemon up") {
    const json status = env.CtlJson({"status"});
    INFO(status.dump(1));
    const json& d = status.at("daemon");
    CHECK(d.at("reachable") == true);
    CHECK(d.at("enforcement").at("mode") == "bpf");
    CHECK(d.at("enforcement").at("pin_dir") == env.PinDir());
    CHECK(d.at("enforcement").at("pods_known") == true);
    CHECK(d.at("enforcement").at("classified_containers").get<int>() >= 2);
    CHECK(d.at("enforcement").at("shaped_nics") == json::array({env.host()}));
    REQUIRE(d.at("nics").size() == 1);
    CHECK(d.at("nics")[0].at("nic") == env.host());
    CHECK(d.at("nics")[0].at("shaped") == true);
    CHECK(d.at("containers") == 2);
    CHECK(d.at("allocated_egress_mbps") == kCapA + kCapB);
    const json& pins = status.at("pinned");
    CHECK(pins.at("exists") == true);
    CHECK(pins.at("on_bpffs") == true);
    for (const auto& m : pins.at("maps")) {
      INFO(m.dump());
      CHECK(m.at("present") == true);
      CHECK(m.at("error") == "");
      if (m.at("name") == "netqos_cls_v1") CHECK(m.at("entries").get<int>() >= 2);
    }
    CHECK(pins.at("egress_link").at("present") == true);
    CHECK(pins.at("egress_link").at("prog_name") == "netqos_egress");
    CHECK(pins.at("egress_link").at("egress") == true);
    CHECK(pins.at("egress_link").at("cgroup_id") ==
          InodeOf(d.at("enforcement").at("cgroup_root").get<std::string>()));

    const auto text = env.Ctl({"status"});
    std::printf("$ netqosctl status\n%s\n", text.output.c_str());
    CHECK(text.exit_code == 0);
    CHECK_THAT(text.output, Catch::Contains("enforcement: bpf"));
    CHECK_THAT(text.output, Catch::Contains("egress link: pinned"));

    const json* ca = FindCgroup(classes.at("containers"), id_a);
    CHECK(ca->at("pod_name") == "pod-a");
    CHECK(ca->at("pod_namespace") == "ctltest");
    CHECK(ca->at("container") == "app");
    CHECK(ca->at("allocated_mbps") == kCapA);
    CHECK(ca->at("nic") == env.host());
    CHECK(ca->at("qos_level") == "shared_cores");
    const json* cb = FindCgroup(classes.at("containers"), id_b);
    CHECK(cb->at("pod_name") == "pod-b");
    CHECK(cb->at("allocated_mbps") == kCapB);
    CHECK(classes.at("daemon_reachable") == true);
    CHECK(classes.at("pinned_maps_read") == true);
    const auto table = env.Ctl({"classes"});
    std::printf("$ netqosctl classes\n%s\n", table.output.c_str());
    CHECK_THAT(table.output, Catch::Contains("ctltest/pod-a/app"));
    CHECK_THAT(table.output, Catch::Contains("ctltest/pod-b/app"));

    // A classified container, by path and by id.
    json cg = env.CtlJson({"cgroup", a.cgroup});
    INFO(cg.dump(1));
    CHECK(cg.at("cgroup_id") == id_a);
    CHECK(cg.at("classified") == true);
    CHECK(cg.at("class_entry").at("qos_level") == "shared_cores");
    CHECK(cg.at("daemon").at("container").at("pod_name") == "pod-a");
    CHECK(cg.at("daemon").at("container").at("capped") == true);
    CHECK_THAT(cg.at("reasons").dump(), Catch::Contains("capped at 100 Mbit/s on " + env.host()));
    cg = env.CtlJson({"cgroup", std::to_string(id_b)});
    CHECK(cg.at("path") == b.cgroup);
    CHECK(cg.at("daemon").at("container").at("pod_name") == "pod-b");
    const auto cg_text = env.Ctl({"cgroup", a.cgroup});
    std::printf("$ netqosctl cgroup %s\n%s\n", a.cgroup.c_str(), cg_text.output.c_str());
    const auto plain_text = env.Ctl({"cgroup", env.plain()});
    std::printf("$ netqosctl cgroup %s\n%s\n", env.plain().c_str(), plain_text.output.c_str());
    CHECK_THAT(cg_text.output, Catch::Contains("100 Mbps on " + env.host()));

    // An unclassified cgroup: why.
    cg = env.CtlJson({"cgroup", env.plain()});
    INFO(cg.dump(1));
    CHECK(cg.at("classified") == false);
    CHECK(cg.at("class_entry").is_null());
    CHECK(cg.at("looks_like_container") == false);
    CHECK_THAT(cg.at("reasons").dump(), Catch::Contains("not a container cgroup"));
  }

  SECTION("top shows the capped rate live, with and without the daemon") {
    env.Server(15411);
    auto& sender = env.Send(a, 15411, 7);
    std::this_thread::sleep_for(1500ms);  // past slow start and HTB's initial burst
    auto r = env.Ctl({"top", "--json", "--iterations", "2"});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    auto frames = JsonLines(r.output);
    REQUIRE(frames.size() == 2);
    CHECK(frames.back().at("names_from_daemon") == true);
    CHECK(frames.back().at("source") == "pinned maps");
    const json* row = FindCgroup(frames.back().at("containers"), id_a);
    REQUIRE(row != nullptr);
    CHECK(row->at("pod_name") == "pod-a");
    CHECK(row->at("htb_class").get<std::string>().rfind("10:", 0) == 0);
    const double live = TopTxMbps(frames, id_a);
    std::printf("top with netqosd: container A sends %.1f Mbit/s (cap %d)\n", live, kCapA);
    CHECK(Near(live, kCapA));
    CHECK(frames.back().at("classes").size() >= 1);
    const auto table = env.Ctl({"top", "--iterations", "1"});
    std::printf("$ netqosctl top --iterations 1\n%s\n", table.output.c_str());
    CHECK(table.exit_code == 0);
    CHECK_THAT(table.output, Catch::Contains("ctltest/pod-a/app"));
    auto result = sender.Wait();
    INFO(result.output);
    CHECK(result.ok());

    // SIGKILL: the pinned maps keep classifying and counting; netqosctl reads them directly.
    env.KillDaemon();
    const std::string pins = "--bpf-pin-dir=" + env.PinDir();
    const json pinned = env.CtlJson({"classes", pins});
    INFO(pinned.dump(1));
    CHECK(pinned.at("daemon_reachable") == false);
    CHECK(pinned.at("pinned_maps_read") == true);
    CHECK_THAT(pinned.at("note").get<std::string>(), Catch::Contains("names need the daemon"));
    for (uint64_t id : {id_a, id_b}) {
      const json* c = FindCgroup(pinned.at("containers"), id);
      REQUIRE(c != nullptr);
      CHECK(c->at("in_pinned_map") == true);
      CHECK(c->at("htb_class").get<std::string>().rfind("10:", 0) == 0);
      CHECK(c->at("qos_level") == "shared_cores");
    }
    CHECK(FindCgroup(pinned.at("containers"), id_a)->at("counters").at("tx_bytes").get<uint64_t>() >
          1000000);

    auto& again = env.Send(a, 15411, 6);
    std::this_thread::sleep_for(1500ms);
    r = env.Ctl({"top", "--json", "--iterations", "2", pins});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    frames = JsonLines(r.output);
    REQUIRE(frames.size() == 2);
    CHECK(frames.back().at("names_from_daemon") == false);
    CHECK_THAT(frames.back().at("note").get<std::string>(),
               Catch::Contains("names need the daemon"));
    const double headless = TopTxMbps(frames, id_a);
    std::printf("top without netqosd: container A sends %.1f Mbit/s (cap %d)\n", headless, kCapA);
    CHECK(Near(headless, kCapA));
    (void)again.Wait();

    // status and cgroup still say what is pinned, and that the daemon is gone.
    const auto headless_table = env.Ctl({"classes", pins});
    std::printf("$ netqosctl classes %s   # netqosd killed\n%s\n", pins.c_str(),
                headless_table.output.c_str());
    const json status = env.CtlJson({"status", pins}, 1);
    CHECK(status.at("daemon").at("reachable") == false);
    CHECK(status.at("pinned").at("egress_link").at("present") == true);
    const json cg = env.CtlJson({"cgroup", a.cgroup, pins});
    CHECK(cg.at("classified") == true);
    CHECK(cg.at("daemon").at("reachable") == false);
    CHECK_THAT(cg.at("reasons").dump(), Catch::Contains("stays in force"));
  }

  CHECK(env.Teardown().empty());
}
