// ChangeRelay: allocation changes made while enforcement starts (after serving) reach the enforcer
// once it exists.
#include "app/enforcement_start.h"

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

namespace {

using netqos::app::ChangeRelay;
using Kind = ChangeRelay::Event::Kind;

void Record(std::vector<std::pair<Kind, std::string>>* seen, ChangeRelay& relay) {
  relay.Attach([seen](const ChangeRelay::Event& e) { seen->emplace_back(e.kind, e.pod_uid); });
}

}  // namespace

TEST_CASE("change relay: changes made before the enforcer exists are replayed, the last per pod") {
  ChangeRelay relay;
  relay.Deliver({Kind::kAllocated, "a"});
  relay.Deliver({Kind::kAllocated, "b"});
  relay.Deliver({Kind::kPodRemoved, "b"});  // removed while starting: its tombstone is replayed
  relay.Deliver({Kind::kPodRemoved, "c"});
  relay.Deliver({Kind::kAllocated, "c"});  // re-allocated after its RemovePod
  relay.Deliver({Kind::kTopology, ""});
  CHECK(relay.Pending() == 4);

  std::vector<std::pair<Kind, std::string>> seen;
  Record(&seen, relay);
  const std::vector<std::pair<Kind, std::string>> want = {{Kind::kTopology, ""},
                                                          {Kind::kAllocated, "a"},
                                                          {Kind::kPodRemoved, "b"},
                                                          {Kind::kAllocated, "c"}};
  CHECK(seen == want);
  CHECK(relay.Pending() == 0);

  // Once attached, a change goes straight through.
  relay.Deliver({Kind::kAllocated, "d"});
  REQUIRE(seen.size() == 5);
  CHECK(seen.back() == std::pair<Kind, std::string>{Kind::kAllocated, "d"});
  CHECK(relay.Pending() == 0);
}

TEST_CASE("change relay: nothing is kept once enforcement failed to start") {
  ChangeRelay relay;
  relay.Deliver({Kind::kAllocated, "a"});
  relay.Discard();
  CHECK(relay.Pending() == 0);
  relay.Deliver({Kind::kAllocated, "b"});
  relay.Deliver({Kind::kTopology, ""});
  CHECK(relay.Pending() == 0);
}
