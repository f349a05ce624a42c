// KernelLinkShaper on a multi-queue NIC as production nodes have it (a 4-queue veth with the
// kernel's mq root and a qdisc per TX queue), against the real kernel: the mode it reports,
// refusing EDT where there is no fq without touching the NIC, HTB replacing mq only when told, and
// --uninstall (RemoveInstalledLinks) giving the NIC back its mq root and its queues' qdiscs
// with no clsact left. EDT itself needs sch_fq, which this VM lacks: tests/kernels/edt_test.sh
// proves it in the kernel lab.
#include <net/if.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "bpf/dataplane.h"
#include "bpf/nic_attach.h"
#include "core/types.h"
#include "enforce/kernel/kernel_link_shaper.h"
#include "shaping/htb_plan.h"
#include "shaping/netlink/qdisc_probe.h"
#include "shaping/netlink/queue_qdiscs.h"
#include "support/bpffs_fixture.h"
#include "support/cgroup_fixture.h"
#include "support/htb_planner.h"
#include "support/netns.h"

namespace {

using netqos::StatusCode;
using netqos::bpf::Dataplane;
using netqos::enforce::KernelLinkShaper;
using netqos::enforce::KernelLinkShaperOptions;
using netqos::enforce::LoadInstalledLinks;
using netqos::enforce::RemoveInstalledLinks;
using netqos::shaping::QueueQdiscs;
using netqos::shaping::ShapingMode;
using netqos::testing::HtbPlanner;
using netqos::testing::PrivateBpffs;
using netqos::testing::Sh;
using netqos::testing::ShOk;
using netqos::testing::ShOutput;
using netqos::testing::TestCgroup;
using netqos::testing::UniquePrefix;

// A 4-queue veth pair in the host namespace whose host end has an mq root (1:) and pfifo_fast
// under each queue; deleted on scope exit.
struct MultiQueueNic {
  std::string name = UniquePrefix() + "mq";
  int ifindex = 0;
  MultiQueueNic() {
    Sh("ip link add " + name + " numtxqueues 4 numrxqueues 4 type veth peer name " + name +
       "p numtxqueues 4 numrxqueues 4");
    Sh("ip link set " + name + " up");
    Sh("ip link set " + name + "p up");
    Sh("tc qdisc replace dev " + name + " root handle 1: mq");
    for (int q = 1; q <= 4; ++q) {
      Sh("tc qdisc replace dev " + name + " parent 1:" + std::to_string(q) + " pfifo_fast");
    }
    ifindex = static_cast<int>(::if_nametoindex(name.c_str()));
  }
  ~MultiQueueNic() { ShOk("ip link del " + name); }
  netqos::core::Nic Nic() const {
    netqos::core::Nic n;
    n.id = {"", name};
    n.ifindex = ifindex;
    n.speed_mbps = 1000;
    n.enabled = true;
    return n;
  }
  std::string Qdiscs() const { return ShOutput("tc qdisc show dev " + name); }
};

netqos::shaping::QueueLayout MustRead(int ifindex) {
  auto q = QueueQdiscs::Create();
  REQUIRE(q.ok());
  auto layout = q->Read(ifindex);
  INFO(layout.status().message());
  REQUIRE(layout.ok());
  return *layout;
}

}  // namespace

TEST_CASE("link shaper: the qdisc probe finds kinds the kernel has and not others",
          "[link_shaper]") {
  CHECK(netqos::shaping::ProbeQdiscKind("htb").available);
  const auto none = netqos::shaping::ProbeQdiscKind("nqnosuchqdisc");
  CHECK_FALSE(none.available);
  CHECK(none.reason == "sch_nqnosuchqdisc is not in this kernel");
  // The probe's namespace is gone with its thread: this one still has its own loopback only.
  CHECK(ShOutput("tc qdisc show dev lo").find("nqnosuchqdisc") == std::string::npos);
}

TEST_CASE(
    "link shaper: on a multi-queue NIC, edt without fq is refused untouched, htb replaces "
    "mq only when told, and uninstall puts mq and its queues' qdiscs back",
    "[link_shaper]") {
  PrivateBpffs bpffs;
  TestCgroup cg("netqos-modes-" + std::to_string(::getpid()));
  auto dp = Dataplane::Open({.pin_dir = bpffs.PinDir(), .cgroup_path = cg.Path()});
  INFO(dp.status().message());
  REQUIRE(dp.ok());
  MultiQueueNic nic;
  const auto before = MustRead(nic.ifindex);
  REQUIRE(before.root_kind == "mq");
  REQUIRE(before.queue_kinds == std::vector<std::string>(4, "pfifo_fast"));
  char tmpl[] = "/tmp/nq-links.XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string record = std::string(tmpl) + "/netqos-enforced-links.json";

  HtbPlanner planner(nic.name);
  auto plan = planner.Plan(1000, {});
  REQUIRE(plan.ok());
  auto iplan = planner.Plan(1000, {});
  REQUIRE(iplan.ok());
  iplan->nic = netqos::enforce::IfbNameFor(nic.ifindex);
  // The trees as --shape-idle-nics keeps them: installed with no container capped.
  plan->shapes = true;
  iplan->shapes = true;

  KernelLinkShaperOptions o;
  o.pin_dir = bpffs.PinDir();
  o.record_path = record;
  o.keep_forwarded_priority = false;

  SECTION("edt without fq: refused, naming why, and the NIC untouched") {
    o.mode = ShapingMode::kEdt;
    o.fq = {false, "test: no sch_fq"};
    KernelLinkShaper shaper(o);
    auto r = shaper.Apply(nic.Nic(), *plan, *iplan);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kFailedPrecondition);
    CHECK(r.status().message().find("test: no sch_fq") != std::string::npos);
    CHECK(MustRead(nic.ifindex) == before);
  }

  SECTION("auto without fq picks htb and says why; mq is a kernel default only when numbered so") {
    o.mode = ShapingMode::kAuto;
    o.fq = {false, "test: no sch_fq"};
    KernelLinkShaper shaper(o);
    // mq 1: was put there by someone: a foreign root.
    auto refused = shaper.Apply(nic.Nic(), *plan, *iplan);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().message().find("--replace-root-qdisc") != std::string::npos);
    CHECK(MustRead(nic.ifindex) == before);
  }

  SECTION("htb with --replace-root-qdisc, then uninstall restores mq + pfifo_fast, no clsact") {
    o.mode = ShapingMode::kAuto;
    o.fq = {false, "test: no sch_fq"};
    o.replace_root_qdisc = true;
    KernelLinkShaper shaper(o);
    auto mode = shaper.Apply(nic.Nic(), *plan, *iplan);
    INFO(mode.status().message());
    REQUIRE(mode.ok());
    CHECK(mode->mode == ShapingMode::kHtb);
    CHECK(mode->reason == "auto: 4 TX queues but no fq: test: no sch_fq");
    const auto shaped = MustRead(nic.ifindex);
    CHECK(shaped.root_kind == "htb");
    auto links = LoadInstalledLinks(record);
    REQUIRE(links.ok());
    REQUIRE(links->size() == 1);
    CHECK((*links)[0].mode == "htb");
    CHECK((*links)[0].before == before);
    // A second apply (the next pass) keeps what was recorded first.
    REQUIRE(shaper.Apply(nic.Nic(), *plan, *iplan).ok());
    CHECK((*LoadInstalledLinks(record))[0].before == before);

    REQUIRE(RemoveInstalledLinks(record, {}).ok());
    const auto after = MustRead(nic.ifindex);
    CHECK(after.root_kind == "mq");
    CHECK(after.queue_kinds == before.queue_kinds);
    const std::string qdiscs = nic.Qdiscs();
    INFO(qdiscs);
    CHECK(qdiscs.find("clsact") == std::string::npos);
    CHECK(qdiscs.find("htb") == std::string::npos);
  }
  (void)RemoveInstalledLinks(record, {});
  ShOk("rm -rf " + std::string(tmpl));
  (void)Dataplane::Uninstall(bpffs.PinDir());
}

TEST_CASE(
    "link shaper: an idle NIC keeps its own root and gets no IFB, its first cap brings both, "
    "and its last one gives the NIC back its qdiscs",
    "[link_shaper]") {
  PrivateBpffs bpffs;
  TestCgroup cg("netqos-idle-" + std::to_string(::getpid()));
  auto dp = Dataplane::Open({.pin_dir = bpffs.PinDir(), .cgroup_path = cg.Path()});
  INFO(dp.status().message());
  REQUIRE(dp.ok());
  MultiQueueNic nic;
  const auto before = MustRead(nic.ifindex);
  char tmpl[] = "/tmp/nq-links.XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string record = std::string(tmpl) + "/netqos-enforced-links.json";
  const std::string ifb = netqos::enforce::IfbNameFor(nic.ifindex);
  // Whatever a failed check leaves: the IFB outlives the NIC, the record its directory.
  struct Cleanup {
    std::string record, dir, pin_dir;
    ~Cleanup() {
      (void)RemoveInstalledLinks(record, {});
      ShOk("rm -rf " + dir);
      (void)Dataplane::Uninstall(pin_dir);
    }
  } cleanup{record, tmpl, bpffs.PinDir()};

  HtbPlanner planner(nic.name);
  netqos::shaping::ContainerAllocation leaf;
  leaf.key = 42;
  leaf.rate_bps = netqos::shaping::MbitToBits(100);
  auto idle = planner.Plan(1000, {});
  auto capped = planner.Plan(1000, {leaf});
  REQUIRE(idle.ok());
  REQUIRE(capped.ok());
  REQUIRE_FALSE(idle->shapes);
  REQUIRE(capped->shapes);
  auto idle_in = *idle;
  auto capped_in = *capped;
  idle_in.nic = capped_in.nic = ifb;

  KernelLinkShaperOptions o;
  o.pin_dir = bpffs.PinDir();
  o.record_path = record;
  o.keep_forwarded_priority = false;
  o.mode = ShapingMode::kHtb;
  o.replace_root_qdisc = true;  // the test NIC's mq 1: is numbered by hand, so foreign
  KernelLinkShaper shaper(o);

  // Idle: the NIC's own mq and queues, no IFB, nothing on its receive path; the send path's
  // program classifies all the same.
  REQUIRE(shaper.Apply(nic.Nic(), *idle, idle_in).ok());
  CHECK(MustRead(nic.ifindex) == before);
  CHECK_FALSE(ShOk("ip link show dev " + ifb));
  CHECK(ShOutput("tc filter show dev " + nic.name + " ingress").empty());
  auto egress = netqos::bpf::EgressAttached(nic.ifindex);
  REQUIRE(egress.ok());
  CHECK(*egress);

  // The first cap: HTB at the root, the IFB with the ingress tree and the program redirecting.
  auto shaped = shaper.Apply(nic.Nic(), *capped, capped_in);
  INFO(shaped.status().message());
  REQUIRE(shaped.ok());
  CHECK(MustRead(nic.ifindex).root_kind == "htb");
  CHECK(ShOk("ip link show dev " + ifb));
  auto ingress = netqos::bpf::IngressAttached(nic.ifindex);
  REQUIRE(ingress.ok());
  CHECK(*ingress);

  // The last cap gone: the NIC as it was, the IFB deleted, the receive path empty again.
  REQUIRE(shaper.Apply(nic.Nic(), *idle, idle_in).ok());
  const auto after = MustRead(nic.ifindex);
  CHECK(after.root_kind == "mq");
  CHECK(after.queue_kinds == before.queue_kinds);
  CHECK_FALSE(ShOk("ip link show dev " + ifb));
  ingress = netqos::bpf::IngressAttached(nic.ifindex);
  REQUIRE(ingress.ok());
  CHECK_FALSE(*ingress);

  REQUIRE(RemoveInstalledLinks(record, {}).ok());
  CHECK(nic.Qdiscs().find("clsact") == std::string::npos);
}
