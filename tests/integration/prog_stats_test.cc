// bpf/prog_stats.h against the kernel: a program run N times by BPF_PROG_TEST_RUN while a
// BpfStatsScope is held counts N runs and some time, and no more once the scope is gone; its
// translated size is its instruction count; the pinned cgroup link of the real Dataplane names the
// program the dataplane loaded, and an id no program has is NotFound. Root only.
#include "bpf/prog_stats.h"

#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "bpf/dataplane.h"
#include "bpf/pinned_maps.h"
#include "common/fd.h"
#include "support/bpf_test_run.h"
#include "support/bpffs_fixture.h"
#include "support/cgroup_fixture.h"

namespace {

using netqos::Fd;
using netqos::StatusCode;
using netqos::bpf::BpfStatsScope;
using netqos::bpf::ReadProgStats;

// "r0 = TC_ACT_OK; exit": a tc program of two instructions.
Fd LoadTwoInsnTcProgram() {
  const bpf_insn insns[] = {
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = TC_ACT_OK},
      {.code = BPF_JMP | BPF_EXIT, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0},
  };
  Fd fd(bpf_prog_load(BPF_PROG_TYPE_SCHED_CLS, "nq_stats_test", "GPL", insns, 2, nullptr));
  if (!fd) FAIL("bpf_prog_load: " << std::strerror(errno));
  return fd;
}

// Whether the sysctl kernel.bpf_stats_enabled is on (another tool's doing). It shows the sysctl
// only: an fd of BPF_ENABLE_STATS turns the stats on without showing there.
bool StatsOnSystemWide() {
  std::ifstream in("/proc/sys/kernel/bpf_stats_enabled");
  int v = 0;
  in >> v;
  return v != 0;
}

uint32_t TestRun(int prog_fd, uint32_t repeat) {
  const auto run = netqos::testing::RunSkbProgram(
      prog_fd, netqos::testing::Ipv4Packet(IPPROTO_UDP, 0x7f000001, 1, 0x7f000001, 9), 0, repeat);
  REQUIRE(run.err == 0);
  return run.retval;
}

}  // namespace

TEST_CASE("prog stats: N test runs with stats on count N runs and their time", "[bpf][stats]") {
  const Fd prog = LoadTwoInsnTcProgram();
  auto before = ReadProgStats(prog.get());
  REQUIRE(before.ok());
  CHECK(before->name == "nq_stats_test");
  CHECK(before->XlatedInsns() == 2);
  CHECK(before->run_cnt == 0);

  constexpr uint32_t kRuns = 1000;
  {
    auto scope = BpfStatsScope::Enable();
    INFO(scope.status().message());
    REQUIRE(scope.ok());
    CHECK(TestRun(prog.get(), kRuns) == TC_ACT_OK);
    auto after = ReadProgStats(prog.get());
    REQUIRE(after.ok());
    const auto d = after->Since(*before);
    CHECK(d.run_cnt == kRuns);
    CHECK(d.run_time_ns > 0);
    CHECK(d.NsPerRun() > 0);
    CHECK(d.id == before->id);
  }
  // The scope closed its fd: unless the sysctl keeps the stats on, runs are not counted now.
  if (StatsOnSystemWide()) {
    WARN("the sysctl kernel.bpf_stats_enabled is on: the off check is not made");
  } else {
    TestRun(prog.get(), 100);
    auto later = ReadProgStats(prog.get());
    REQUIRE(later.ok());
    CHECK(later->run_cnt == kRuns);
  }
}

TEST_CASE("prog stats: a pinned cgroup link names the dataplane's program", "[bpf][stats]") {
  netqos::testing::PrivateBpffs bpffs;
  netqos::testing::TestCgroup root("netqos-stats-" + std::to_string(::getpid()));
  auto dp = netqos::bpf::Dataplane::Open({.pin_dir = bpffs.PinDir(), .cgroup_path = root.Path()});
  INFO(dp.status().message());
  REQUIRE(dp.ok());

  // The bench finds the cgroup programs through the pinned links' state, as netqosctl does.
  const auto link = netqos::bpf::InspectPinDir(bpffs.PinDir()).egress_link;
  INFO(link.error);
  REQUIRE(link.present);
  REQUIRE(link.error.empty());
  auto by_fd = ReadProgStats((*dp)->EgressProgramFd());
  REQUIRE(by_fd.ok());
  CHECK(link.prog_id == by_fd->id);
  auto by_id = netqos::bpf::ReadProgStatsById(link.prog_id);
  REQUIRE(by_id.ok());
  CHECK(by_id->name == "netqos_egress");
  CHECK(by_id->XlatedInsns() > 10);

  auto gone = netqos::bpf::ReadProgStatsById(0xfffffff0u);  // no such program
  REQUIRE_FALSE(gone.ok());
  CHECK(gone.status().code() == StatusCode::kNotFound);
  dp->reset();
  REQUIRE(netqos::bpf::Dataplane::Uninstall(bpffs.PinDir()).ok());
}
