#include "render/counters_proto.h"

#include <array>
#include <cstddef>
#include <string>

namespace netqos::render {
namespace admin = ::netqos::admin::v1;
namespace {

using google::protobuf::FieldDescriptor;

template <typename Counters>
constexpr size_t kFieldCount = CounterFields<Counters>::kAll.size();

// The message's field for each entry of the struct's list, in its order, looked up once. A name
// the message lacks is null and skipped (tests/unit/ctl/counters_proto_test.cc fails on it).
template <typename Counters, typename Message>
const std::array<const FieldDescriptor*, kFieldCount<Counters>>& MessageFields() {
  static const auto fields = [] {
    std::array<const FieldDescriptor*, kFieldCount<Counters>> out{};
    for (size_t i = 0; i < out.size(); ++i) {
      out[i] = Message::descriptor()->FindFieldByName(
          std::string(CounterFields<Counters>::kAll[i].name));
    }
    return out;
  }();
  return fields;
}

template <typename Counters, typename Message>
void ToMessage(const Counters& c, Message* out) {
  const auto& fields = MessageFields<Counters, Message>();
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i] == nullptr) continue;
    out->GetReflection()->SetUInt64(out, fields[i], c.*CounterFields<Counters>::kAll[i].member);
  }
}

template <typename Counters, typename Message>
Counters FromMessage(const Message& m) {
  Counters c;
  const auto& fields = MessageFields<Counters, Message>();
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i] == nullptr) continue;
    c.*CounterFields<Counters>::kAll[i].member = m.GetReflection()->GetUInt64(m, fields[i]);
  }
  return c;
}

}  // namespace

void CountersToProto(const TrafficCounters& c, admin::TrafficCounters* out) { ToMessage(c, out); }
void CountersToProto(const QueueCounters& c, admin::QueueCounters* out) { ToMessage(c, out); }

TrafficCounters CountersFromProto(const admin::TrafficCounters& m) {
  return FromMessage<TrafficCounters>(m);
}
QueueCounters CountersFromProto(const admin::QueueCounters& m) {
  return FromMessage<QueueCounters>(m);
}

}  // namespace netqos::render
