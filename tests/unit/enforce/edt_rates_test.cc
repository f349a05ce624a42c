// PlanEdtRates: what the EDT map should hold, from the egress leaves of the NICs in EDT mode.
#include "enforce/edt_rates.h"

#include <catch2/catch.hpp>

namespace {

using netqos::core::NicId;
using netqos::enforce::PlanEdtRates;
using netqos::shaping::ContainerAllocation;
using netqos::shaping::kQdiscMajor;
using netqos::shaping::MakeHandle;
using netqos::shaping::QosLevel;

const NicId kEdt{"", "eth0"};
const NicId kHtb{"", "eth1"};

}  // namespace

TEST_CASE("EDT rates: keyed by leaf handle, paced at a cap of the leaf's own, else its guarantee",
          "[enforce]") {
  // key, level, rate, ceil (0: hard cap, or the level's when borrowing), borrow, minor
  const std::vector<ContainerAllocation> leaves = {
      {11, QosLevel::kShared, 100'000'000, 100'000'000, false, 0x100},  // an allocation
      {12, QosLevel::kShared, 1'000'000, 20'000'000, false, 0x101},     // annotation only
      {13, QosLevel::kShared, 50'000'000, 0, true, 0x102},              // borrows under HTB
      {14, QosLevel::kShared, 1'500'001, 0, false, 0x103},              // odd bits: rounded up
  };
  const auto want = PlanEdtRates({{kEdt, leaves}, {kHtb, leaves}}, {kEdt});
  CHECK(want == std::map<uint64_t, uint64_t>{
                    {MakeHandle(kQdiscMajor, 0x100), 12'500'000},
                    {MakeHandle(kQdiscMajor, 0x101), 2'500'000},
                    {MakeHandle(kQdiscMajor, 0x102), 6'250'000},
                    {MakeHandle(kQdiscMajor, 0x103), 187'501},
                });
  // A NIC in HTB mode has no pacing.
  CHECK(PlanEdtRates({{kHtb, leaves}}, {kEdt}).empty());
}
