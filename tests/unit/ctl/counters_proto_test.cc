// The counters as the admin API's messages (render/counters_proto.h), which the daemon writes and
// netqosctl reads, and as netqosctl's JSON: both driven by the field lists of common/counters.h,
// so these check that the lists and the messages agree field for field.
#include "render/counters_proto.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "ctl/class_rows.h"
#include "support/distinct_counters.h"

namespace netqos {
namespace {

using google::protobuf::FieldDescriptor;
using testing::DistinctCounters;

// Every name of the list is a uint64 field of the message, and the message has no other field
// (a proto field without its member would never be filled).
template <typename Counters, typename Message>
void CheckMessageHasExactlyTheListedFields() {
  const auto* descriptor = Message::descriptor();
  std::set<std::string> listed;
  for (const auto& f : CounterFields<Counters>::kAll) {
    INFO("field " << f.name);
    listed.insert(std::string(f.name));
    const FieldDescriptor* field = descriptor->FindFieldByName(std::string(f.name));
    REQUIRE(field != nullptr);
    CHECK(field->cpp_type() == FieldDescriptor::CPPTYPE_UINT64);
    CHECK_FALSE(field->is_repeated());
  }
  for (int i = 0; i < descriptor->field_count(); ++i) {
    INFO("message field " << descriptor->field(i)->name());
    CHECK(listed.count(descriptor->field(i)->name()) == 1);
  }
}

// A struct with a value of its own in every field comes back unchanged, and each message field
// holds the value of the member of its name.
template <typename Counters, typename Message>
void CheckRoundTrip() {
  const Counters c = DistinctCounters<Counters>();
  Message m;
  render::CountersToProto(c, &m);
  for (const auto& f : CounterFields<Counters>::kAll) {
    INFO("field " << f.name);
    const FieldDescriptor* field = Message::descriptor()->FindFieldByName(std::string(f.name));
    REQUIRE(field != nullptr);
    CHECK(m.GetReflection()->GetUInt64(m, field) == c.*f.member);
  }
  CHECK(render::CountersFromProto(m) == c);
}

// netqosctl's JSON has one key per field, named as in the list, with the member's value.
template <typename Counters>
void CheckJson() {
  const Counters c = DistinctCounters<Counters>();
  const nlohmann::json j = ctl::CountersJson(c);
  CHECK(j.size() == CounterFields<Counters>::kAll.size());
  for (const auto& f : CounterFields<Counters>::kAll) {
    INFO("field " << f.name);
    CHECK(j.at(std::string(f.name)) == c.*f.member);
  }
}

}  // namespace

TEST_CASE("counters proto: each message has exactly the fields of its struct's list") {
  SECTION("traffic") {
    CheckMessageHasExactlyTheListedFields<TrafficCounters, admin::v1::TrafficCounters>();
  }
  SECTION("queue") {
    CheckMessageHasExactlyTheListedFields<QueueCounters, admin::v1::QueueCounters>();
  }
}

TEST_CASE("counters proto: distinct values in every field survive struct to message and back") {
  SECTION("traffic") { CheckRoundTrip<TrafficCounters, admin::v1::TrafficCounters>(); }
  SECTION("queue") { CheckRoundTrip<QueueCounters, admin::v1::QueueCounters>(); }
}

// The wire's names are an API: the member each existing field comes from, spelled out.
TEST_CASE("counters proto: the existing fields carry the members of their names") {
  admin::v1::TrafficCounters t;
  render::CountersToProto(
      TrafficCounters{.tx_bytes = 1, .tx_packets = 2, .rx_bytes = 3, .rx_packets = 4, .drops = 5},
      &t);
  CHECK(t.tx_bytes() == 1);
  CHECK(t.tx_packets() == 2);
  CHECK(t.rx_bytes() == 3);
  CHECK(t.rx_packets() == 4);
  CHECK(t.drops() == 5);
  admin::v1::QueueCounters q;
  render::CountersToProto(QueueCounters{.bytes = 1,
                                        .packets = 2,
                                        .drops = 3,
                                        .overlimits = 4,
                                        .backlog_bytes = 5,
                                        .backlog_packets = 6},
                          &q);
  CHECK(q.bytes() == 1);
  CHECK(q.packets() == 2);
  CHECK(q.drops() == 3);
  CHECK(q.overlimits() == 4);
  CHECK(q.backlog_bytes() == 5);
  CHECK(q.backlog_packets() == 6);
}

TEST_CASE("counters json: netqosctl prints every field under its name") {
  SECTION("traffic") { CheckJson<TrafficCounters>(); }
  SECTION("queue") { CheckJson<QueueCounters>(); }
}

}  // namespace netqos
