// QoS level resolution and request annotation/label filtering: what every hint and
// allocation request goes through before any NIC rule reads it.
#pragma once

#include <set>
#include <string>

#include "common/status.h"
#include "core/config.h"
#include "core/types.h"

namespace netqos::core {

// The four QoS levels, in the fixed order in which selectors are evaluated.
const std::set<std::string>& QosLevels();

// Resolves the QoS level from pod annotations: a level matches when one of its selector pairs
// is present with an equal value. Any level with both equal and different selector values is a
// conflict; a shared_cores selector present with another value and no match is an error;
// nothing identified means shared_cores.
Result<std::string> ResolveQosLevel(const QosConfig& config, const StringMap& annotations);

// Keeps only keys that appear in some QoS selector (by default just the qos_level key).
StringMap FilterQosMap(const QosConfig& config, const StringMap& m);

// Flattens the cpu, memory and network enhancement annotations (in that order, later keys
// overriding earlier ones), then fills configured defaults. Malformed cpu/memory JSON
// contributes nothing and non-string values there are dropped, as upstream does; the network
// enhancement is validated strictly (its values steer NIC selection).
Result<StringMap> FlattenQosEnhancements(const QosConfig& config, const StringMap& annotations);

struct FilteredRequest {
  std::string qos_level;
  StringMap labels;       // selector keys + kept label keys, qos_level included
  StringMap annotations;  // selector keys + flattened enhancements + kept annotation keys
};

// The request's whole pre-processing (QoS level, its labels and annotations), plus validation of
// the flattened network keys
// (namespace_type and topology_affinity_restricted).
Result<FilteredRequest> FilterRequest(const QosConfig& config, const StringMap& labels,
                                      const StringMap& annotations);

}  // namespace netqos::core
