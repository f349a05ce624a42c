// Map layout migration against the real kernel: an "old build" (tests/bpf/netqos_old_layout.bpf.c,
// maps netqos_cls_v0 and netqos_cgst_v0 with other value layouts) is loaded and attached through a
// pinned link in a private bpffs, then Dataplane::Open upgrades it in place. Root only; the
// bpffs is unmounted and the cgroups removed at the end, also on failure.
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "bpf/dataplane.h"
#include "netqos_old_layout.skel.h"
#include "support/bpf_test_run.h"
#include "support/bpffs_fixture.h"
#include "support/cgroup_fixture.h"

namespace {

using netqos::bpf::Dataplane;
using netqos::testing::PrivateBpffs;
using netqos::testing::TestCgroup;

// The value layouts of tests/bpf/netqos_old_layout.bpf.c.
struct OldClass {
  uint32_t net_class_id;
  uint32_t priority;
};
struct OldCounters {
  uint64_t tx_bytes;
  uint64_t tx_packets;
};

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// A private bpffs with the pin dir created, and cgroups <root>/{a,b}; the egress program
// attaches to the root. Members are destroyed in reverse: cgroups first, then the bpffs.
struct Fixture {
  PrivateBpffs bpffs;
  TestCgroup root{"netqos-migr-" + std::to_string(::getpid())};
  TestCgroup a{root, "a"};
  TestCgroup b{root, "b"};

  Fixture() {
    if (::mkdir(pin_dir().c_str(), 0700) != 0) throw std::runtime_error("mkdir " + pin_dir());
  }
  std::string pin_dir() const { return bpffs.PinDir(); }
  std::string pin(const char* name) const { return pin_dir() + "/" + name; }
  Dataplane::Options options() const {
    Dataplane::Options o;
    o.pin_dir = pin_dir();
    o.cgroup_path = root.Path();
    return o;
  }
};

// Loads the old object with its maps pinned in pin_dir and, if attach_to is not empty, attaches
// its program there through a link pinned as link_egress, as an old daemon would have left it.
// The caller fills the maps, then destroys the skeleton (the pins stay).
netqos_old_layout* LoadOldBuild(const Fixture& fx, const std::string& attach_to) {
  const std::string pin_dir = fx.pin_dir();
  bpf_object_open_opts opts{};
  opts.sz = sizeof(opts);
  opts.pin_root_path = pin_dir.c_str();
  netqos_old_layout* old = netqos_old_layout__open_opts(&opts);
  if (old == nullptr) return nullptr;
  if (netqos_old_layout__load(old) != 0) {
    netqos_old_layout__destroy(old);
    return nullptr;
  }
  if (!attach_to.empty()) {
    const int cg = ::open(attach_to.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    bpf_link* link =
        cg < 0 ? nullptr : bpf_program__attach_cgroup(old->progs.netqos_old_egress, cg);
    if (cg >= 0) ::close(cg);
    const std::string link_pin = fx.pin(netqos::bpf::kEgressLinkPin);
    const bool pinned = link != nullptr && bpf_link__pin(link, link_pin.c_str()) == 0;
    if (link != nullptr) bpf_link__destroy(link);  // pinned: stays attached
    if (!pinned) {
      netqos_old_layout__destroy(old);
      return nullptr;
    }
  }
  return old;
}

// Fills a per-CPU value: CPU 0 gets `first`, CPU 1 gets `second`, the others zero.
std::vector<OldCounters> PerCpu(int ncpu, OldCounters first, OldCounters second) {
  std::vector<OldCounters> v(static_cast<size_t>(ncpu), OldCounters{0, 0});
  v[0] = first;
  v[1] = second;
  return v;
}

bpf_link_info LinkInfo(const std::string& path) {
  bpf_link_info info{};
  const int fd = bpf_obj_get(path.c_str());
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

// Runs fn in a forked child that first joins cgroup_dir; returns fn's result (0 = success), or
// 100+ when the child could not run it.
int RunInCgroup(const std::string& cgroup_dir, const std::function<int()>& fn) {
  const pid_t pid = ::fork();
  if (pid < 0) return 100;
  if (pid == 0) {
    std::ofstream procs(cgroup_dir + "/cgroup.procs");
    procs << "0" << std::flush;  // "0" = the writing process
    ::_exit(procs ? fn() : 101);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 102;
  return WEXITSTATUS(status);
}

// BPF_PROG_TEST_RUN of the egress program on a minimal IPv4 packet, in the calling task (so in
// its cgroup); the skb priority the program leaves, or -1.
int64_t TestRunPriority(int prog_fd, uint32_t in_priority) {
  std::vector<uint8_t> pkt(sizeof(ethhdr) + 20 + 8, 0);
  ethhdr eth{};
  eth.h_proto = htons(ETH_P_IP);
  std::memcpy(pkt.data(), &eth, sizeof(eth));
  pkt[sizeof(ethhdr)] = 0x45;  // IPv4, ihl 5
  const auto run = netqos::testing::RunSkbProgram(prog_fd, std::move(pkt), in_priority);
  if (run.err != 0 || run.retval != 1) return -1;
  return run.priority;
}

const netqos::bpf::MigratedMap* Find(const netqos::bpf::MigrationReport& r, const char* target) {
  for (const auto& m : r.maps) {
    if (m.target == target) return &m;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("Open migrates v0 maps by field name, swaps the link and unpins them", "[bpf]") {
  Fixture fx;
  const int ncpu = libbpf_num_possible_cpus();
  REQUIRE(ncpu >= 2);
  const uint64_t id_a = fx.a.Id();
  const uint64_t id_b = fx.b.Id();
  constexpr uint64_t kGone = 777;  // an entry for a cgroup that no longer exists: kept as is

  {
    netqos_old_layout* old = LoadOldBuild(fx, fx.root.Path());
    REQUIRE(old != nullptr);
    const std::vector<std::pair<uint64_t, OldClass>> classes = {
        {id_a, {/*net_class_id=*/51, /*priority=*/0x10010}},
        {id_b, {52, 0x10020}},
        {kGone, {53, 0x10030}}};
    for (const auto& [id, cls] : classes) {
      REQUIRE(bpf_map__update_elem(old->maps.netqos_cls_v0, &id, sizeof(id), &cls, sizeof(cls),
                                   BPF_ANY) == 0);
    }
    auto ca = PerCpu(ncpu, {100, 1}, {200, 2});
    auto cg = PerCpu(ncpu, {5, 1}, {7, 1});
    REQUIRE(bpf_map__update_elem(old->maps.netqos_cgst_v0, &id_a, sizeof(id_a), ca.data(),
                                 ca.size() * sizeof(OldCounters), BPF_ANY) == 0);
    REQUIRE(bpf_map__update_elem(old->maps.netqos_cgst_v0, &kGone, sizeof(kGone), cg.data(),
                                 cg.size() * sizeof(OldCounters), BPF_ANY) == 0);
    netqos_old_layout__destroy(old);  // the old daemon exits; its link and maps stay pinned
  }
  const std::string link_pin = fx.pin(netqos::bpf::kEgressLinkPin);
  const bpf_link_info before = LinkInfo(link_pin);
  REQUIRE(before.id != 0);
  REQUIRE(Exists(fx.pin("netqos_cls_v0")));
  REQUIRE(Exists(fx.pin("netqos_cgst_v0")));

  auto dp = Dataplane::Open(fx.options());
  INFO((dp.ok() ? std::string() : dp.status().message()));
  REQUIRE(dp.ok());

  // The class map: same priority and class id per key, qos_level and flags zero.
  auto list = (*dp)->ListClasses();
  REQUIRE(list.ok());
  REQUIRE(list->size() == 3);
  for (const auto& [id, c] : *list) {
    INFO("cgroup " << id);
    CHECK(c.qos_level == 0);
    CHECK(c.flags == 0u);
    if (id == id_a) {
      CHECK(c.priority == 0x10010u);
      CHECK(c.net_class_id == 51u);
    } else if (id == id_b) {
      CHECK(c.priority == 0x10020u);
      CHECK(c.net_class_id == 52u);
    } else {
      CHECK(id == kGone);
      CHECK(c.priority == 0x10030u);
      CHECK(c.net_class_id == 53u);
    }
  }
  // The counters: per-CPU values carried over (so the sums), new fields zero.
  auto ca = (*dp)->ContainerCounters(id_a);
  REQUIRE(ca.ok());
  CHECK(ca->tx_bytes == 300);
  CHECK(ca->tx_packets == 3);
  CHECK(ca->rx_bytes == 0);
  CHECK(ca->rx_packets == 0);
  CHECK(ca->drops == 0);
  auto cg = (*dp)->ContainerCounters(kGone);
  REQUIRE(cg.ok());
  CHECK(cg->tx_bytes == 12);
  CHECK(cg->tx_packets == 2);

  // The report, and the old pins are gone.
  const auto& report = (*dp)->migration();
  CHECK(report.unpinned);
  REQUIRE(report.maps.size() == 2);
  const auto* cls_report = Find(report, netqos::bpf::kClassMapName);
  REQUIRE(cls_report != nullptr);
  CHECK(cls_report->old_pin == fx.pin("netqos_cls_v0"));
  CHECK(cls_report->copied == 3);
  CHECK(cls_report->kept == 0);
  CHECK(cls_report->dropped_fields.empty());
  CHECK(Contains(cls_report->zeroed_fields, "qos_level"));
  CHECK(Contains(cls_report->zeroed_fields, "flags"));
  const auto* cg_report = Find(report, netqos::bpf::kCgroupStatsMapName);
  REQUIRE(cg_report != nullptr);
  CHECK(cg_report->copied == 2);
  CHECK(Contains(cg_report->zeroed_fields, "rx_bytes"));
  CHECK(report.Describe().size() == 2);
  CHECK(!Exists(fx.pin("netqos_cls_v0")));
  CHECK(!Exists(fx.pin("netqos_cgst_v0")));

  // The same link now runs the new program, which reads the migrated classes.
  const bpf_link_info after = LinkInfo(link_pin);
  CHECK(after.id == before.id);
  CHECK(after.prog_id != before.prog_id);
  CHECK(after.prog_id == ProgId((*dp)->EgressProgramFd()));
  const int prog = (*dp)->EgressProgramFd();
  CHECK(RunInCgroup(fx.a.Path(), [&] { return TestRunPriority(prog, 5) == 0x10010 ? 0 : 1; }) == 0);

  // A real datagram from cgroup a passes the link: counted on top of the migrated counters.
  const int rx = ::socket(AF_INET, SOCK_DGRAM, 0);
  REQUIRE(rx >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(rx, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  socklen_t alen = sizeof(addr);
  REQUIRE(::getsockname(rx, reinterpret_cast<sockaddr*>(&addr), &alen) == 0);
  const int sent = RunInCgroup(fx.a.Path(), [&] {
    const int s = ::socket(AF_INET, SOCK_DGRAM, 0);
    const char payload[64] = {};
    const bool ok =
        s >= 0 && ::sendto(s, payload, sizeof(payload), 0, reinterpret_cast<sockaddr*>(&addr),
                           sizeof(addr)) == static_cast<ssize_t>(sizeof(payload));
    return ok ? 0 : 1;
  });
  ::close(rx);
  REQUIRE(sent == 0);
  ca = (*dp)->ContainerCounters(id_a);
  REQUIRE(ca.ok());
  CHECK(ca->tx_packets >= 4);
  CHECK(ca->tx_bytes >= 300 + 64);
  auto c51 = (*dp)->ClassCounters(51);
  REQUIRE(c51.ok());
  CHECK(c51->tx_packets >= 1);
}

TEST_CASE("migration keeps entries an interrupted upgrade already wrote", "[bpf]") {
  Fixture fx;
  // A first upgrade got as far as creating the current maps and writing a newer entry for key 2.
  netqos_class newer{};
  newer.priority = 0x10099;
  newer.net_class_id = 99;
  newer.qos_level = NETQOS_QOS_SHARED;
  {
    auto first = Dataplane::Open(fx.options());
    REQUIRE(first.ok());
    REQUIRE((*first)->SetClass(2, newer).ok());
  }
  // The old build's maps are still pinned next to them.
  {
    netqos_old_layout* old = LoadOldBuild(fx, "");
    REQUIRE(old != nullptr);
    for (uint64_t id : {uint64_t{1}, uint64_t{2}}) {
      const OldClass cls{static_cast<uint32_t>(id), 0x10000u + static_cast<uint32_t>(id)};
      REQUIRE(bpf_map__update_elem(old->maps.netqos_cls_v0, &id, sizeof(id), &cls, sizeof(cls),
                                   BPF_ANY) == 0);
    }
    netqos_old_layout__destroy(old);
  }

  auto dp = Dataplane::Open(fx.options());
  INFO((dp.ok() ? std::string() : dp.status().message()));
  REQUIRE(dp.ok());
  auto list = (*dp)->ListClasses();
  REQUIRE(list.ok());
  REQUIRE(list->size() == 2);
  for (const auto& [id, c] : *list) {
    if (id == 1) CHECK(c.priority == 0x10001u);
    if (id == 2) {
      CHECK(c.priority == 0x10099u);
      CHECK(c.net_class_id == 99u);
      CHECK(c.qos_level == NETQOS_QOS_SHARED);
    }
  }
  const auto* cls_report = Find((*dp)->migration(), netqos::bpf::kClassMapName);
  REQUIRE(cls_report != nullptr);
  CHECK(cls_report->copied == 1);
  CHECK(cls_report->kept == 1);
  CHECK(!Exists(fx.pin("netqos_cls_v0")));
  CHECK(!Exists(fx.pin("netqos_cgst_v0")));
}

TEST_CASE("an old map without BTF is refused, named, and left in place until uninstall", "[bpf]") {
  Fixture fx;
  const std::string old_pin = fx.pin("netqos_cls_v0");
  const int fd =
      bpf_map_create(BPF_MAP_TYPE_HASH, "netqos_cls_v0", sizeof(uint64_t), 8, 1024, nullptr);
  REQUIRE(fd >= 0);
  const uint64_t key = 42;
  const OldClass value{7, 0x10007};
  REQUIRE(bpf_map_update_elem(fd, &key, &value, BPF_ANY) == 0);
  REQUIRE(bpf_obj_pin(fd, old_pin.c_str()) == 0);
  ::close(fd);

  {
    auto dp = Dataplane::Open(fx.options());
    REQUIRE(!dp.ok());
    INFO(dp.status().message());
    CHECK(dp.status().code() == netqos::StatusCode::kFailedPrecondition);
    CHECK(dp.status().message().find(old_pin) != std::string::npos);
    CHECK(dp.status().message().find("--uninstall") != std::string::npos);
  }
  CHECK(Exists(old_pin));
  // Nothing attached: a refused migration never replaces the program in the link.
  CHECK(!Exists(fx.pin(netqos::bpf::kEgressLinkPin)));

  // --uninstall removes the current maps and the old one.
  REQUIRE(Dataplane::Uninstall(fx.pin_dir()).ok());
  CHECK(!Exists(old_pin));
  CHECK(!Exists(fx.pin_dir()));
}

TEST_CASE("DeleteContainerCounters removes an entry and tolerates a missing one", "[bpf]") {
  Fixture fx;
  auto dp = Dataplane::Open(fx.options());
  REQUIRE(dp.ok());
  CHECK((*dp)->migration().empty());
  const int ncpu = libbpf_num_possible_cpus();
  REQUIRE(ncpu >= 1);
  const int fd = bpf_obj_get(fx.pin(netqos::bpf::kCgroupStatsMapName).c_str());
  REQUIRE(fd >= 0);
  std::vector<netqos_counters> per_cpu(static_cast<size_t>(ncpu), netqos_counters{});
  per_cpu[0].tx_bytes = 1000;
  per_cpu[0].tx_packets = 10;
  for (uint64_t id : {31, 32}) REQUIRE(bpf_map_update_elem(fd, &id, per_cpu.data(), BPF_ANY) == 0);

  auto c31 = (*dp)->ContainerCounters(31);
  REQUIRE(c31.ok());
  CHECK(c31->tx_packets == 10);
  REQUIRE((*dp)->DeleteContainerCounters(31).ok());
  const uint64_t k31 = 31;
  CHECK(bpf_map_lookup_elem(fd, &k31, per_cpu.data()) == -ENOENT);
  c31 = (*dp)->ContainerCounters(31);
  REQUIRE(c31.ok());
  CHECK(c31->tx_packets == 0);
  auto c32 = (*dp)->ContainerCounters(32);  // the other entry is untouched
  REQUIRE(c32.ok());
  CHECK(c32->tx_bytes == 1000);
  CHECK((*dp)->DeleteContainerCounters(31).ok());      // already gone
  CHECK((*dp)->DeleteContainerCounters(123456).ok());  // never existed
  ::close(fd);
}
