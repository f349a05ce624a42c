// The counters' field lists: every member once, in declaration order, which is what lets sums,
// the admin API message and netqosctl's JSON be written once for all fields.
#include "common/counters.h"

#include <catch2/catch.hpp>
#include <cstddef>
#include <set>
#include <string>

#include "support/distinct_counters.h"

namespace netqos {
namespace {

using testing::DistinctCounters;

// Byte offset of each listed member. With the static_assert that the list has as many entries as
// the struct has uint64_t members, offsets 0, 8, 16, ... mean each member is listed once, in
// declaration order.
template <typename Counters>
void CheckListsEveryMemberInOrder() {
  const Counters c;
  const auto* base = reinterpret_cast<const char*>(&c);
  size_t i = 0;
  std::set<std::string> names;
  for (const auto& f : CounterFields<Counters>::kAll) {
    INFO("field " << f.name);
    CHECK(reinterpret_cast<const char*>(&(c.*f.member)) - base ==
          static_cast<ptrdiff_t>(i * sizeof(uint64_t)));
    CHECK_FALSE(f.name.empty());
    CHECK(names.insert(std::string(f.name)).second);
    ++i;
  }
  CHECK(i * sizeof(uint64_t) == sizeof(Counters));
}

template <typename Counters>
void CheckAddSumsEveryField() {
  Counters sum = DistinctCounters<Counters>(1000);
  AddCounters(sum, DistinctCounters<Counters>(2000));
  uint64_t i = 0;
  for (const auto& f : CounterFields<Counters>::kAll) {
    ++i;
    INFO("field " << f.name);
    CHECK(sum.*f.member == (1000 + i) + (2000 + i));
  }
}

// The defaulted comparison sees every member: changing any one of them makes a difference.
template <typename Counters>
void CheckEqualityComparesEveryField() {
  const Counters a = DistinctCounters<Counters>();
  CHECK(a == DistinctCounters<Counters>());
  for (const auto& f : CounterFields<Counters>::kAll) {
    INFO("field " << f.name);
    Counters b = a;
    b.*f.member += 1;
    CHECK_FALSE(a == b);
  }
}

}  // namespace

TEST_CASE("counters: the field list names every member once, in declaration order") {
  SECTION("traffic") { CheckListsEveryMemberInOrder<TrafficCounters>(); }
  SECTION("queue") { CheckListsEveryMemberInOrder<QueueCounters>(); }
}

TEST_CASE("counters: AddCounters sums every field") {
  SECTION("traffic") { CheckAddSumsEveryField<TrafficCounters>(); }
  SECTION("queue") { CheckAddSumsEveryField<QueueCounters>(); }
}

TEST_CASE("counters: equality compares every field") {
  SECTION("traffic") { CheckEqualityComparesEveryField<TrafficCounters>(); }
  SECTION("queue") { CheckEqualityComparesEveryField<QueueCounters>(); }
}

}  // namespace netqos
