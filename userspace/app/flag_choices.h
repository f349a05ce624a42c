// The closed-choice flags of netqosd: each one's enum and the spellings it accepts, in one place.
// A flag's text is parsed once, when the flags are read (ParseDaemonFlags), so no later code
// compares strings; ChoiceName gives the spelling back for --print-config and the logs.
//
// The tables of enums that a lower layer owns and spells (shaping mode, cgroup driver, checkpoint
// layout, QoS level) repeat that layer's spellings so that they can be constexpr;
// tests/unit/app/flag_choices_test.cc checks that they agree with the layer's own parsers. The
// checkpoint durability (service/) has no spelling below the app: --checkpoint-mode's are here.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "app/daemon_config.h"
#include "app/logging.h"
#include "cgroup/cgroup_paths.h"
#include "checkpoint/katalyst_checksum.h"
#include "common/status.h"
#include "core/constants.h"
#include "service/allocation_service.h"
#include "shaping/htb_plan.h"
#include "shaping/shaping_mode.h"

namespace netqos::app {

template <typename E>
struct Choice {
  std::string_view name;
  E value;
};

template <typename E, size_t N>
using Choices = std::array<Choice<E>, N>;

// The accepted spellings, for messages: "a or b", "a, b or c".
template <typename E, size_t N>
std::string ChoiceList(const Choices<E, N>& choices) {
  std::string out;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) out += i + 1 == N ? " or " : ", ";
    out += choices[i].name;
  }
  return out;
}

// `text` as one of `choices`; anything else is InvalidArgument naming the flag, the accepted
// spellings and the text: "--log-format must be text or json, got \"xml\"".
template <typename E, size_t N>
Result<E> ParseChoice(std::string_view flag, std::string_view text, const Choices<E, N>& choices) {
  for (const auto& c : choices) {
    if (c.name == text) return c.value;
  }
  return InvalidArgument(std::string(flag) + " must be " + ChoiceList(choices) + ", got \"" +
                         std::string(text) + "\"");
}

// The spelling of `value`: the first listed, so a value with aliases shows its long name.
template <typename E, size_t N>
std::string_view ChoiceName(E value, const Choices<E, N>& choices) {
  for (const auto& c : choices) {
    if (c.value == value) return c.name;
  }
  return "?";  // unreachable while every enumerator has a spelling (flag_choices_test)
}

// --network-resource-plugin-policy: Katalyst's network plugin has the static policy only.
inline constexpr Choices<NetworkPolicy, 1> kPolicyChoices{{
    {core::kPolicyName, NetworkPolicy::kStatic},
}};

// --cgroup-type and --cgroup-driver (Katalyst's spellings).
inline constexpr Choices<cgroup::CgroupDriver, 2> kCgroupDriverChoices{{
    {"cgroupfs", cgroup::CgroupDriver::kCgroupfs},
    {"systemd", cgroup::CgroupDriver::kSystemd},
}};

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
inline constexpr Choices<checkpoint::KatalystLayout, 2> kKatalystLayoutChoices{{
    {"v0.5.3", checkpoint::KatalystLayout::kV053},
    {"head", checkpoint::KatalystLayout::kHead},
}};

inline constexpr Choices<Enforcement, 2> kEnforcementChoices{{
    {"bpf", Enforcement::kBpf},
    {"none", Enforcement::kNone},
}};

inline constexpr Choices<PodSourceKind, 2> kPodSourceChoices{{
    {"cri", PodSourceKind::kCri},
    {"kubelet", PodSourceKind::kKubelet},
}};

// --shaping-mode (shaping::ShapingModeName's spellings).
inline constexpr Choices<shaping::ShapingMode, 3> kShapingModeChoices{{
    {"auto", shaping::ShapingMode::kAuto},
    {"htb", shaping::ShapingMode::kHtb},
    {"edt", shaping::ShapingMode::kEdt},
}};

// --unclassified-qos-level: Katalyst's level names, and the short ones shaping::ParseQosLevel
// also takes.
inline constexpr Choices<shaping::QosLevel, 8> kQosLevelChoices{{
    {core::kSystemCores, shaping::QosLevel::kSystem},
    {core::kDedicatedCores, shaping::QosLevel::kDedicated},
    {core::kSharedCores, shaping::QosLevel::kShared},
    {core::kReclaimedCores, shaping::QosLevel::kReclaimed},
    {"system", shaping::QosLevel::kSystem},
    {"dedicated", shaping::QosLevel::kDedicated},
    {"shared", shaping::QosLevel::kShared},
    {"reclaimed", shaping::QosLevel::kReclaimed},
}};

}  // namespace netqos::app
