// AttachIngress/DetachIngress/IngressAttached against the real kernel, without traffic: the tc
// filter netqos owns on a veth (checked with tc and bpf_tc_query), the atomic re-attach with a new
// redirect target (checked by BPF_PROG_TEST_RUN of the attached program), refusals (maps not
// pinned, a foreign program in our slot, a missing device) and a detach that leaves other
// filters alone. Root only; the veth pair and the bpffs are removed at the end.
#include "bpf/nic_attach.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <net/if.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
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
using netqos::bpf::kIngressTcHandle;
using netqos::bpf::kIngressTcPriority;
using netqos::testing::CaptureOutput;
using netqos::testing::NetnsFixture;
using netqos::testing::PrivateBpffs;
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
// TC_ACT_REDIRECT when a redirect target is configured and unclassified packets go there,
// TC_ACT_OK when not.
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
  CHECK(VerdictForArp(first) == TC_ACT_OK);  // no redirect target

  // A redirect target, unclassified packets not sent there: the ARP frame passes on.
  st = AttachIngress(
      {.pin_dir = fx.bpffs.PinDir(), .ifindex = fx.ifindex, .ifb_ifindex = fx.other_ifindex});
  INFO(st.message());
  REQUIRE(st.ok());
  const uint32_t classified_only = SlotProgId(fx.ifindex);
  CHECK(classified_only != first);
  CHECK(VerdictForArp(classified_only) == TC_ACT_OK);

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
  CHECK(VerdictForArp(second) == TC_ACT_REDIRECT);
  const std::string after = fx.Filters();
  INFO(after);
  CHECK(after.find("handle 0x6e71") != std::string::npos);
  CHECK(after.find("handle 0x6e71") == after.rfind("handle 0x6e71"));  // exactly one
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
  CHECK(fx.Filters().find("netqos_ingress") == std::string::npos);
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
