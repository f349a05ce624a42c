// The QoS levels' HTB classes on each shaped NIC as metric families: the rate and ceiling each
// level class was applied with, and what passed through it, by direction. A level class is the
// parent of the level's container leaves and default leaf, so its counters are the level's whole
// traffic on that NIC, as the qdisc counts it (frames, link-layer header included).
#pragma once

#include <vector>

#include "metrics/exposition.h"
#include "service/enforcement_view.h"

namespace netqos::metrics {

// netqos_qos_level_class_bytes_per_second{bound}, and netqos_qos_level_class_bytes_total,
// _packets_total, _overlimits_total (only for the classes that were read).
void CollectQosLevels(const service::EnforcementReport& report, std::vector<Family>* out);

}  // namespace netqos::metrics
