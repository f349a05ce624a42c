// The eBPF dataplane against the real kernel: programs loaded and attached to a temporary cgroup
// tree, maps and links pinned in a temporary bpffs directory, BPF_PROG_TEST_RUN and real loopback
// traffic from processes placed in the cgroups. Root only; everything is removed at the end.
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/magic.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bpf/dataplane.h"
#include "bpf/nic_attach.h"
#include "support/bpf_test_run.h"
#include "support/netns.h"
#include "support/shared_class_entry.h"

namespace {

using netqos::bpf::CgroupIdOf;
using netqos::bpf::Dataplane;
using netqos::bpf::NicPrograms;
using netqos::testing::Ipv4Packet;
using netqos::testing::SharedClassEntry;

std::string Cgroup2Mount() {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    // "<id> <parent> <dev> <root> <mount point> <opts> [optional...] - <fstype> <source> <opts>"
    const size_t sep = line.find(" - ");
    if (sep == std::string::npos) continue;
    std::istringstream tail(line.substr(sep + 3));
    std::string fstype;
    tail >> fstype;
    if (fstype != "cgroup2") continue;
    std::istringstream head(line.substr(0, sep));
    std::string id, parent, dev, root, mount_point;
    head >> id >> parent >> dev >> root >> mount_point;
    return mount_point;
  }
  return "";
}

bool IsBpffs(const std::string& path) {
  struct statfs fs {};
  return ::statfs(path.c_str(), &fs) == 0 && static_cast<unsigned long>(fs.f_type) == BPF_FS_MAGIC;
}

void RmdirRetry(const std::string& dir) {
  // A reaped child leaves its cgroup asynchronously; rmdir may see EBUSY for a moment.
  for (int i = 0; i < 100; ++i) {
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Temporary cgroups <cgroup2>/netqos-test-<pid>/{a,b} and a pin dir on a bpffs (under /sys/fs/bpf
// when that is a bpffs, else on a private bpffs mounted for the test). Removed in the destructor.
class BpfFixture {
 public:
  BpfFixture() {
    const std::string tag = "netqos-test-" + std::to_string(::getpid());
    const std::string mount = Cgroup2Mount();
    if (mount.empty()) throw std::runtime_error("no cgroup2 mount in /proc/self/mountinfo");
    cg_root_ = mount + "/" + tag;
    MkdirOrThrow(cg_root_);
    MkdirOrThrow(cg_a());
    MkdirOrThrow(cg_b());
    if (IsBpffs("/sys/fs/bpf")) {
      pin_dir_ = "/sys/fs/bpf/" + tag;
    } else {
      own_bpffs_ = "/tmp/" + tag + "-bpffs";
      MkdirOrThrow(own_bpffs_);
      if (::mount("bpf", own_bpffs_.c_str(), "bpf", 0, "mode=0700") != 0) {
        throw std::runtime_error("mount bpffs at " + own_bpffs_ + ": " + std::strerror(errno));
      }
      mounted_ = true;
      pin_dir_ = own_bpffs_ + "/" + tag;
    }
  }
  ~BpfFixture() {
    (void)Dataplane::Uninstall(pin_dir_);
    RmdirRetry(cg_a());
    RmdirRetry(cg_b());
    RmdirRetry(cg_root_);
    if (mounted_) ::umount2(own_bpffs_.c_str(), MNT_DETACH);
    if (!own_bpffs_.empty()) ::rmdir(own_bpffs_.c_str());
  }
  BpfFixture(const BpfFixture&) = delete;
  BpfFixture& operator=(const BpfFixture&) = delete;

  const std::string& pin_dir() const { return pin_dir_; }
  const std::string& cg_root() const { return cg_root_; }
  std::string cg_a() const { return cg_root_ + "/a"; }
  std::string cg_b() const { return cg_root_ + "/b"; }
  Dataplane::Options options() const {
    Dataplane::Options o;
    o.pin_dir = pin_dir_;
    o.cgroup_path = cg_root_;
    return o;
  }

 private:
  static void MkdirOrThrow(const std::string& dir) {
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      throw std::runtime_error("mkdir " + dir + ": " + std::strerror(errno));
    }
  }
  std::string cg_root_;
  std::string pin_dir_;
  std::string own_bpffs_;
  bool mounted_ = false;
};

// Runs fn in a forked child that first joins cgroup_dir (if not empty); fn fills *out, which is
// sent back through a pipe. Returns the child's exit code (0 = fn returned 0), or -1.
template <typename T>
int RunInChild(const std::string& cgroup_dir, const std::function<int(T*)>& fn, T* out) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    ::close(fds[0]);
    int code = 0;
    if (!cgroup_dir.empty()) {
      std::ofstream procs(cgroup_dir + "/cgroup.procs");
      procs << "0" << std::flush;  // "0" = the writing process
      if (!procs) code = 100;
    }
    T result{};
    if (code == 0) code = fn(&result);
    if (::write(fds[1], &result, sizeof(result)) != static_cast<ssize_t>(sizeof(result)))
      code = 101;
    ::_exit(code);
  }
  ::close(fds[1]);
  T result{};
  const ssize_t n = ::read(fds[0], &result, sizeof(result));
  ::close(fds[0]);
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  if (n == static_cast<ssize_t>(sizeof(result)) && out != nullptr) *out = result;
  return WEXITSTATUS(status);
}

struct TestRunResult {
  int err;
  uint32_t retval;
  uint32_t priority;
};

// BPF_PROG_TEST_RUN with ctx priority in_priority; the kernel runs it in the calling task.
int TestRun(int prog_fd, std::vector<uint8_t> pkt, uint32_t in_priority, TestRunResult* r) {
  const auto run = netqos::testing::RunSkbProgram(prog_fd, std::move(pkt), in_priority);
  *r = {run.err, run.retval, run.priority};
  return r->err == 0 ? 0 : 1;
}

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bpf_link_info LinkInfo(const std::string& path) {
  bpf_link_info info{};
  int fd = bpf_obj_get(path.c_str());
  if (fd < 0) return info;
  uint32_t len = sizeof(info);
  (void)bpf_obj_get_info_by_fd(fd, &info, &len);
  ::close(fd);
  return info;
}

uint32_t ProgId(int prog_fd) {
  bpf_prog_info info{};
  uint32_t len = sizeof(info);
  (void)bpf_obj_get_info_by_fd(prog_fd, &info, &len);
  return info.id;
}

constexpr uint32_t kLoopback = 0x7f000001;

// In the calling process (a child in a container cgroup): a UDP socket bound to loopback that
// sent one datagram to itself, so the cgroup programs tagged it. Its fd, with its address in
// *addr; a negative exit code when a step failed.
int TaggedUdpSocket(sockaddr_in* addr) {
  const int s = ::socket(AF_INET, SOCK_DGRAM, 0);
  *addr = {};
  addr->sin_family = AF_INET;
  addr->sin_addr.s_addr = htonl(kLoopback);
  if (s < 0 || ::bind(s, reinterpret_cast<sockaddr*>(addr), sizeof(*addr)) != 0) return -2;
  socklen_t alen = sizeof(*addr);
  if (::getsockname(s, reinterpret_cast<sockaddr*>(addr), &alen) != 0) return -3;
  const char byte = 0;
  if (::sendto(s, &byte, 1, 0, reinterpret_cast<sockaddr*>(addr), sizeof(*addr)) != 1) return -4;
  return s;
}

// The ingress program's results for N packets arriving for a UDP socket that the container of
// cgroup_dir holds (tagged by a datagram it sent itself), run from inside that container.
// packets(datagram) makes them from a datagram addressed to the socket's port.
template <size_t N>
std::array<TestRunResult, N> RunForTaggedSocket(
    const std::string& cgroup_dir, int ingress,
    const std::function<std::array<std::vector<uint8_t>, N>(const std::vector<uint8_t>&)>&
        packets) {
  std::array<TestRunResult, N> runs{};
  std::function<int(std::array<TestRunResult, N>*)> child = [&](std::array<TestRunResult, N>* r) {
    sockaddr_in addr{};
    const int s = TaggedUdpSocket(&addr);
    if (s < 0) return -s;
    const auto datagram = Ipv4Packet(IPPROTO_UDP, kLoopback, 6000, kLoopback, ntohs(addr.sin_port));
    int rc = 0;
    const auto pkts = packets(datagram);
    for (size_t i = 0; i < N; ++i) rc |= TestRun(ingress, pkts[i], 3, &(*r)[i]);
    ::close(s);
    return rc;
  };
  REQUIRE(RunInChild(cgroup_dir, child, &runs) == 0);
  return runs;
}

}  // namespace

namespace {

// The fixture's dataplane, opened, and the cgroup ids of its two cgroups (what most cases start
// from).
struct OpenedDataplane {
  std::unique_ptr<Dataplane> dp;
  uint64_t id_a = 0;
  uint64_t id_b = 0;
};
OpenedDataplane OpenWithCgroups(BpfFixture& fx) {
  auto dp = Dataplane::Open(fx.options());
  INFO(dp.status().message());
  REQUIRE(dp.ok());
  auto id_a = CgroupIdOf(fx.cg_a());
  auto id_b = CgroupIdOf(fx.cg_b());
  REQUIRE(id_a.ok());
  REQUIRE(id_b.ok());
  return {std::move(*dp), *id_a, *id_b};
}

}  // namespace

TEST_CASE("egress test-run sets priority and counts only classified cgroups", "[bpf]") {
  BpfFixture fx;
  OpenedDataplane opened = OpenWithCgroups(fx);
  auto& dp = opened.dp;  // plain names, not a structured binding: lambdas below may capture them
  const uint64_t id_a = opened.id_a;
  const uint64_t id_b = opened.id_b;
  REQUIRE(dp->SetClass(id_a, SharedClassEntry(0x10010, 7)).ok());

  const int prog = dp->EgressProgramFd();
  const auto pkt = Ipv4Packet(IPPROTO_TCP, kLoopback, 40000, kLoopback, 80);
  std::function<int(TestRunResult*)> run = [&](TestRunResult* r) {
    return TestRun(prog, pkt, 5, r);
  };

  TestRunResult hit{};
  REQUIRE(RunInChild(fx.cg_a(), run, &hit) == 0);
  CHECK(hit.retval == 1);
  CHECK(hit.priority == 0x10010u);
  auto ca = dp->ContainerCounters(id_a);
  REQUIRE(ca.ok());
  CHECK(ca->tx_packets == 1);
  CHECK(ca->tx_bytes > 0);
  CHECK(ca->rx_packets == 0);
  auto cls = dp->ClassCounters(7);
  REQUIRE(cls.ok());
  CHECK(cls->tx_packets == 1);

  TestRunResult miss{};
  REQUIRE(RunInChild(fx.cg_b(), run, &miss) == 0);
  CHECK(miss.retval == 1);
  CHECK(miss.priority == 5u);  // untouched
  auto cb = dp->ContainerCounters(id_b);
  REQUIRE(cb.ok());
  CHECK(cb->tx_packets == 0);

  // A class with priority 0 is counted but leaves skb->priority alone.
  REQUIRE(dp->SetClass(id_b, SharedClassEntry(0, 8)).ok());
  REQUIRE(RunInChild(fx.cg_b(), run, &miss) == 0);
  CHECK(miss.priority == 5u);
  cb = dp->ContainerCounters(id_b);
  REQUIRE(cb.ok());
  CHECK(cb->tx_packets == 1);
}

TEST_CASE("class map API: set, list, clear, missing clear is OK", "[bpf]") {
  BpfFixture fx;
  auto dp = Dataplane::Open(fx.options());
  REQUIRE(dp.ok());
  REQUIRE((*dp)->SetClass(11, SharedClassEntry(0x10001, 1)).ok());
  REQUIRE((*dp)->SetClass(12, SharedClassEntry(0x10002, 2)).ok());
  REQUIRE((*dp)->SetClass(11, SharedClassEntry(0x10003, 3)).ok());  // overwrite
  auto list = (*dp)->ListClasses();
  REQUIRE(list.ok());
  REQUIRE(list->size() == 2);
  for (const auto& [id, c] : *list) {
    if (id == 11) CHECK(c.priority == 0x10003u);
    if (id == 12) CHECK(c.net_class_id == 2u);
  }
  REQUIRE((*dp)->ClearClass(11).ok());
  REQUIRE((*dp)->ClearClass(11).ok());
  list = (*dp)->ListClasses();
  REQUIRE(list.ok());
  CHECK(list->size() == 1);
  auto none = (*dp)->ContainerCounters(999999);
  REQUIRE(none.ok());
  CHECK(none->tx_packets == 0);
}

TEST_CASE("pins are visible to bpftool, reused by a second Open, and survive the loader", "[bpf]") {
  BpfFixture fx;
  const std::string cls_pin = fx.pin_dir() + "/" + netqos::bpf::kClassMapName;
  const std::string link_pin = fx.pin_dir() + "/" + netqos::bpf::kEgressLinkPin;
  auto root_id = CgroupIdOf(fx.cg_root());
  REQUIRE(root_id.ok());

  // The first loader is a process that exits: the link and the entry must outlive it.
  int dummy = 0;
  std::function<int(int*)> loader = [&](int*) {
    auto dp = Dataplane::Open(fx.options());
    if (!dp.ok()) return 2;
    if (!(*dp)->SetClass(4242, SharedClassEntry(0x10020, 20)).ok()) return 3;
    return 0;
  };
  REQUIRE(RunInChild(std::string(), loader, &dummy) == 0);

  for (const char* name :
       {netqos::bpf::kClassMapName, netqos::bpf::kCgroupStatsMapName,
        netqos::bpf::kClassStatsMapName, netqos::bpf::kSockTagMapName, netqos::bpf::kPodAddrMapName,
        netqos::bpf::kFragMapName, netqos::bpf::kEdtMapName, netqos::bpf::kAggregateMapName,
        netqos::bpf::kEgressLinkPin, netqos::bpf::kRxLinkPin, netqos::bpf::kSockoptLinkPin}) {
    INFO(name);
    CHECK(Exists(fx.pin_dir() + "/" + name));
  }
  const bpf_link_info before = LinkInfo(link_pin);
  CHECK(before.type == BPF_LINK_TYPE_CGROUP);
  CHECK(before.cgroup.cgroup_id == *root_id);  // still attached, not defunct
  CHECK(before.cgroup.attach_type == BPF_CGROUP_INET_EGRESS);
  const std::string rx_pin = fx.pin_dir() + "/" + netqos::bpf::kRxLinkPin;
  const bpf_link_info rx_before = LinkInfo(rx_pin);
  CHECK(rx_before.type == BPF_LINK_TYPE_CGROUP);
  CHECK(rx_before.cgroup.cgroup_id == *root_id);
  CHECK(rx_before.cgroup.attach_type == BPF_CGROUP_INET_INGRESS);

  const std::string dump =
      netqos::testing::ShOutput("bpftool map dump pinned " + cls_pin + " 2>&1");
  INFO(dump);
  CHECK(dump.find("priority") != std::string::npos);
  CHECK(dump.find("net_class_id") != std::string::npos);

  // Second Open: same maps (entry still there), same link, new program swapped in.
  auto dp = Dataplane::Open(fx.options());
  REQUIRE(dp.ok());
  auto list = (*dp)->ListClasses();
  REQUIRE(list.ok());
  REQUIRE(list->size() == 1);
  CHECK(list->front().first == 4242u);
  CHECK(list->front().second.priority == 0x10020u);
  const bpf_link_info after = LinkInfo(link_pin);
  CHECK(after.id == before.id);
  CHECK(after.prog_id != before.prog_id);
  CHECK(after.prog_id == ProgId((*dp)->EgressProgramFd()));
  const bpf_link_info rx_after = LinkInfo(rx_pin);
  CHECK(rx_after.id == rx_before.id);
  CHECK(rx_after.prog_id != rx_before.prog_id);

  // Uninstall removes everything and is idempotent.
  dp->reset();
  REQUIRE(Dataplane::Uninstall(fx.pin_dir()).ok());
  CHECK(!Exists(fx.pin_dir()));
  REQUIRE(Dataplane::Uninstall(fx.pin_dir()).ok());
}

TEST_CASE("Open refuses a pinned map with another layout, naming it", "[bpf]") {
  BpfFixture fx;
  REQUIRE(::mkdir(fx.pin_dir().c_str(), 0700) == 0);
  const std::string cls_pin = fx.pin_dir() + "/" + netqos::bpf::kClassMapName;
  // An "old build" class map: same name, smaller value.
  const int fd = bpf_map_create(BPF_MAP_TYPE_HASH, netqos::bpf::kClassMapName, 8, 4, 1024, nullptr);
  REQUIRE(fd >= 0);
  REQUIRE(bpf_obj_pin(fd, cls_pin.c_str()) == 0);
  ::close(fd);
  auto dp = Dataplane::Open(fx.options());
  REQUIRE(!dp.ok());
  CHECK(dp.status().code() == netqos::StatusCode::kFailedPrecondition);
  CHECK(dp.status().message().find(netqos::bpf::kClassMapName) != std::string::npos);
  CHECK(dp.status().message().find("--uninstall") != std::string::npos);
}

TEST_CASE("real UDP traffic is counted per container cgroup", "[bpf]") {
  BpfFixture fx;
  OpenedDataplane opened = OpenWithCgroups(fx);
  auto& dp = opened.dp;  // plain names, not a structured binding: lambdas below may capture them
  const uint64_t id_a = opened.id_a;
  const uint64_t id_b = opened.id_b;
  REQUIRE(dp->SetClass(id_a, SharedClassEntry(0x10010, 31)).ok());
  REQUIRE(dp->SetClass(id_b, SharedClassEntry(0x10020, 32)).ok());

  // The receiver stays in the test's own cgroup, outside the attach point.
  const int rx = ::socket(AF_INET, SOCK_DGRAM, 0);
  REQUIRE(rx >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(kLoopback);
  REQUIRE(::bind(rx, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  socklen_t alen = sizeof(addr);
  REQUIRE(::getsockname(rx, reinterpret_cast<sockaddr*>(&addr), &alen) == 0);

  constexpr int kDatagrams = 5;
  int dummy = 0;
  std::function<int(int*)> sender = [&](int*) {
    const int s = ::socket(AF_INET, SOCK_DGRAM, 0);
    if (s < 0) return 2;
    const char payload[100] = {};
    for (int i = 0; i < kDatagrams; ++i) {
      if (::sendto(s, payload, sizeof(payload), 0, reinterpret_cast<sockaddr*>(&addr),
                   sizeof(addr)) != static_cast<ssize_t>(sizeof(payload))) {
        return 3;
      }
    }
    ::close(s);
    return 0;
  };
  REQUIRE(RunInChild(fx.cg_a(), sender, &dummy) == 0);
  ::close(rx);

  auto ca = dp->ContainerCounters(id_a);
  auto cb = dp->ContainerCounters(id_b);
  REQUIRE(ca.ok());
  REQUIRE(cb.ok());
  CHECK(ca->tx_packets >= static_cast<uint64_t>(kDatagrams));
  CHECK(ca->tx_bytes >= static_cast<uint64_t>(kDatagrams) * 100);
  CHECK(cb->tx_packets == 0);
  auto c31 = dp->ClassCounters(31);
  REQUIRE(c31.ok());
  CHECK(c31->tx_packets >= static_cast<uint64_t>(kDatagrams));
}

TEST_CASE("ingress test-run finds the local socket's container via the egress tag", "[bpf]") {
  BpfFixture fx;
  auto dp = Dataplane::Open(fx.options());
  REQUIRE(dp.ok());
  auto id_a = CgroupIdOf(fx.cg_a());
  REQUIRE(id_a.ok());
  REQUIRE((*dp)->SetClass(*id_a, SharedClassEntry(0x10030, 41)).ok());
  auto nic = NicPrograms::Load({.pin_dir = fx.pin_dir()});
  REQUIRE(nic.ok());
  const int ingress = (*nic)->IngressFd();
  REQUIRE(ingress >= 0);

  // No socket for the packet: passes untouched.
  TestRunResult none{};
  REQUIRE(TestRun(ingress, Ipv4Packet(IPPROTO_UDP, kLoopback, 1, kLoopback, 9), 3, &none) == 0);
  CHECK(none.retval == static_cast<uint32_t>(TC_ACT_OK));
  CHECK(none.priority == 3u);

  // A socket in cgroup a, tagged by its first egress packet, then a packet "arriving" for it.
  TestRunResult hit{};
  std::function<int(TestRunResult*)> child = [&](TestRunResult* r) {
    sockaddr_in addr{};
    const int s = TaggedUdpSocket(&addr);
    if (s < 0) return -s;
    const int rc = TestRun(
        ingress, Ipv4Packet(IPPROTO_UDP, kLoopback, 5555, kLoopback, ntohs(addr.sin_port)), 3, r);
    ::close(s);
    return rc;
  };
  REQUIRE(RunInChild(fx.cg_a(), child, &hit) == 0);
  CHECK(hit.retval == static_cast<uint32_t>(TC_ACT_OK));
  CHECK(hit.priority == 0x10030u);
  auto ca = (*dp)->ContainerCounters(*id_a);
  REQUIRE(ca.ok());
  // 1: the datagram the socket sent itself, counted by netqos_rx when it reached the socket. The
  // tc program classifies only: its test-run packet is not counted.
  CHECK(ca->rx_packets == 1);
}

struct ReceiverResult {
  int received;
  TestRunResult tc;
};

TEST_CASE("a socket that only receives is counted and found by the ingress program", "[bpf]") {
  BpfFixture fx;
  auto dp = Dataplane::Open(fx.options());
  REQUIRE(dp.ok());
  auto id_a = CgroupIdOf(fx.cg_a());
  REQUIRE(id_a.ok());
  REQUIRE((*dp)->SetClass(*id_a, SharedClassEntry(0x10040, 51)).ok());
  auto nic = NicPrograms::Load({.pin_dir = fx.pin_dir()});
  REQUIRE(nic.ok());
  const int ingress = (*nic)->IngressFd();

  // In cgroup a: a receiver that never sends, fed by a second socket over loopback; then a
  // packet "arriving" for the receiver is test-run through the tc ingress program.
  constexpr int kDatagrams = 7;
  constexpr size_t kPayload = 200;
  ReceiverResult res{};
  std::function<int(ReceiverResult*)> child = [&](ReceiverResult* r) {
    const int rx = ::socket(AF_INET, SOCK_DGRAM, 0);
    const int tx = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(kLoopback);
    if (rx < 0 || tx < 0 || ::bind(rx, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      return 2;
    }
    socklen_t alen = sizeof(addr);
    if (::getsockname(rx, reinterpret_cast<sockaddr*>(&addr), &alen) != 0) return 3;
    const char payload[kPayload] = {};
    for (int i = 0; i < kDatagrams; ++i) {
      if (::sendto(tx, payload, sizeof(payload), 0, reinterpret_cast<sockaddr*>(&addr),
                   sizeof(addr)) != static_cast<ssize_t>(sizeof(payload))) {
        return 4;
      }
      char buf[kPayload];
      if (::recv(rx, buf, sizeof(buf), 0) == static_cast<ssize_t>(kPayload)) ++r->received;
    }
    const int rc =
        TestRun(ingress, Ipv4Packet(IPPROTO_UDP, kLoopback, 5555, kLoopback, ntohs(addr.sin_port)),
                3, &r->tc);
    ::close(tx);
    ::close(rx);
    return rc;
  };
  REQUIRE(RunInChild(fx.cg_a(), child, &res) == 0);
  REQUIRE(res.received == kDatagrams);

  auto ca = (*dp)->ContainerCounters(*id_a);
  REQUIRE(ca.ok());
  CHECK(ca->rx_packets == static_cast<uint64_t>(kDatagrams));
  // Counted at L3, as on egress: payload + UDP and IPv4 headers.
  CHECK(ca->rx_bytes == static_cast<uint64_t>(kDatagrams) * (kPayload + 8 + 20));
  CHECK(ca->tx_packets == static_cast<uint64_t>(kDatagrams));  // the feeding socket's
  auto cls = (*dp)->ClassCounters(51);
  REQUIRE(cls.ok());
  CHECK(cls->rx_packets == static_cast<uint64_t>(kDatagrams));
  // The receiver was tagged by what it received: the tc program finds its class.
  CHECK(res.tc.retval == static_cast<uint32_t>(TC_ACT_OK));
  CHECK(res.tc.priority == 0x10040u);
}

TEST_CASE("a full class map is ResourceExhausted, naming the map", "[bpf]") {
  BpfFixture fx;
  auto dp = Dataplane::Open(fx.options());
  REQUIRE(dp.ok());
  netqos::Status st;
  uint64_t id = 1;
  for (; id <= NETQOS_MAX_ENTRIES + 1; ++id) {
    st = (*dp)->SetClass(id, SharedClassEntry(0x10001, 1));
    if (!st.ok()) break;
  }
  CHECK(id == NETQOS_MAX_ENTRIES + 1);
  CHECK(st.code() == netqos::StatusCode::kResourceExhausted);
  CHECK(st.message().find(netqos::bpf::kClassMapName) != std::string::npos);
  // Overwriting an existing entry still works when full.
  CHECK((*dp)->SetClass(1, SharedClassEntry(0x10002, 2)).ok());
}

TEST_CASE("a pinned link left defunct by a removed cgroup is replaced on Open", "[bpf]") {
  BpfFixture fx;
  const std::string gone = fx.cg_root() + "/gone";
  REQUIRE(::mkdir(gone.c_str(), 0755) == 0);
  Dataplane::Options first = fx.options();
  first.cgroup_path = gone;
  {
    auto dp = Dataplane::Open(first);
    REQUIRE(dp.ok());
  }
  const std::string link_pin = fx.pin_dir() + "/" + netqos::bpf::kEgressLinkPin;
  const bpf_link_info old_link = LinkInfo(link_pin);
  REQUIRE(::rmdir(gone.c_str()) == 0);
  // The kernel releases the cgroup's BPF state asynchronously after rmdir; then the link is
  // defunct (cgroup_id 0) but still pinned.
  for (int i = 0; i < 300 && LinkInfo(link_pin).cgroup.cgroup_id != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(LinkInfo(link_pin).cgroup.cgroup_id == 0u);
  CHECK(Exists(link_pin));

  auto dp = Dataplane::Open(fx.options());
  REQUIRE(dp.ok());
  auto root_id = CgroupIdOf(fx.cg_root());
  REQUIRE(root_id.ok());
  const bpf_link_info now = LinkInfo(link_pin);
  CHECK(now.id != old_link.id);
  CHECK(now.cgroup.cgroup_id == *root_id);
  const bpf_link_info rx = LinkInfo(fx.pin_dir() + "/" + netqos::bpf::kRxLinkPin);
  CHECK(rx.cgroup.cgroup_id == *root_id);
  CHECK(rx.cgroup.attach_type == BPF_CGROUP_INET_INGRESS);
}

TEST_CASE("a pin dir from before the rx link gains it on Open, the egress link kept", "[bpf]") {
  BpfFixture fx;
  const std::string egress_pin = fx.pin_dir() + "/" + netqos::bpf::kEgressLinkPin;
  const std::string rx_pin = fx.pin_dir() + "/" + netqos::bpf::kRxLinkPin;
  {
    auto dp = Dataplane::Open(fx.options());
    REQUIRE(dp.ok());
  }
  // What an older netqosd left: the same pins without link_ingress (detached, unpinned).
  const int fd = bpf_obj_get(rx_pin.c_str());
  REQUIRE(fd >= 0);
  REQUIRE(bpf_link_detach(fd) == 0);
  ::close(fd);
  REQUIRE(::unlink(rx_pin.c_str()) == 0);
  const bpf_link_info egress_before = LinkInfo(egress_pin);

  auto dp = Dataplane::Open(fx.options());
  REQUIRE(dp.ok());
  auto root_id = CgroupIdOf(fx.cg_root());
  REQUIRE(root_id.ok());
  CHECK(LinkInfo(egress_pin).id == egress_before.id);
  const bpf_link_info rx = LinkInfo(rx_pin);
  CHECK(rx.cgroup.cgroup_id == *root_id);
  CHECK(rx.cgroup.attach_type == BPF_CGROUP_INET_INGRESS);
}

TEST_CASE("links pinned under their names of before are renamed in place on Open", "[bpf]") {
  BpfFixture fx;
  const std::string egress_pin = fx.pin_dir() + "/" + netqos::bpf::kEgressLinkPin;
  const std::string rx_pin = fx.pin_dir() + "/" + netqos::bpf::kRxLinkPin;
  const std::string old_egress = fx.pin_dir() + "/" + netqos::bpf::kLegacyEgressLinkPin;
  const std::string old_rx = fx.pin_dir() + "/" + netqos::bpf::kLegacyRxLinkPin;
  {
    auto dp = Dataplane::Open(fx.options());
    REQUIRE(dp.ok());
  }
  // What a netqosd of before left: the same links under their old names.
  REQUIRE(::rename(egress_pin.c_str(), old_egress.c_str()) == 0);
  REQUIRE(::rename(rx_pin.c_str(), old_rx.c_str()) == 0);
  const bpf_link_info egress_before = LinkInfo(old_egress);
  const bpf_link_info rx_before = LinkInfo(old_rx);

  auto dp = Dataplane::Open(fx.options());
  REQUIRE(dp.ok());
  CHECK(!Exists(old_egress));
  CHECK(!Exists(old_rx));
  // The same links (never detached), with the new programs swapped in.
  CHECK(LinkInfo(egress_pin).id == egress_before.id);
  CHECK(LinkInfo(rx_pin).id == rx_before.id);
  CHECK(LinkInfo(egress_pin).prog_id == ProgId((*dp)->EgressProgramFd()));
  CHECK(LinkInfo(rx_pin).prog_id == ProgId((*dp)->RxProgramFd()));
}

// The IPv4 header of an Ipv4Packet made a fragment: `offset` in 8-byte units, `more` = MF.
std::vector<uint8_t> Fragment(std::vector<uint8_t> pkt, uint16_t id, uint16_t offset, bool more) {
  const size_t ip = sizeof(ethhdr);
  const uint16_t id_be = htons(id);
  const uint16_t frag_be = htons(static_cast<uint16_t>(offset | (more ? 0x2000 : 0)));
  std::memcpy(pkt.data() + ip + 4, &id_be, 2);
  std::memcpy(pkt.data() + ip + 6, &frag_be, 2);
  return pkt;
}

netqos_addr V4Key(uint32_t host_order) {
  netqos_addr a{};
  a.addr[2] = htonl(0xffff);
  a.addr[3] = htonl(host_order);
  return a;
}

TEST_CASE("a process in a cgroup below a container's is classified and counted as it", "[bpf]") {
  BpfFixture fx;
  auto dp = Dataplane::Open(fx.options());
  REQUIRE(dp.ok());
  auto id_a = CgroupIdOf(fx.cg_a());
  REQUIRE(id_a.ok());
  REQUIRE((*dp)->SetClass(*id_a, SharedClassEntry(0x10050, 61)).ok());
  const std::string nested = fx.cg_a() + "/nested";
  const std::string deeper = nested + "/deeper";
  REQUIRE(::mkdir(nested.c_str(), 0755) == 0);
  REQUIRE(::mkdir(deeper.c_str(), 0755) == 0);
  auto id_deeper = CgroupIdOf(deeper);
  REQUIRE(id_deeper.ok());

  TestRunResult r{};
  std::function<int(TestRunResult*)> child = [&](TestRunResult* out) {
    return TestRun((*dp)->EgressProgramFd(), Ipv4Packet(IPPROTO_UDP, kLoopback, 1, kLoopback, 9), 7,
                   out);
  };
  const int rc = RunInChild(deeper, child, &r);
  ::rmdir(deeper.c_str());
  ::rmdir(nested.c_str());
  REQUIRE(rc == 0);
  CHECK(r.priority == 0x10050u);  // the container's class, not the sender's 7
  auto ca = (*dp)->ContainerCounters(*id_a);
  REQUIRE(ca.ok());
  CHECK(ca->tx_packets == 1);
  auto cd = (*dp)->ContainerCounters(*id_deeper);
  REQUIRE(cd.ok());
  CHECK(cd->tx_packets == 0);
}

TEST_CASE("the NIC egress program sets every packet's class, never the sender's", "[bpf]") {
  BpfFixture fx;
  OpenedDataplane opened = OpenWithCgroups(fx);
  auto& dp = opened.dp;  // plain names, not a structured binding: lambdas below may capture them
  const uint64_t id_a = opened.id_a;
  const uint64_t id_b = opened.id_b;
  REQUIRE(dp->SetClass(id_a, SharedClassEntry(0x10060, 71)).ok());
  REQUIRE(dp->SetClass(id_b, SharedClassEntry(0x10061, 72)).ok());
  constexpr uint32_t kPodIp = 0x0a090807;  // 10.9.8.7: a pod behind a CNI, container b's
  REQUIRE(dp->SetPodAddress(V4Key(kPodIp), id_b).ok());
  auto nic = NicPrograms::Load({.pin_dir = fx.pin_dir()});
  REQUIRE(nic.ok());
  const int tx = (*nic)->EgressFd();
  const uint32_t forged = 0x10061;  // b's leaf, as an SO_PRIORITY would set it

  // A container's socket: its own class, whatever the sender set. The test run's socket passes
  // for an AF_INET one (the kernel makes it so for an IPv4 packet), which the cgroup programs
  // count: the NIC program must not count it again. (Raw AF_PACKET frames, which only it sees,
  // are counted in the privileged traffic tests.)
  TestRunResult in_a{};
  std::function<int(TestRunResult*)> from_a = [&](TestRunResult* out) {
    return TestRun(tx, Ipv4Packet(IPPROTO_UDP, kLoopback, 1, kLoopback, 9), forged, out);
  };
  REQUIRE(RunInChild(fx.cg_a(), from_a, &in_a) == 0);
  CHECK(in_a.retval == static_cast<uint32_t>(TC_ACT_OK));
  CHECK(in_a.priority == 0x10060u);
  auto ca = dp->ContainerCounters(id_a);
  REQUIRE(ca.ok());
  CHECK(ca->tx_packets == 0);

  // No container's socket, a pod's source address: the pod's class.
  TestRunResult routed{};
  REQUIRE(TestRun(tx, Ipv4Packet(IPPROTO_TCP, kPodIp, 5000, kLoopback, 80), 3, &routed) == 0);
  CHECK(routed.priority == 0x10061u);

  // Neither: the HTB default class (0), not the forged leaf nor HTB's direct queue (10:0).
  for (uint32_t sender : {forged, 0x10000u, 5u}) {
    TestRunResult other{};
    REQUIRE(TestRun(tx, Ipv4Packet(IPPROTO_UDP, 0x0a090808, 1, kLoopback, 9), sender, &other) == 0);
    CHECK(other.priority == 0u);
  }
  REQUIRE(dp->ClearPodAddress(V4Key(kPodIp)).ok());
  TestRunResult cleared{};
  REQUIRE(TestRun(tx, Ipv4Packet(IPPROTO_TCP, kPodIp, 5000, kLoopback, 80), 3, &cleared) == 0);
  CHECK(cleared.priority == 0u);
}

TEST_CASE(
    "in EDT mode the NIC egress program paces each capped container and drops beyond the "
    "horizon",
    "[bpf]") {
  BpfFixture fx;
  OpenedDataplane opened = OpenWithCgroups(fx);
  auto& dp = opened.dp;  // plain names, not a structured binding: lambdas below may capture them
  const uint64_t id_a = opened.id_a;
  const uint64_t id_b = opened.id_b;
  netqos_class dedicated = SharedClassEntry(0x10090, 93);
  dedicated.qos_level = NETQOS_QOS_DEDICATED;
  REQUIRE(dp->SetClass(id_a, dedicated).ok());
  REQUIRE(dp->SetClass(id_b, SharedClassEntry(0x10091, 94)).ok());  // shared
  // Pods behind a CNI (the test run has no container socket): their source address names them.
  constexpr uint32_t kPodA = 0x0a090a01;
  constexpr uint32_t kPodB = 0x0a090a02;
  REQUIRE(dp->SetPodAddress(V4Key(kPodA), id_a).ok());
  REQUIRE(dp->SetPodAddress(V4Key(kPodB), id_b).ok());
  // b's leaf may send 1000 bytes/s: each packet's share is its length in milliseconds. The map
  // is keyed by the leaf (b's class handle), not by b's cgroup.
  constexpr uint64_t kLeafB = 0x10091;
  constexpr uint64_t kRate = 1000;
  REQUIRE(dp->SetEdtRate(kLeafB, kRate).ok());
  auto rates = dp->ListEdtRates();
  REQUIRE(rates.ok());
  CHECK(*rates == std::vector<std::pair<uint64_t, uint64_t>>{{kLeafB, kRate}});
  constexpr uint64_t kHorizonNs = 1'000'000'000;
  auto nic =
      NicPrograms::Load({.pin_dir = fx.pin_dir(), .edt = true, .edt_horizon_ns = kHorizonNs});
  REQUIRE(nic.ok());
  const int tx = (*nic)->EgressFd();

  const auto from_b = Ipv4Packet(IPPROTO_UDP, kPodB, 4000, 0x0a000001, 53);
  const uint64_t share_ns = from_b.size() * 1'000'000'000ull / kRate;
  // The first packet leaves when its sender wants (no departure time); each later one a share
  // after the one before (the first of them a share less the credit for idle time), until a
  // packet would leave beyond the horizon and is dropped.
  auto first = netqos::testing::RunSkbProgram(tx, from_b, 0x10091);
  REQUIRE(first.err == 0);
  CHECK(first.retval == static_cast<uint32_t>(TC_ACT_OK));
  CHECK(first.tstamp == 0);
  CHECK(first.priority == NETQOS_EDT_PRIO_BESTEFFORT);  // the shared level's fq band, not a leaf
  std::vector<uint64_t> departures;
  uint32_t verdict = TC_ACT_OK;
  for (int i = 0; i < 100 && verdict == TC_ACT_OK; i++) {
    auto r = netqos::testing::RunSkbProgram(tx, from_b, 0x10091);
    REQUIRE(r.err == 0);
    verdict = r.retval;
    if (verdict == TC_ACT_OK) departures.push_back(r.tstamp);
  }
  CHECK(verdict == static_cast<uint32_t>(TC_ACT_SHOT));
  REQUIRE(departures.size() >= 2);
  for (size_t i = 1; i < departures.size(); i++)
    CHECK(departures[i] - departures[i - 1] == share_ns);
  // All queued ahead lie within the horizon: about horizon / share of them.
  CHECK(departures.size() <= kHorizonNs / share_ns + 1);
  CHECK(departures.size() + 1 >= kHorizonNs / share_ns);
  auto cb = dp->ContainerCounters(id_b);
  REQUIRE(cb.ok());
  CHECK(cb->drops == 1);

  // A sender's own later departure time (TCP pacing slower than the cap) is kept.
  REQUIRE(dp->SetEdtRate(kLeafB, kRate).ok());  // a rate written anew restarts the clock
  struct timespec ts {};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  const uint64_t later = static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull +
                         static_cast<uint64_t>(ts.tv_nsec) + 500'000'000ull;
  auto own = netqos::testing::RunSkbProgram(tx, from_b, 0, 1, later);
  CHECK(own.retval == static_cast<uint32_t>(TC_ACT_OK));
  CHECK(own.tstamp == later);
  // The next one: a share after it, less the idle time it may make up for.
  auto next = netqos::testing::RunSkbProgram(tx, from_b, 0);
  CHECK(next.tstamp == later - NETQOS_EDT_CREDIT_NS + share_ns);

  // After an idle spell a container may make up for at most NETQOS_EDT_CREDIT_NS of it: at a
  // rate where each packet's share is a quarter of that, the first packet and four more leave
  // at once, the rest are paced.
  const uint64_t quarter_rate = from_b.size() * 1'000'000'000ull * 4 / NETQOS_EDT_CREDIT_NS;
  REQUIRE(dp->SetEdtRate(kLeafB, quarter_rate).ok());
  int unpaced = 0;
  for (int i = 0; i < 20; i++) {
    if (netqos::testing::RunSkbProgram(tx, from_b, 0).tstamp == 0) ++unpaced;
  }
  CHECK(unpaced >= 5);
  CHECK(unpaced <= 6);  // a sixth when the clock moved a share's worth during the runs

  // A container without a rate is not paced; its level picks the band. Nor is traffic of no
  // container, whatever priority its sender set.
  auto a = netqos::testing::RunSkbProgram(tx, Ipv4Packet(IPPROTO_UDP, kPodA, 1, 0x0a000001, 9), 3);
  CHECK(a.retval == static_cast<uint32_t>(TC_ACT_OK));
  CHECK(a.tstamp == 0);
  CHECK(a.priority == NETQOS_EDT_PRIO_INTERACTIVE);
  auto other =
      netqos::testing::RunSkbProgram(tx, Ipv4Packet(IPPROTO_UDP, 0x0a090a09, 1, 0x0a000001, 9), 7);
  CHECK(other.tstamp == 0);
  CHECK(other.priority == NETQOS_EDT_PRIO_BESTEFFORT);

  // Two containers of one leaf (a pod's) share its budget: a, moved to b's leaf, sends between
  // two of b's packets and each leaves a share after the one before, whoever sent it.
  REQUIRE(dp->SetClass(id_a, SharedClassEntry(0x10091, 93)).ok());
  REQUIRE(dp->SetEdtRate(kLeafB, kRate).ok());
  const auto from_a = Ipv4Packet(IPPROTO_UDP, kPodA, 4000, 0x0a000001, 53);
  REQUIRE(from_a.size() == from_b.size());
  (void)netqos::testing::RunSkbProgram(tx, from_b, 0);
  auto a1 = netqos::testing::RunSkbProgram(tx, from_a, 0);
  auto b2 = netqos::testing::RunSkbProgram(tx, from_b, 0);
  REQUIRE(a1.tstamp != 0);
  CHECK(b2.tstamp - a1.tstamp == share_ns);

  // A class flagged as having no leaf is never looked up in the pacing map: with b's entry so
  // flagged its packets leave unpaced, though its leaf still has a rate (busy from the runs
  // above, so without the flag the next packet would get a departure time).
  netqos_class no_leaf = SharedClassEntry(0x10091, 94);
  no_leaf.flags |= NETQOS_CLASS_F_NO_LEAF;
  REQUIRE(dp->SetClass(id_b, no_leaf).ok());
  for (int i = 0; i < 3; i++) CHECK(netqos::testing::RunSkbProgram(tx, from_b, 0).tstamp == 0);
  REQUIRE(dp->SetClass(id_b, SharedClassEntry(0x10091, 94)).ok());
  CHECK(netqos::testing::RunSkbProgram(tx, from_b, 0).tstamp != 0);

  // The same container on a NIC in HTB mode: its leaf, no departure time.
  auto htb = NicPrograms::Load({.pin_dir = fx.pin_dir()});
  REQUIRE(htb.ok());
  auto h = netqos::testing::RunSkbProgram((*htb)->EgressFd(), from_b, 0);
  CHECK(h.tstamp == 0);
  CHECK(h.priority == 0x10091u);

  REQUIRE(dp->ClearEdtRate(kLeafB).ok());
  REQUIRE(dp->ClearEdtRate(kLeafB).ok());  // a missing entry is fine
  auto cleared = dp->ListEdtRates();
  REQUIRE(cleared.ok());
  CHECK(cleared->empty());
}

TEST_CASE(
    "in EDT mode two leaves of a namespace's aggregate share its budget, and only classes "
    "flagged for it look at the aggregate map",
    "[bpf][aggregate]") {
  BpfFixture fx;
  OpenedDataplane opened = OpenWithCgroups(fx);
  auto& dp = opened.dp;
  // a and b: two pods of one namespace, their own leaves 10:a0 and 10:a1 each at 1000 bytes/s,
  // their aggregate 10:a5 at 500 bytes/s: together they leave at the aggregate's rate.
  constexpr uint64_t kLeafA = 0x100a0, kLeafB = 0x100a1, kAggregate = 0x100a5;
  netqos_class a = SharedClassEntry(kLeafA, 95);
  netqos_class b = SharedClassEntry(kLeafB, 96);
  a.flags |= NETQOS_CLASS_F_AGGREGATE;
  b.flags |= NETQOS_CLASS_F_AGGREGATE;
  REQUIRE(dp->SetClass(opened.id_a, a).ok());
  REQUIRE(dp->SetClass(opened.id_b, b).ok());
  constexpr uint32_t kPodA = 0x0a0a0a01;
  constexpr uint32_t kPodB = 0x0a0a0a02;
  REQUIRE(dp->SetPodAddress(V4Key(kPodA), opened.id_a).ok());
  REQUIRE(dp->SetPodAddress(V4Key(kPodB), opened.id_b).ok());
  REQUIRE(dp->SetEdtRate(kLeafA, 1000).ok());
  REQUIRE(dp->SetEdtRate(kLeafB, 1000).ok());
  REQUIRE(dp->SetEdtRate(kAggregate, 500).ok());
  REQUIRE(dp->SetAggregate(kLeafA, kAggregate).ok());
  REQUIRE(dp->SetAggregate(kLeafB, kAggregate).ok());
  auto listed = dp->ListAggregates();
  REQUIRE(listed.ok());
  CHECK(listed->size() == 2);
  auto nic = NicPrograms::Load({.pin_dir = fx.pin_dir(), .edt = true});
  REQUIRE(nic.ok());
  const int tx = (*nic)->EgressFd();
  const auto from_a = Ipv4Packet(IPPROTO_UDP, kPodA, 4000, 0x0a000001, 53);
  const auto from_b = Ipv4Packet(IPPROTO_UDP, kPodB, 4000, 0x0a000001, 53);
  REQUIRE(from_a.size() == from_b.size());
  const uint64_t aggregate_share = from_a.size() * 1'000'000'000ull / 500;
  // Alternating senders: each packet a share of the aggregate's rate after the one before,
  // though each leaf alone would let its packets go twice as often and once per its own share.
  (void)netqos::testing::RunSkbProgram(tx, from_a, 0);
  std::vector<uint64_t> departures;
  for (int i = 0; i < 6; i++) {
    auto r = netqos::testing::RunSkbProgram(tx, i % 2 ? from_a : from_b, 0);
    REQUIRE(r.err == 0);
    REQUIRE(r.retval == static_cast<uint32_t>(TC_ACT_OK));
    departures.push_back(r.tstamp);
  }
  for (size_t i = 2; i < departures.size(); i++) {
    INFO("packet " << i);
    CHECK(departures[i] - departures[i - 1] == aggregate_share);
  }

  // Without the flag the map is not looked at: b is paced by its own leaf only.
  REQUIRE(dp->SetClass(opened.id_b, SharedClassEntry(kLeafB, 96)).ok());
  REQUIRE(dp->SetEdtRate(kLeafB, 1000).ok());
  REQUIRE(dp->SetEdtRate(kAggregate, 500).ok());
  const uint64_t leaf_share = from_b.size() * 1'000'000'000ull / 1000;
  (void)netqos::testing::RunSkbProgram(tx, from_b, 0);
  auto b1 = netqos::testing::RunSkbProgram(tx, from_b, 0);
  auto b2 = netqos::testing::RunSkbProgram(tx, from_b, 0);
  CHECK(b2.tstamp - b1.tstamp == leaf_share);

  REQUIRE(dp->ClearAggregate(kLeafA).ok());
  REQUIRE(dp->ClearAggregate(kLeafA).ok());  // a missing entry is fine
  REQUIRE(dp->ClearAggregate(kLeafB).ok());
  auto cleared = dp->ListAggregates();
  REQUIRE(cleared.ok());
  CHECK(cleared->empty());
}

namespace {

// The IPv4 header's checksum: 0 when `ip` (ihl 5) is consistent.
uint16_t Ipv4HeaderSum(const uint8_t* ip) {
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += static_cast<uint32_t>(ip[i] << 8 | ip[i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum & 0xffff);
}

// Ethernet + IPv4 (TOS `tos`, a valid header checksum) + UDP from `saddr`.
std::vector<uint8_t> Ipv4WithTos(uint32_t saddr, uint8_t tos) {
  auto pkt = Ipv4Packet(IPPROTO_UDP, saddr, 4000, 0x0a000001, 53);
  uint8_t* ip = pkt.data() + sizeof(ethhdr);
  ip[1] = tos;
  ip[10] = ip[11] = 0;
  const uint16_t check = Ipv4HeaderSum(ip);
  ip[10] = static_cast<uint8_t>(check >> 8);
  ip[11] = static_cast<uint8_t>(check & 0xff);
  REQUIRE(Ipv4HeaderSum(ip) == 0);
  return pkt;
}

// Ethernet + IPv6 (traffic class `tclass`, flow label 0xabcde) + UDP from `saddr`.
std::vector<uint8_t> Ipv6WithTclass(const netqos_addr& saddr, uint8_t tclass) {
  std::vector<uint8_t> pkt(sizeof(ethhdr) + 40 + sizeof(udphdr), 0);
  ethhdr eth{};
  eth.h_proto = htons(ETH_P_IPV6);
  std::memcpy(pkt.data(), &eth, sizeof(eth));
  uint8_t* ip = pkt.data() + sizeof(ethhdr);
  const uint32_t first = 6u << 28 | static_cast<uint32_t>(tclass) << 20 | 0xabcdeu;
  const uint32_t first_be = htonl(first);
  std::memcpy(ip, &first_be, 4);
  const uint16_t plen = htons(sizeof(udphdr));
  std::memcpy(ip + 4, &plen, 2);
  ip[6] = IPPROTO_UDP;
  ip[7] = 64;
  std::memcpy(ip + 8, saddr.addr, 16);
  ip[24 + 15] = 1;  // daddr ::1
  udphdr udp{};
  udp.source = htons(4000);
  udp.dest = htons(53);
  udp.len = htons(sizeof(udphdr));
  std::memcpy(ip + 40, &udp, sizeof(udp));
  return pkt;
}

uint32_t Ipv6First(const std::vector<uint8_t>& pkt) {
  uint32_t be = 0;
  std::memcpy(&be, pkt.data() + sizeof(ethhdr), 4);
  return ntohl(be);
}

}  // namespace

TEST_CASE("the NIC egress program marks the DSCP of classes that ask for it, ECN bits kept",
          "[bpf]") {
  BpfFixture fx;
  OpenedDataplane opened = OpenWithCgroups(fx);
  auto& dp = opened.dp;  // plain names, not a structured binding: lambdas below may capture them
  const uint64_t id_a = opened.id_a;
  const uint64_t id_b = opened.id_b;
  // a: marked EF (46); b: a DSCP byte but no flag (an entry that is not marked).
  netqos_class marked = SharedClassEntry(0x10060, 71);
  marked.dscp = 46;
  marked.flags = NETQOS_CLASS_F_SET_DSCP;
  netqos_class unmarked = SharedClassEntry(0x10061, 72);
  unmarked.dscp = 46;
  REQUIRE(dp->SetClass(id_a, marked).ok());
  REQUIRE(dp->SetClass(id_b, unmarked).ok());
  constexpr uint32_t kPodA = 0x0a090b01;
  constexpr uint32_t kPodB = 0x0a090b02;
  constexpr uint32_t kNobody = 0x0a090b09;
  REQUIRE(dp->SetPodAddress(V4Key(kPodA), id_a).ok());
  REQUIRE(dp->SetPodAddress(V4Key(kPodB), id_b).ok());
  netqos_addr v6a{};
  v6a.addr[0] = htonl(0xfd000000);
  v6a.addr[3] = htonl(0xa);
  netqos_addr v6b = v6a;
  v6b.addr[3] = htonl(0xb);
  REQUIRE(dp->SetPodAddress(v6a, id_a).ok());
  REQUIRE(dp->SetPodAddress(v6b, id_b).ok());

  for (const bool edt : {false, true}) {
    INFO((edt ? "edt" : "htb"));
    auto nic = NicPrograms::Load({.pin_dir = fx.pin_dir(), .edt = edt});
    REQUIRE(nic.ok());
    const int tx = (*nic)->EgressFd();

    // IPv4: every ECN codepoint kept, whatever DS field the sender chose; the checksum valid.
    for (const uint8_t tos : {0x00, 0x01, 0x02, 0x03, 0xb8, 0xfd, 0x28, 0x53}) {
      INFO("tos " << static_cast<int>(tos));
      const auto in = Ipv4WithTos(kPodA, tos);
      auto r = netqos::testing::RunSkbProgram(tx, in, 0);
      REQUIRE(r.err == 0);
      CHECK(r.retval == static_cast<uint32_t>(TC_ACT_OK));
      REQUIRE(r.data.size() == in.size());
      const uint8_t* ip = r.data.data() + sizeof(ethhdr);
      CHECK(ip[1] >> 2 == 46);
      CHECK((ip[1] & 0x3) == (tos & 0x3));
      CHECK(Ipv4HeaderSum(ip) == 0);
      // Nothing else moved: the bytes other than TOS and checksum are the sender's.
      std::vector<uint8_t> expect = in;
      expect[sizeof(ethhdr) + 1] = ip[1];
      expect[sizeof(ethhdr) + 10] = ip[10];
      expect[sizeof(ethhdr) + 11] = ip[11];
      CHECK(r.data == expect);

      // No flag (the byte alone means nothing), or no class: the packet is left as it was.
      auto b = netqos::testing::RunSkbProgram(tx, Ipv4WithTos(kPodB, tos), 0);
      REQUIRE(b.err == 0);
      CHECK(b.data == Ipv4WithTos(kPodB, tos));
      auto nobody = netqos::testing::RunSkbProgram(tx, Ipv4WithTos(kNobody, tos), 0);
      REQUIRE(nobody.err == 0);
      CHECK(nobody.data == Ipv4WithTos(kNobody, tos));
    }

    // IPv6: the traffic class across bytes 0 and 1, version and flow label kept.
    for (const uint8_t tclass : {0x00, 0x03, 0xfe, 0x29}) {
      INFO("tclass " << static_cast<int>(tclass));
      const auto in = Ipv6WithTclass(v6a, tclass);
      auto r = netqos::testing::RunSkbProgram(tx, in, 0);
      REQUIRE(r.err == 0);
      REQUIRE(r.data.size() == in.size());
      const uint32_t first = Ipv6First(r.data);
      CHECK(first >> 28 == 6u);
      CHECK((first >> 20 & 0xff) == (46u << 2 | (tclass & 0x3u)));
      CHECK((first & 0xfffff) == 0xabcdeu);
      CHECK(std::equal(r.data.begin() + sizeof(ethhdr) + 4, r.data.end(),
                       in.begin() + sizeof(ethhdr) + 4));

      auto b = netqos::testing::RunSkbProgram(tx, Ipv6WithTclass(v6b, tclass), 0);
      REQUIRE(b.err == 0);
      CHECK(b.data == Ipv6WithTclass(v6b, tclass));
    }
  }

  // DSCP 0 is a mark too: the flag, not the value, says whether to rewrite.
  marked.dscp = 0;
  REQUIRE(dp->SetClass(id_a, marked).ok());
  auto nic = NicPrograms::Load({.pin_dir = fx.pin_dir()});
  REQUIRE(nic.ok());
  auto zero = netqos::testing::RunSkbProgram((*nic)->EgressFd(), Ipv4WithTos(kPodA, 0xb9), 0);
  REQUIRE(zero.err == 0);
  const uint8_t* ip = zero.data.data() + sizeof(ethhdr);
  CHECK(ip[1] == 0x01);
  CHECK(Ipv4HeaderSum(ip) == 0);
}

TEST_CASE("the ingress program classifies by pod address, fragments included", "[bpf]") {
  BpfFixture fx;
  auto dp = Dataplane::Open(fx.options());
  REQUIRE(dp.ok());
  auto id_b = CgroupIdOf(fx.cg_b());
  REQUIRE(id_b.ok());
  REQUIRE((*dp)->SetClass(*id_b, SharedClassEntry(0x10070, 81)).ok());
  constexpr uint32_t kPodIp = 0x0a090809;
  REQUIRE((*dp)->SetPodAddress(V4Key(kPodIp), *id_b).ok());
  auto nic = NicPrograms::Load({.pin_dir = fx.pin_dir()});
  REQUIRE(nic.ok());
  const int ingress = (*nic)->IngressFd();

  const auto to_pod = Ipv4Packet(IPPROTO_UDP, 0x0a000001, 4000, kPodIp, 53);
  for (const auto& pkt : {to_pod, Fragment(to_pod, 9, 0, true), Fragment(to_pod, 9, 185, true),
                          Fragment(to_pod, 9, 370, false)}) {
    TestRunResult r{};
    REQUIRE(TestRun(ingress, pkt, 3, &r) == 0);
    CHECK(r.priority == 0x10070u);
  }
  TestRunResult other{};
  REQUIRE(TestRun(ingress, Ipv4Packet(IPPROTO_UDP, 0x0a000001, 4000, kPodIp + 1, 53), 3, &other) ==
          0);
  CHECK(other.priority == 3u);
}

TEST_CASE("later fragments to a host socket take its first fragment's class", "[bpf]") {
  BpfFixture fx;
  auto dp = Dataplane::Open(fx.options());
  REQUIRE(dp.ok());
  auto id_a = CgroupIdOf(fx.cg_a());
  REQUIRE(id_a.ok());
  REQUIRE((*dp)->SetClass(*id_a, SharedClassEntry(0x10080, 91)).ok());
  auto nic = NicPrograms::Load({.pin_dir = fx.pin_dir()});
  REQUIRE(nic.ok());
  const int ingress = (*nic)->IngressFd();

  // The fragments of a datagram "arriving" for a socket of container a: first, middle, last,
  // and a fragment of another datagram whose first fragment was never seen.
  const auto runs = RunForTaggedSocket<4>(fx.cg_a(), ingress, [](const std::vector<uint8_t>& d) {
    return std::array<std::vector<uint8_t>, 4>{
        Fragment(d, 4242, 0, true), Fragment(d, 4242, 185, true), Fragment(d, 4242, 370, false),
        Fragment(d, 4243, 185, false)};
  });
  CHECK(runs[0].priority == 0x10080u);
  CHECK(runs[1].priority == 0x10080u);
  CHECK(runs[2].priority == 0x10080u);
  CHECK(runs[3].priority == 3u);  // unclassified
}

struct SockoptResult {
  int classified_err;
  int nested_err;
  int unclassified_err;
};

TEST_CASE("PACKET_QDISC_BYPASS is refused to classified containers only", "[bpf]") {
  BpfFixture fx;
  auto dp = Dataplane::Open(fx.options());
  REQUIRE(dp.ok());
  auto id_a = CgroupIdOf(fx.cg_a());
  REQUIRE(id_a.ok());
  REQUIRE((*dp)->SetClass(*id_a, SharedClassEntry(0x10090, 95)).ok());
  const std::string nested = fx.cg_a() + "/nested";
  REQUIRE(::mkdir(nested.c_str(), 0755) == 0);

  // errno of setsockopt(PACKET_QDISC_BYPASS) on a fresh AF_PACKET socket (0 = allowed).
  std::function<int(int*)> bypass = [](int* err) {
    const int s = ::socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
    if (s < 0) return 2;
    const int one = 1;
    *err = ::setsockopt(s, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)) == 0 ? 0 : errno;
    // Other options of the same socket are untouched.
    const int ok = ::setsockopt(s, SOL_SOCKET, SO_PRIORITY, &one, sizeof(one));
    ::close(s);
    return ok == 0 ? 0 : 3;
  };
  SockoptResult r{};
  const int a = RunInChild(fx.cg_a(), bypass, &r.classified_err);
  const int n = RunInChild(nested, bypass, &r.nested_err);
  const int b = RunInChild(fx.cg_b(), bypass, &r.unclassified_err);
  ::rmdir(nested.c_str());
  REQUIRE(a == 0);
  REQUIRE(n == 0);
  REQUIRE(b == 0);
  CHECK(r.classified_err == EPERM);
  if (std::string((*dp)->SockoptProgramName()) == "netqos_sockopt") CHECK(r.nested_err == EPERM);
  CHECK(r.unclassified_err == 0);
}

TEST_CASE("the pods' setsockopt guard refuses qdisc bypass and AF_XDP under the kubelet's roots",
          "[bpf]") {
  BpfFixture fx;
  Dataplane::Options o = fx.options();
  // cg_a plays the kubelet's root; cg_b is a cgroup of the node outside it. The root the cgroup
  // programs hang from is never guarded (that would be the whole host).
  o.pod_roots = {fx.cg_a(), fx.cg_root(), fx.cg_root() + "/not-there"};
  auto dp = Dataplane::Open(o);
  REQUIRE(dp.ok());
  const std::string pod = fx.cg_a() + "/pod1";  // not classified: no class entry at all
  REQUIRE(::mkdir(pod.c_str(), 0755) == 0);

  struct Errs {
    int bypass;
    int xdp;
  };
  // errno of PACKET_QDISC_BYPASS and of an AF_XDP UMEM registration (0 = allowed).
  std::function<int(Errs*)> try_both = [](Errs* e) {
    const int s = ::socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
    if (s < 0) return 2;
    const int one = 1;
    e->bypass =
        ::setsockopt(s, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)) == 0 ? 0 : errno;
    ::close(s);
    const int x = ::socket(44 /* AF_XDP */, SOCK_RAW, 0);
    if (x < 0) return 3;
    static char area[16 * 4096] __attribute__((aligned(4096)));
    struct {
      uint64_t addr, len;
      uint32_t chunk_size, headroom, flags;
    } reg{reinterpret_cast<uint64_t>(area), sizeof(area), 4096, 0, 0};
    e->xdp = ::setsockopt(x, 283 /* SOL_XDP */, 4 /* XDP_UMEM_REG */, &reg, sizeof(reg)) == 0
                 ? 0
                 : errno;
    ::close(x);
    return 0;
  };
  Errs in_pod{}, outside{};
  const int a = RunInChild(pod, try_both, &in_pod);
  const int b = RunInChild(fx.cg_b(), try_both, &outside);
  ::rmdir(pod.c_str());
  REQUIRE(a == 0);
  REQUIRE(b == 0);
  CHECK(in_pod.bypass == EPERM);
  CHECK(in_pod.xdp == EPERM);
  CHECK(outside.bypass == 0);
  CHECK(outside.xdp == 0);
  // One pinned link, for cg_a only.
  const auto id_a = CgroupIdOf(fx.cg_a());
  REQUIRE(id_a.ok());
  CHECK(Exists(fx.pin_dir() + "/link_pods_setsockopt_" + std::to_string(*id_a)));
  // A root no longer listed loses its guard.
  REQUIRE((*dp)->GuardPodRoots({}).ok());
  CHECK_FALSE(Exists(fx.pin_dir() + "/link_pods_setsockopt_" + std::to_string(*id_a)));
}

namespace {

// `inner` (an Ethernet frame) tunnelled from 192.0.2.1 to 192.0.2.2: VXLAN or Geneve over UDP to
// `dport`, or IPIP / IPv6-in-IPv4 (the inner frame's IP packet after the outer header).
enum class Tunnel { kVxlan, kGeneve, kIpip };
std::vector<uint8_t> Tunnelled(Tunnel kind, const std::vector<uint8_t>& inner, uint16_t dport) {
  std::vector<uint8_t> outer = kind == Tunnel::kIpip
                                   ? Ipv4Packet(IPPROTO_UDP, 0xc0000201, 0, 0xc0000202, 0)
                                   : Ipv4Packet(IPPROTO_UDP, 0xc0000201, 33000, 0xc0000202, dport);
  auto* ip = reinterpret_cast<iphdr*>(outer.data() + sizeof(ethhdr));
  std::vector<uint8_t> tail;
  if (kind == Tunnel::kIpip) {
    outer.resize(sizeof(ethhdr) + sizeof(iphdr));  // no UDP header
    const auto* inner_eth = reinterpret_cast<const ethhdr*>(inner.data());
    ip->protocol = ntohs(inner_eth->h_proto) == ETH_P_IPV6 ? 41 : IPPROTO_IPIP;
    tail.assign(inner.begin() + sizeof(ethhdr), inner.end());
  } else if (kind == Tunnel::kVxlan) {
    tail = {0x08, 0, 0, 0, 0, 0, 42, 0};  // flags (VNI valid), VNI 42
    tail.insert(tail.end(), inner.begin(), inner.end());
  } else {
    // Version 0, 2 words (8 bytes) of options, protocol 0x6558 (an Ethernet frame), VNI 42, then
    // one option.
    tail = {0x02, 0, 0x65, 0x58, 0, 0, 42, 0, 0x01, 0x02, 0x80, 0x01, 0xaa, 0xbb, 0xcc, 0xdd};
    tail.insert(tail.end(), inner.begin(), inner.end());
  }
  outer.insert(outer.end(), tail.begin(), tail.end());
  ip = reinterpret_cast<iphdr*>(outer.data() + sizeof(ethhdr));
  ip->tot_len = htons(static_cast<uint16_t>(outer.size() - sizeof(ethhdr)));
  return outer;
}

// An Ethernet + IPv6 + UDP packet from `src` (16 bytes).
std::vector<uint8_t> Ipv6Packet(const uint8_t* src) {
  std::vector<uint8_t> pkt(sizeof(ethhdr) + 40 + sizeof(udphdr), 0);
  auto* eth = reinterpret_cast<ethhdr*>(pkt.data());
  eth->h_proto = htons(ETH_P_IPV6);
  uint8_t* ip6 = pkt.data() + sizeof(ethhdr);
  ip6[0] = 0x60;
  ip6[5] = sizeof(udphdr);
  ip6[6] = IPPROTO_UDP;
  ip6[7] = 64;
  std::memcpy(ip6 + 8, src, 16);
  ip6[24] = 0xfd;
  ip6[39] = 1;
  return pkt;
}

}  // namespace

TEST_CASE("the NIC egress program classifies a tunnel packet by its inner source pod", "[bpf]") {
  BpfFixture fx;
  OpenedDataplane opened = OpenWithCgroups(fx);
  Dataplane& dp = *opened.dp;
  const uint64_t id_b = opened.id_b;
  REQUIRE(dp.SetClass(id_b, SharedClassEntry(0x10077, 87)).ok());
  constexpr uint32_t kPodIp = 0x0af40005;  // 10.244.0.5
  REQUIRE(dp.SetPodAddress(V4Key(kPodIp), id_b).ok());
  netqos_addr pod6{};
  const uint8_t v6[16] = {0xfd, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x05};
  std::memcpy(pod6.addr, v6, 16);
  REQUIRE(dp.SetPodAddress(pod6, id_b).ok());
  auto nic = NicPrograms::Load({.pin_dir = fx.pin_dir()});
  REQUIRE(nic.ok());
  const int tx = (*nic)->EgressFd();

  const auto from_pod = Ipv4Packet(IPPROTO_TCP, kPodIp, 5000, 0x0af40105, 80);
  const auto from_other = Ipv4Packet(IPPROTO_TCP, kPodIp + 1, 5000, 0x0af40105, 80);
  const auto from_pod6 = Ipv6Packet(v6);
  struct Case {
    const char* what;
    std::vector<uint8_t> pkt;
    uint32_t want;
  };
  const std::vector<Case> cases = {
      {"VXLAN (4789)", Tunnelled(Tunnel::kVxlan, from_pod, 4789), 0x10077},
      {"VXLAN (8472, Linux's default)", Tunnelled(Tunnel::kVxlan, from_pod, 8472), 0x10077},
      {"VXLAN with an IPv6 pod inside", Tunnelled(Tunnel::kVxlan, from_pod6, 4789), 0x10077},
      {"Geneve with an option", Tunnelled(Tunnel::kGeneve, from_pod, 6081), 0x10077},
      {"IPIP", Tunnelled(Tunnel::kIpip, from_pod, 0), 0x10077},
      {"IPv6 in IPv4", Tunnelled(Tunnel::kIpip, from_pod6, 0), 0x10077},
      {"VXLAN from another address", Tunnelled(Tunnel::kVxlan, from_other, 4789), 0},
      {"UDP to another port", Tunnelled(Tunnel::kVxlan, from_pod, 4790), 0},
  };
  for (const auto& c : cases) {
    TestRunResult r{};
    REQUIRE(TestRun(tx, c.pkt, 7, &r) == 0);
    INFO(c.what);
    CHECK(r.retval == static_cast<uint32_t>(TC_ACT_OK));
    CHECK(r.priority == c.want);
  }
}

namespace {

// A class entry shaped on ingress for `id`, and the NIC programs loaded to redirect to an IFB
// (the ingress program's verdict is what the test runs look at, so any IFB index will do).
std::unique_ptr<NicPrograms> ShapedOnIngress(BpfFixture& fx, Dataplane& dp, uint64_t id,
                                             netqos_class* cls) {
  cls->flags = NETQOS_CLASS_F_INGRESS_SHAPED;
  REQUIRE(dp.SetClass(id, *cls).ok());
  auto nic = NicPrograms::Load({.pin_dir = fx.pin_dir(), .ifb_ifindex = 1});
  REQUIRE(nic.ok());
  return std::move(nic).value();
}

}  // namespace

TEST_CASE("the NIC ingress program leaves pods classified at their veth to the veth", "[bpf]") {
  BpfFixture fx;
  OpenedDataplane opened = OpenWithCgroups(fx);
  netqos_class shaped = SharedClassEntry(0x10078, 88);
  const auto nic = ShapedOnIngress(fx, *opened.dp, opened.id_b, &shaped);
  constexpr uint32_t kPodIp = 0x0af40006;
  REQUIRE(opened.dp->SetPodAddress(V4Key(kPodIp), opened.id_b).ok());
  const int ingress = nic->IngressFd();
  const auto to_pod = Ipv4Packet(IPPROTO_UDP, 0x0a000001, 4000, kPodIp, 53);

  TestRunResult before{};
  REQUIRE(TestRun(ingress, to_pod, 3, &before) == 0);
  CHECK(before.retval == static_cast<uint32_t>(TC_ACT_UNSPEC));  // on to the IFB redirect
  CHECK(before.priority == 0x10078u);
  shaped.flags |= NETQOS_CLASS_F_VETH;
  shaped.slot = 9;
  REQUIRE(opened.dp->SetClass(opened.id_b, shaped).ok());
  TestRunResult at_veth{};
  REQUIRE(TestRun(ingress, to_pod, 3, &at_veth) == 0);
  CHECK(at_veth.retval == static_cast<uint32_t>(TC_ACT_OK));  // not redirected here
}

TEST_CASE("a host socket of a pod classified at its veth is still shaped at the NIC", "[bpf]") {
  // Its packets never cross the pod's veth: the NIC is the only place that can hold them.
  BpfFixture fx;
  OpenedDataplane opened = OpenWithCgroups(fx);
  netqos_class shaped = SharedClassEntry(0x1007a, 90);
  const auto nic = ShapedOnIngress(fx, *opened.dp, opened.id_a, &shaped);
  shaped.flags |= NETQOS_CLASS_F_VETH;
  shaped.slot = 4;
  REQUIRE(opened.dp->SetClass(opened.id_a, shaped).ok());
  const int ingress = nic->IngressFd();

  // A whole datagram, then the first and a later fragment of another.
  const auto runs = RunForTaggedSocket<3>(fx.cg_a(), ingress, [](const std::vector<uint8_t>& d) {
    return std::array<std::vector<uint8_t>, 3>{d, Fragment(d, 4244, 0, true),
                                               Fragment(d, 4244, 185, false)};
  });
  for (const TestRunResult& r : runs) {
    CHECK(r.retval == static_cast<uint32_t>(TC_ACT_UNSPEC));  // on to the IFB redirect
    CHECK(r.priority == 0x1007au);
  }
}

TEST_CASE("the NIC ingress program places packets without ports by the owner netqos_rx learned",
          "[bpf]") {
  BpfFixture fx;
  OpenedDataplane opened = OpenWithCgroups(fx);
  netqos_class shaped = SharedClassEntry(0x10079, 89);
  const auto nic = ShapedOnIngress(fx, *opened.dp, opened.id_a, &shaped);
  const int ingress = nic->IngressFd();
  auto raw = Ipv4Packet(IPPROTO_UDP, 0x0a000001, 0, kLoopback, 0);
  reinterpret_cast<iphdr*>(raw.data() + sizeof(ethhdr))->protocol = 253;

  TestRunResult unknown{};
  REQUIRE(TestRun(ingress, raw, 3, &unknown) == 0);
  CHECK(unknown.priority == 3u);
  CHECK(unknown.retval == static_cast<uint32_t>(TC_ACT_OK));

  // What netqos_rx writes when such a packet reached the container's socket unplaced.
  const int owners = bpf_obj_get((fx.pin_dir() + "/" + netqos::bpf::kRxOwnerMapName).c_str());
  REQUIRE(owners >= 0);
  netqos_flow_key key{};
  key.saddr = V4Key(0x0a000001);
  key.daddr = V4Key(kLoopback);
  const uint64_t owner = opened.id_a;
  REQUIRE(bpf_map_update_elem(owners, &key, &owner, BPF_ANY) == 0);
  ::close(owners);
  TestRunResult learned{};
  REQUIRE(TestRun(ingress, raw, 3, &learned) == 0);
  CHECK(learned.priority == 0x10079u);
  CHECK(learned.retval == static_cast<uint32_t>(TC_ACT_UNSPEC));
  // A TCP packet of the same addresses that finds no socket takes it too (no socket names
  // another owner; a host service's socket would).
  TestRunResult tcp{};
  REQUIRE(TestRun(ingress, Ipv4Packet(IPPROTO_TCP, 0x0a000001, 4000, kLoopback, 1), 3, &tcp) == 0);
  CHECK(tcp.priority == 0x10079u);

  // IPv6/UDP behind 24 destination-options headers: more than the program walks (16), so no
  // ports; placed by its addresses' learned owner, and not without one.
  const uint8_t src6[16] = {0xfd, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02};
  std::vector<uint8_t> chain = Ipv6Packet(src6);
  uint8_t* ip6 = chain.data() + sizeof(ethhdr);
  ip6[6] = 60;  // destination options
  std::vector<uint8_t> opts;
  for (int i = 0; i < 24; ++i) {
    const uint8_t next = i + 1 < 24 ? 60 : IPPROTO_UDP;
    opts.insert(opts.end(), {next, 0, 1, 4, 0, 0, 0, 0});  // PadN, 8 bytes
  }
  chain.insert(chain.begin() + sizeof(ethhdr) + 40, opts.begin(), opts.end());
  ip6 = chain.data() + sizeof(ethhdr);
  ip6[5] = static_cast<uint8_t>(opts.size() + sizeof(udphdr));
  ip6[4] = static_cast<uint8_t>((opts.size() + sizeof(udphdr)) >> 8);
  TestRunResult chain_unknown{};
  REQUIRE(TestRun(ingress, chain, 3, &chain_unknown) == 0);
  CHECK(chain_unknown.priority == 3u);
  netqos_flow_key key6{};
  std::memcpy(key6.saddr.addr, src6, 16);
  std::memcpy(key6.daddr.addr, ip6 + 24, 16);
  const int owners6 = bpf_obj_get((fx.pin_dir() + "/" + netqos::bpf::kRxOwnerMapName).c_str());
  REQUIRE(owners6 >= 0);
  REQUIRE(bpf_map_update_elem(owners6, &key6, &owner, BPF_ANY) == 0);
  ::close(owners6);
  TestRunResult chain_learned{};
  REQUIRE(TestRun(ingress, chain, 3, &chain_learned) == 0);
  CHECK(chain_learned.priority == 0x10079u);
}
