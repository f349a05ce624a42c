// The shared counters (common/counters.h) as the admin API's messages of the same names, both
// ways, shared by netqosd's admin service and netqosctl. Driven by the structs' field lists
// through the messages' reflection, so a counter needs no line here: only a field of the same
// name in proto/netqos/admin/v1/admin.proto (tests/unit/ctl/counters_proto_test.cc checks that
// the two agree).
#pragma once

#include "common/counters.h"
#include "netqos/admin/v1/admin.pb.h"

namespace netqos::render {

void CountersToProto(const TrafficCounters& c, ::netqos::admin::v1::TrafficCounters* out);
void CountersToProto(const QueueCounters& c, ::netqos::admin::v1::QueueCounters* out);

TrafficCounters CountersFromProto(const ::netqos::admin::v1::TrafficCounters& m);
QueueCounters CountersFromProto(const ::netqos::admin::v1::QueueCounters& m);

}  // namespace netqos::render
