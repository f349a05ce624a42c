#include "common/qos_level.h"

namespace netqos {

static_assert(kQosLevelSpellings[0].value == QosLevel::kSystem &&
                  kQosLevelSpellings[1].value == QosLevel::kDedicated &&
                  kQosLevelSpellings[2].value == QosLevel::kShared &&
                  kQosLevelSpellings[3].value == QosLevel::kReclaimed &&
                  kQosLevelSpellings[4].value == QosLevel::kSystem &&
                  kQosLevelSpellings[7].value == QosLevel::kReclaimed,
              "the names index the table by level: Katalyst's first, then the short ones");

const char* QosLevelName(QosLevel level) {
  const auto i = static_cast<size_t>(level);
  if (i >= kQosLevelCount) return "unknown";
  return kQosLevelSpellings[kQosLevelCount + i].name.data();
}

std::string_view KatalystLevelName(uint8_t level) {
  if (level >= kQosLevelCount) return "unknown";
  return kQosLevelSpellings[level].name;
}

Result<QosLevel> ParseQosLevel(const std::string& name) {
  if (auto level = FindChoice(name, kQosLevelSpellings)) return *level;
  return InvalidArgument("unknown QoS level \"" + name + "\"");
}

}  // namespace netqos
