// ResidualPods: allocations of pods the pod source stopped listing become due after the grace
// period, counted from the first pass that missed them.
#include "enforce/residual_pods.h"

#include <catch2/catch.hpp>

namespace netqos::enforce {
namespace {

using std::chrono::minutes;

TEST_CASE("residual pods: due only after the grace period, from the first pass that missed them") {
  ResidualPods r(minutes(5));
  const auto t0 = ResidualPods::Clock::time_point{} + minutes(100);
  auto first = r.Pass({"a", "b"}, {"b"}, t0);
  REQUIRE(first.size() == 1);
  CHECK(first[0].uid == "a");
  CHECK_FALSE(first[0].due);
  auto early = r.Pass({"a", "b"}, {"b"}, t0 + minutes(4));
  REQUIRE(early.size() == 1);
  CHECK_FALSE(early[0].due);
  CHECK(early[0].missing_for == minutes(4));
  auto late = r.Pass({"a", "b"}, {"b"}, t0 + minutes(5));
  REQUIRE(late.size() == 1);
  CHECK(late[0].due);
}

TEST_CASE("residual pods: a pod listed again, or without allocations, starts over") {
  ResidualPods r(minutes(5));
  const auto t0 = ResidualPods::Clock::time_point{} + minutes(100);
  r.Pass({"a"}, {}, t0);
  r.Pass({"a"}, {"a"}, t0 + minutes(1));  // listed again: forgotten
  auto again = r.Pass({"a"}, {}, t0 + minutes(6));
  REQUIRE(again.size() == 1);
  CHECK_FALSE(again[0].due);
  r.Pass({}, {}, t0 + minutes(7));  // removed by RemovePod meanwhile: forgotten
  auto back = r.Pass({"a"}, {}, t0 + minutes(20));
  REQUIRE(back.size() == 1);
  CHECK_FALSE(back[0].due);
}

}  // namespace
}  // namespace netqos::enforce
