// The four Katalyst QoS levels: one enum and one spelling table for every layer that names a
// level (shaping's classes, the enforcer's class entries, netqosd's flags and views, netqosctl).
// The BPF programs number them the same way (enum netqos_qos_level in bpf/netqos_abi.h), which
// enforce/kernel/bpf_class_table.cc asserts where the class entries are written.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/named_enum.h"
#include "common/status.h"

namespace netqos {

// In HTB-priority order; the numbers are the class map's (a class entry's qos_level byte).
enum class QosLevel : int { kSystem = 0, kDedicated = 1, kShared = 2, kReclaimed = 3 };
inline constexpr int kQosLevelCount = 4;

// Katalyst's level names, then the short ones: what --unclassified-qos-level and
// --qos-level-shaping accept. The first kQosLevelCount entries are the levels in order.
inline constexpr Choices<QosLevel, 8> kQosLevelSpellings{{
    {"system_cores", QosLevel::kSystem},
    {"dedicated_cores", QosLevel::kDedicated},
    {"shared_cores", QosLevel::kShared},
    {"reclaimed_cores", QosLevel::kReclaimed},
    {"system", QosLevel::kSystem},
    {"dedicated", QosLevel::kDedicated},
    {"shared", QosLevel::kShared},
    {"reclaimed", QosLevel::kReclaimed},
}};

// The short name: "system", "shared", ... (HTB class names, log fields).
const char* QosLevelName(QosLevel level);
// Katalyst's name ("shared_cores") of a class entry's level byte; "unknown" for any other byte
// (an entry a newer or damaged writer left).
std::string_view KatalystLevelName(uint8_t level);
// One of kQosLevelSpellings → level; InvalidArgument naming the text otherwise.
Result<QosLevel> ParseQosLevel(const std::string& name);

}  // namespace netqos
