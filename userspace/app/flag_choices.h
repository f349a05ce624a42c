// The closed-choice flags of netqosd: each one's enum and the spellings it accepts, in one place.
// A flag's text is parsed once, when the flags are read (ParseDaemonFlags), so no later code
// compares strings; ChoiceName gives the spelling back for --print-config and the logs.
//
// The enums a lower layer owns and spells (shaping mode, cgroup driver, checkpoint layout, QoS
// level) use that layer's table (common/named_enum.h). The checkpoint durability (service/) has
// no spelling below the app: --checkpoint-mode's are here.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "app/daemon_config.h"
#include "app/logging.h"
#include "cgroup/cgroup_paths.h"
#include "checkpoint/katalyst_checksum.h"
#include "common/named_enum.h"
#include "common/status.h"
#include "core/constants.h"
#include "service/allocation_service.h"
#include "shaping/htb_plan.h"
#include "shaping/shaping_mode.h"

namespace netqos::app {

// `text` as one of `choices`; anything else is InvalidArgument naming the flag, the accepted
// spellings and the text: "--log-format must be text or json, got \"xml\"".
template <typename E, size_t N>
Result<E> ParseChoice(std::string_view flag, std::string_view text, const Choices<E, N>& choices) {
  if (auto value = FindChoice(text, choices)) return *value;
  return InvalidArgument(std::string(flag) + " must be " + ChoiceList(choices) + ", got \"" +
                         std::string(text) + "\"");
}

// --network-resource-plugin-policy: Katalyst's network plugin has the static policy only.
inline constexpr Choices<NetworkPolicy, 1> kPolicyChoices{{
    {core::kPolicyName, NetworkPolicy::kStatic},
}};

// --cgroup-type and --cgroup-driver (Katalyst's spellings).
inline constexpr const auto& kCgroupDriverChoices = cgroup::kCgroupDriverNames;

inline constexpr Choices<NicSelection, 3> kNicSelectionChoices{{
    {"random", NicSelection::kRandom},
    {"first", NicSelection::kFirst},
    {"last", NicSelection::kLast},
}};

// spdlog's level names, without its aliases ("warning", "err").
inline constexpr Choices<LogLevel, 7> kLogLevelChoices{{
    {"trace", LogLevel::kTrace},
    {"debug", LogLevel::kDebug},
    {"info", LogLevel::kInfo},
    {"warn", LogLevel::kWarn},
    {"error", LogLevel::kError},
    {"critical", LogLevel::kCritical},
    {"off", LogLevel::kOff},
}};

inline constexpr Choices<LogFormat, 2> kLogFormatChoices{{
    {"text", LogFormat::kText},
    {"json", LogFormat::kJson},
}};

// --checkpoint-mode: how a change is made durable.
inline constexpr Choices<service::AllocationService::Durability, 2> kCheckpointModeChoices{{
    {"journal", service::AllocationService::Durability::kJournal},
    {"full-rewrite", service::AllocationService::Durability::kFullRewrite},
}};

// --katalyst-checkpoint-layout (checkpoint::KatalystLayoutFlagValue's spellings).
inline constexpr const auto& kKatalystLayoutChoices = checkpoint::kKatalystLayoutNames;

inline constexpr Choices<Enforcement, 2> kEnforcementChoices{{
    {"bpf", Enforcement::kBpf},
    {"none", Enforcement::kNone},
}};

inline constexpr Choices<PodSourceKind, 2> kPodSourceChoices{{
    {"cri", PodSourceKind::kCri},
    {"kubelet", PodSourceKind::kKubelet},
}};

inline constexpr Choices<NodeLocalTraffic, 2> kNodeLocalTrafficChoices{{
    {"exempt", NodeLocalTraffic::kExempt},
    {"shaped", NodeLocalTraffic::kShaped},
}};

// --shaping-mode (shaping::ShapingModeName's spellings).
inline constexpr const auto& kShapingModeChoices = shaping::kShapingModeNames;
// --container-ceil.
inline constexpr const auto& kContainerCeilChoices = shaping::kContainerCeilNames;

// --unclassified-qos-level: Katalyst's level names, and the short ones shaping::ParseQosLevel
// also takes.
inline constexpr const auto& kQosLevelChoices = shaping::kQosLevelSpellings;

}  // namespace netqos::app
