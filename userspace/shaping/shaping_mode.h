// How a NIC's sent traffic is held to the containers' caps (--shaping-mode), and the pure choice
// of mode for one NIC from what it and the kernel offer. See docs/enforcement.md for what each
// mode keeps and gives up.
//   htb: one HTB tree at the NIC's root, a leaf per capped container; QoS levels borrow and
//        take priority. Every packet the node sends passes the tree's one lock.
//   edt: the NIC keeps its multi-queue root (mq) with fq under each TX queue; the NIC's egress
//        program gives each capped container's packets departure times, and fq holds them until
//        then. No shared lock; per-container caps only (no level borrowing or aggregate caps).
//   auto: edt where the NIC has more than one TX queue and the kernel has sch_fq, htb otherwise,
//        and htb wherever the operator asked for something only htb provides (HtbOnlyFeatures).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/named_enum.h"
#include "common/status.h"
#include "shaping/htb_plan.h"

namespace netqos::shaping {

enum class ShapingMode { kAuto, kHtb, kEdt };

inline constexpr Choices<ShapingMode, 3> kShapingModeNames{{
    {"auto", ShapingMode::kAuto},
    {"htb", ShapingMode::kHtb},
    {"edt", ShapingMode::kEdt},
}};

const char* ShapingModeName(ShapingMode mode);  // from kShapingModeNames

// What the operator's configuration asks for that only htb does, by the flag that asks for it
// (a closed set: these are status and metric label values): level guarantees, ceilings and
// priorities other than the defaults (--qos-level-shaping), borrowing (--container-ceil=level),
// the low-priority group's ceiling on egress (--low-priority-groups), and egress buckets
// (--qos-level-burst). EDT paces each container at one rate, with no class to borrow from or
// queue in. Empty when nothing of that is asked for.
std::vector<std::string> HtbOnlyFeatures(const ShapingConfig& config);

// What the choice depends on.
struct NicQueueFacts {
  int tx_queues = 1;
  bool fq_available = false;
  std::string fq_missing_reason;  // why not, when !fq_available ("sch_fq: Unknown qdisc", ...)
};

// Why a NIC got its mode, as a closed set (the netqos_enforcement_shaping_mode metric's `reason`
// label; a label value must not be free text such as a probe's error).
enum class ShapingReason { kFlag, kSingleTxQueue, kNoFq, kTxQueuesAndFq, kHtbOnlyFeatures };

inline constexpr Choices<ShapingReason, 5> kShapingReasonNames{{
    {"flag", ShapingReason::kFlag},                          // --shaping-mode=htb|edt
    {"single_tx_queue", ShapingReason::kSingleTxQueue},      // auto: htb, one TX queue
    {"no_fq", ShapingReason::kNoFq},                         // auto: htb, the kernel lacks sch_fq
    {"tx_queues_and_fq", ShapingReason::kTxQueuesAndFq},     // auto: edt
    {"htb_only_features", ShapingReason::kHtbOnlyFeatures},  // auto: htb, a flag asks for it
}};

const char* ShapingReasonName(ShapingReason why);  // from kShapingReasonNames

struct ModeChoice {
  ShapingMode mode = ShapingMode::kHtb;      // never kAuto
  std::string reason;                        // for status and the log: why this mode on this NIC
  ShapingReason why = ShapingReason::kFlag;  // the same as a closed set, for metrics
  // What the operator asked for that this NIC does not do in its mode (an HtbOnlyFeatures entry
  // on an edt NIC): reported per NIC, so that nothing requested is dropped silently.
  std::vector<std::string> inactive;
  bool operator==(const ModeChoice&) const = default;
};

// The mode for one NIC. `htb_only` lists what the operator asked for that only htb provides (see
// HtbOnlyFeatures); auto then picks htb and names them, an explicit edt keeps edt and lists them
// as inactive. An explicit edt without sch_fq is FailedPrecondition (the NIC is then reported and
// left unshaped rather than silently shaped another way than asked).
Result<ModeChoice> ChooseShapingMode(ShapingMode requested, const NicQueueFacts& facts,
                                     const std::vector<std::string>& htb_only = {});

}  // namespace netqos::shaping
