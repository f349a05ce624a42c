// AttachIngress/DetachIngress/IngressAttached/IngressRedirectTarget against the real kernel: the
// tc filters netqos owns on a veth (the program, checked with tc and bpf_tc_query, and the u32 +
// act_mirred redirect to the IFB behind it), the atomic re-attach with a new redirect target
// (checked by BPF_PROG_TEST_RUN of the attached program), an idempotent re-attach, refusals (maps
// not pinned, a foreign program or filter in our slots, a missing device), a detach that leaves
// other filters alone, and frames that the redirect hands to an IFB which passes them on. Root
// only; the veth pair, the IFBs and the bpffs are removed at the end.
#include "bpf/nic_attach.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <net/if.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bpf/dataplane.h"
#include "support/bpffs_fixture.h"
#include "support/cgroup_fixture.h"
#include "support/netns.h"
#include "support/traffic.h"

namespace {

using netqos::StatusCode;
using netqos::bpf::AttachIngress;
using netqos::bpf::Dataplane;
using netqos::bpf::DetachIngress;
using netqos::bpf::IngressAttached;
using netqos::bpf::IngressRedirectTarget;
using netqos::bpf::kIngressRedirectTcPriority;
using netqos::bpf::kIngressTcHandle;
using netqos::bpf::kIngressTcPriority;
using netqos::testing::CaptureOutput;
using netqos::testing::FindProgram;
using netqos::testing::NetnsFixture;
using netqos::testing::PrivateBpffs;
using netqos::testing::Sh;
using netqos::testing::ShOk;
using netqos::testing::SpawnIn;
using netqos::testing::TestCgroup;
using netqos::testing::UniquePrefix;

// A veth pair in the host namespace (no traffic needed) and a loaded dataplane.
struct AttachFixture {
  PrivateBpffs bpffs;
  NetnsFixture fx;
  TestCgroup cg{"netqos-ingress-attach-" + std::to_string(::getpid())};
  std::string dev, other;
  int ifindex = 0, other_ifindex = 0;

  AttachFixture() {
    dev = UniquePrefix() + "ia0";
    other = UniquePrefix() + "ia1";
    fx.AddVeth(dev, other);
    fx.SetUp("", dev, true);
    fx.SetUp("", other, true);
    ifindex = static_cast<int>(::if_nametoindex(dev.c_str()));
    other_ifindex = static_cast<int>(::if_nametoindex(other.c_str()));
    if (ifindex <= 0 || other_ifindex <= 0) throw std::runtime_error("no veth ifindex");
  }
  ~AttachFixture() { (void)Dataplane::Uninstall(bpffs.PinDir()); }

  Dataplane::Options Options() const {
    Dataplane::Options o;
    o.pin_dir = bpffs.PinDir();
    o.cgroup_path = cg.Path();
    return o;
  }
  std::string Filters() const { return CaptureOutput("tc filter show dev " + dev + " ingress"); }
};

// An IFB in the host namespace, up, deleted on scope exit. Without IPv6: an IFB drops what it
// sends of its own (router solicitations, MLD reports) in rx_dropped, which the test counts.
struct Ifb {
  std::string name;
  int ifindex = 0;
  explicit Ifb(const std::string& n) : name(n) {
    Sh("ip link add " + name + " type ifb");
    try {
      std::ofstream("/proc/sys/net/ipv6/conf/" + name + "/disable_ipv6") << "1\n";
      Sh("ip link set " + name + " up");
      ifindex = static_cast<int>(::if_nametoindex(name.c_str()));
      if (ifindex <= 0) throw std::runtime_error("no ifindex for " + name);
    } catch (...) {
      ShOk("ip link del " + name);  // the destructor does not run for a half-built object
      throw;
    }
  }
  ~Ifb() { ShOk("ip link del " + name); }
  Ifb(const Ifb&) = delete;
  Ifb& operator=(const Ifb&) = delete;
  uint64_t Stat(const std::string& counter) const {
    return std::stoull(CaptureOutput("cat /sys/class/net/" + name + "/statistics/" + counter));
  }
};

// tc's lines for the filters at `pref` ("" if none): a filter's first line and the indented ones
// after it, up to the next filter of another pref.
std::string FiltersAt(const std::string& filters, uint32_t pref) {
  const std::string tag = "pref " + std::to_string(pref) + " ";
  std::string out, line;
  std::istringstream in(filters);
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.rfind("filter ", 0) == 0) inside = line.find(tag) != std::string::npos;
    if (inside) out += line + "\n";
  }
  return out;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

bpf_tc_hook Hook(int ifindex) {
  bpf_tc_hook hook{};
  hook.sz = sizeof(hook);
  hook.ifindex = ifindex;
  hook.attach_point = BPF_TC_INGRESS;
  return hook;
}

// The program id in netqos's slot, 0 if none.
uint32_t SlotProgId(int ifindex) {
  bpf_tc_hook hook = Hook(ifindex);
  bpf_tc_opts opts{};
  opts.sz = sizeof(opts);
  opts.handle = kIngressTcHandle;
  opts.priority = kIngressTcPriority;
  return bpf_tc_query(&hook, &opts) == 0 ? opts.prog_id : 0;
}

// The verdict of program `id` for a non-IP frame (no socket to find, so unclassified):
// TC_ACT_UNSPEC (no verdict: the redirect filter behind the program sends it to the IFB) when a
// redirect target is configured and unclassified packets go there, TC_ACT_OK when not.
int VerdictForArp(uint32_t id) {
  const int fd = bpf_prog_get_fd_by_id(id);
  if (fd < 0) return -1;
  std::vector<uint8_t> frame(64, 0);
  frame[12] = 0x08;  // ethertype ARP
  frame[13] = 0x06;
  bpf_test_run_opts opts{};
  opts.sz = sizeof(opts);
  opts.data_in = frame.data();
  opts.data_size_in = static_cast<uint32_t>(frame.size());
  opts.repeat = 1;
  const int err = bpf_prog_test_run_opts(fd, &opts);
  ::close(fd);
  return err == 0 ? static_cast<int>(opts.retval) : -1;
}

// A tc program that is not netqos's: "return TC_ACT_OK", named "foreign".
int LoadForeignProgram() {
  const bpf_insn insns[] = {
      {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, TC_ACT_OK},
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
  };
  return bpf_prog_load(BPF_PROG_TYPE_SCHED_CLS, "foreign", "GPL", insns, 2, nullptr);
}

int AttachAt(int ifindex, int prog_fd, uint32_t handle, uint32_t priority) {
  bpf_tc_hook hook = Hook(ifindex);
  int err = bpf_tc_hook_create(&hook);
  if (err && err != -EEXIST) return err;
  bpf_tc_opts opts{};
  opts.sz = sizeof(opts);
  opts.prog_fd = prog_fd;
  opts.handle = handle;
  opts.priority = priority;
  return bpf_tc_attach(&hook, &opts);
}

}  // namespace

TEST_CASE("ingress attach: attach, atomic re-attach with a new target, detach", "[bpf]") {
  AttachFixture fx;
  auto dp = Dataplane::Open(fx.Options());
  INFO(dp.status().message());
  REQUIRE(dp.ok());

  auto none = IngressAttached(fx.ifindex);  // no clsact qdisc yet
  REQUIRE(none.ok());
  CHECK_FALSE(*none);
  auto no_id = netqos::bpf::IngressProgramId(fx.ifindex);
  REQUIRE(no_id.ok());
  CHECK(*no_id == 0);
  CHECK(DetachIngress(fx.ifindex).ok());  // nothing to detach: fine

  auto st = AttachIngress({.pin_dir = fx.bpffs.PinDir(), .ifindex = fx.ifindex});
  INFO(st.message());
  REQUIRE(st.ok());
  auto attached = IngressAttached(fx.ifindex);
  REQUIRE(attached.ok());
  CHECK(*attached);
  const std::string filters = fx.Filters();
  INFO(filters);
  CHECK(filters.find("pref 49374 bpf") != std::string::npos);
  CHECK(filters.find("handle 0x6e71 netqos_ingress") != std::string::npos);
  CHECK(filters.find("direct-action") != std::string::npos);
  const uint32_t first = SlotProgId(fx.ifindex);
  REQUIRE(first != 0);
  auto our_id = netqos::bpf::IngressProgramId(fx.ifindex);  // what the datapath bench counts by
  REQUIRE(our_id.ok());
  CHECK(*our_id == first);
  CHECK(VerdictForArp(first) == TC_ACT_OK);  // no redirect target
  // ... and so no redirect filter behind the program.
  CHECK(FiltersAt(filters, kIngressRedirectTcPriority).empty());
  auto target = IngressRedirectTarget(fx.ifindex);
  REQUIRE(target.ok());
  CHECK(*target == 0);

  // A redirect target, unclassified packets not sent there: the ARP frame passes on.
  st = AttachIngress(
      {.pin_dir = fx.bpffs.PinDir(), .ifindex = fx.ifindex, .ifb_ifindex = fx.other_ifindex});
  INFO(st.message());
  REQUIRE(st.ok());
  const uint32_t classified_only = SlotProgId(fx.ifindex);
  CHECK(classified_only != first);
  CHECK(VerdictForArp(classified_only) == TC_ACT_OK);
  // The redirect: a u32 rule for every packet, one pref after the program, whose act_mirred
  // sends to the target what the program leaves without a verdict.
  static_assert(kIngressRedirectTcPriority > kIngressTcPriority, "the program runs first");
  const std::string with_target = fx.Filters();
  INFO(with_target);
  const std::string redirect = FiltersAt(with_target, kIngressRedirectTcPriority);
  CHECK(Count(redirect, "u32") >= 1);
  CHECK(redirect.find("fh 800::e71") != std::string::npos);
  CHECK(redirect.find("match 00000000/00000000 at 0") != std::string::npos);
  CHECK(redirect.find("mirred (Egress Redirect to device " + fx.other + ") stolen") !=
        std::string::npos);
  CHECK(with_target.find("pref 49374 bpf") < with_target.find("pref 49375 u32"));  // tc's order
  target = IngressRedirectTarget(fx.ifindex);
  REQUIRE(target.ok());
  CHECK(*target == fx.other_ifindex);

  // Re-attach redirecting unclassified packets too: replaced in place, one filter, the new
  // program redirects.
  st = AttachIngress({.pin_dir = fx.bpffs.PinDir(),
                      .ifindex = fx.ifindex,
                      .ifb_ifindex = fx.other_ifindex,
                      .redirect_unclassified = true});
  INFO(st.message());
  REQUIRE(st.ok());
  const uint32_t second = SlotProgId(fx.ifindex);
  CHECK(second != 0);
  CHECK(second != classified_only);
  // No verdict: the redirect filter after it decides (act_mirred, not bpf_redirect()).
  CHECK(VerdictForArp(second) == TC_ACT_UNSPEC);
  const std::string after = fx.Filters();
  INFO(after);
  CHECK(after.find("handle 0x6e71") != std::string::npos);
  CHECK(after.find("handle 0x6e71") == after.rfind("handle 0x6e71"));  // exactly one
  // The redirect already went to the same device: left as it was (same rule, same action index).
  CHECK(FiltersAt(after, kIngressRedirectTcPriority) == redirect);
  // The replaced program is freed (after an RCU grace period): AttachIngress kept no fd on it.
  bool freed = false;
  for (int i = 0; i < 200 && !freed; ++i) {
    const int fd = bpf_prog_get_fd_by_id(first);
    freed = fd < 0;
    if (fd >= 0) ::close(fd);
    if (!freed) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(freed);

  REQUIRE(DetachIngress(fx.ifindex).ok());
  attached = IngressAttached(fx.ifindex);
  REQUIRE(attached.ok());
  CHECK_FALSE(*attached);
  const std::string detached = fx.Filters();
  INFO(detached);
  CHECK(detached.find("netqos_ingress") == std::string::npos);
  CHECK(detached.find("u32") == std::string::npos);  // the redirect went too
  CHECK(detached.find("mirred") == std::string::npos);
  target = IngressRedirectTarget(fx.ifindex);
  REQUIRE(target.ok());
  CHECK(*target == 0);
  // clsact stays (documented): it may carry other tools' filters.
  CHECK(CaptureOutput("tc qdisc show dev " + fx.dev).find("clsact") != std::string::npos);
  CHECK(DetachIngress(fx.ifindex).ok());  // idempotent
}

TEST_CASE("ingress attach: refusals name the object and leave the kernel untouched", "[bpf]") {
  AttachFixture fx;

  // No dataplane yet: the maps are not pinned, so nothing may be created or attached.
  auto st = AttachIngress({.pin_dir = fx.bpffs.PinDir(), .ifindex = fx.ifindex});
  CHECK(st.code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(st.message(), Catch::Contains(fx.bpffs.PinDir()) && Catch::Contains("netqos_cls_v1"));
  struct stat sb {};
  CHECK(::stat(fx.bpffs.PinDir().c_str(), &sb) != 0);  // libbpf did not pin fresh maps there
  CHECK(fx.Filters().find("netqos_ingress") == std::string::npos);

  auto dp = Dataplane::Open(fx.Options());
  REQUIRE(dp.ok());

  // Missing devices.
  const int missing = 999999;
  st = AttachIngress({.pin_dir = fx.bpffs.PinDir(), .ifindex = missing});
  CHECK(st.code() == StatusCode::kNotFound);
  CHECK_THAT(st.message(), Catch::Contains("ifindex 999999"));
  st = AttachIngress({.pin_dir = fx.bpffs.PinDir(), .ifindex = fx.ifindex, .ifb_ifindex = missing});
  CHECK(st.code() == StatusCode::kNotFound);
  CHECK_THAT(st.message(), Catch::Contains("999999") && Catch::Contains(fx.dev));
  CHECK(DetachIngress(missing).ok());
  CHECK(IngressAttached(missing).status().code() == StatusCode::kNotFound);

  // A foreign program in our slot: refused by all three, and left in place.
  const int foreign = LoadForeignProgram();
  REQUIRE(foreign >= 0);
  REQUIRE(AttachAt(fx.ifindex, foreign, kIngressTcHandle, kIngressTcPriority) == 0);
  st = AttachIngress({.pin_dir = fx.bpffs.PinDir(), .ifindex = fx.ifindex});
  CHECK(st.code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(st.message(), Catch::Contains("foreign") && Catch::Contains(fx.dev));
  CHECK(DetachIngress(fx.ifindex).code() == StatusCode::kFailedPrecondition);
  auto attached = IngressAttached(fx.ifindex);
  REQUIRE(attached.ok());
  CHECK_FALSE(*attached);
  auto foreign_id = netqos::bpf::IngressProgramId(fx.ifindex);
  REQUIRE(foreign_id.ok());
  CHECK(*foreign_id == 0);
  CHECK(fx.Filters().find("foreign") != std::string::npos);

  // Move the foreign filter to pref 1: ours attaches next to it, and our detach leaves it.
  bpf_tc_hook hook = Hook(fx.ifindex);
  bpf_tc_opts ours_slot{};
  ours_slot.sz = sizeof(ours_slot);
  ours_slot.handle = kIngressTcHandle;
  ours_slot.priority = kIngressTcPriority;
  REQUIRE(bpf_tc_detach(&hook, &ours_slot) == 0);
  REQUIRE(AttachAt(fx.ifindex, foreign, 1, 1) == 0);
  ::close(foreign);
  REQUIRE(AttachIngress({.pin_dir = fx.bpffs.PinDir(), .ifindex = fx.ifindex}).ok());
  CHECK(fx.Filters().find("netqos_ingress") != std::string::npos);
  REQUIRE(DetachIngress(fx.ifindex).ok());
  const std::string left = fx.Filters();
  INFO(left);
  CHECK(left.find("netqos_ingress") == std::string::npos);
  CHECK(left.find("foreign") != std::string::npos);
}

namespace {

// Sends `count` Ethernet frames of the local experimental ethertype 0x88b5 out of `from` to the
// MAC address of `to`: not IP, so netqos_ingress finds no class for them.
bool SendFrames(const std::string& from, const std::string& to, int count) {
  const char* script =
      "import socket, sys\n"
      "mac = lambda dev: bytes.fromhex(open('/sys/class/net/%s/address' % dev).read().strip()"
      ".replace(':', ''))\n"
      "s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\n"
      "s.bind((sys.argv[1], 0))\n"
      "for _ in range(int(sys.argv[3])):\n"
      "    s.send(mac(sys.argv[2]) + mac(sys.argv[1]) + bytes([0x88, 0xb5]) + bytes(46))\n";
  const pid_t pid =
      SpawnIn({FindProgram("python3"), "-c", script, from, to, std::to_string(count)}, {});
  int status = 0;
  return pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

}  // namespace

TEST_CASE("ingress attach: the IFB redirect follows its target, passes frames on, and is ours only",
          "[bpf]") {
  AttachFixture fx;
  auto dp = Dataplane::Open(fx.Options());
  INFO(dp.status().message());
  REQUIRE(dp.ok());
  Ifb a(netqos::testing::UniquePrefix() + "ifa");
  Ifb b(netqos::testing::UniquePrefix() + "ifb");
  const auto attach = [&](int ifb) {
    return AttachIngress({.pin_dir = fx.bpffs.PinDir(),
                          .ifindex = fx.ifindex,
                          .ifb_ifindex = ifb,
                          .redirect_unclassified = true});
  };
  const auto target = [&] {
    auto t = IngressRedirectTarget(fx.ifindex);
    INFO(t.status().message());
    REQUIRE(t.ok());
    return *t;
  };

  REQUIRE(attach(a.ifindex).ok());
  CHECK(target() == a.ifindex);

  // Frames of no class (redirect_unclassified): the program gives them no verdict, the u32 rule
  // hands them to the IFB, which passes them on (tx_packets) instead of dropping them
  // (rx_dropped, what Debian's 5.10 and 6.1 IFBs do with bpf_redirect()ed packets).
  const uint64_t tx0 = a.Stat("tx_packets"), dropped0 = a.Stat("rx_dropped");
  REQUIRE(SendFrames(fx.other, fx.dev, 20));
  uint64_t tx = tx0;
  for (int i = 0; i < 100 && tx < tx0 + 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    tx = a.Stat("tx_packets");
  }
  CHECK(tx >= tx0 + 20);
  CHECK(a.Stat("rx_dropped") == dropped0);

  // Another IFB (netqosd re-created it): the rule is swapped in place, still one.
  REQUIRE(attach(b.ifindex).ok());
  CHECK(target() == b.ifindex);
  std::string filters = fx.Filters();
  INFO(filters);
  CHECK(Count(filters, "mirred") == 1);
  CHECK(filters.find("Egress Redirect to device " + b.name) != std::string::npos);

  // Classify only: the program stays, the redirect goes.
  REQUIRE(AttachIngress({.pin_dir = fx.bpffs.PinDir(), .ifindex = fx.ifindex}).ok());
  CHECK(target() == 0);
  filters = fx.Filters();
  CHECK(filters.find("netqos_ingress") != std::string::npos);
  CHECK(FiltersAt(filters, kIngressRedirectTcPriority).empty());
  REQUIRE(attach(a.ifindex).ok());
  CHECK(target() == a.ifindex);
  REQUIRE(DetachIngress(fx.ifindex).ok());

  // A filter netqos did not put at the redirect's pref: another protocol, then another u32 rule.
  // (A classid, not an action: this host's kernel has no act_gact.)
  for (const std::string foreign :
       {"protocol ip u32 match u32 0 0 flowid 1:1", "protocol all u32 match u32 0 0 flowid 1:1"}) {
    INFO(foreign);
    Sh("tc filter add dev " + fx.dev + " ingress pref " +
       std::to_string(kIngressRedirectTcPriority) + " " + foreign);
    auto st = attach(a.ifindex);
    CHECK(st.code() == StatusCode::kFailedPrecondition);
    CHECK_THAT(st.message(), Catch::Contains("49375") && Catch::Contains(fx.dev));
    CHECK(fx.Filters().find("netqos_ingress") == std::string::npos);  // nothing attached
    CHECK(IngressRedirectTarget(fx.ifindex).status().code() == StatusCode::kFailedPrecondition);
    CHECK(DetachIngress(fx.ifindex).code() == StatusCode::kFailedPrecondition);
    CHECK(fx.Filters().find("flowid 1:1") != std::string::npos);  // left alone
    Sh("tc filter del dev " + fx.dev + " ingress pref " +
       std::to_string(kIngressRedirectTcPriority));
  }

  // A foreign u32 filter elsewhere on the same clsact took hash table 800: ours gets the next one,
  // and is found, kept and removed all the same.
  Sh("tc filter add dev " + fx.dev + " ingress pref 100 protocol all u32 match u32 0 0 flowid 1:1");
  REQUIRE(attach(a.ifindex).ok());
  CHECK(target() == a.ifindex);
  const std::string shared = FiltersAt(fx.Filters(), kIngressRedirectTcPriority);
  INFO(shared);
  CHECK(shared.find("fh 801::e71") != std::string::npos);
  REQUIRE(attach(a.ifindex).ok());
  CHECK(FiltersAt(fx.Filters(), kIngressRedirectTcPriority) == shared);  // left as it was
  REQUIRE(attach(b.ifindex).ok());
  CHECK(target() == b.ifindex);
  REQUIRE(DetachIngress(fx.ifindex).ok());
  filters = fx.Filters();
  CHECK(filters.find("pref 100 u32") != std::string::npos);
  CHECK(filters.find("pref 49374") == std::string::npos);
  CHECK(filters.find("pref 49375") == std::string::npos);
  Sh("tc filter del dev " + fx.dev + " ingress pref 100");
  CHECK(fx.Filters().empty());
}
