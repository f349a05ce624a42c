// A leaf's burst: the size of its HTB token buckets. Its QoS level's (--qos-level-burst), or its
// pod's netqos.io/burst annotation within what the tenant policy allows (tenant_rules.h); neither:
// the default bucket, what the rate earns in 1 ms plus one packet (shaping::DefaultBucketBytes).
// Pure (no I/O). What a bucket does
// and what a small one costs: docs/enforcement.md, "The bandwidth model".
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "core/types.h"
#include "shaping/htb_plan.h"

namespace netqos::enforce {

// The pod annotation whose value overrides the QoS level's burst for the pod's leaves.
inline constexpr char kBurstAnnotation[] = "netqos.io/burst";

// Burst of each QoS level (shaping::QosLevel order), bytes; 0 = the default bucket.
using LevelBurst = std::array<uint32_t, shaping::kQosLevelCount>;

// A burst: "auto" (the default bucket: 0), or a byte size in Kubernetes' quantity grammar
// ("1600", "64Ki", "1M", "1.5Mi"), rounded up to a byte, within
// shaping::kMinBurstBytes..kMaxBurstBytes (one packet .. 1 GiB).
Result<uint32_t> ParseBurst(std::string_view text);

// "1600 bytes", "65536 bytes", "auto (1 ms at the rate + 1600 bytes)": for logs and messages.
std::string BurstText(uint32_t burst_bytes);

// Applies --qos-level-burst items "<level>=<burst>" (level: one of shaping::kQosLevelSpellings)
// to *out. Errors name the flag (`flag`) and the item; a level given twice is an error.
Status ParseLevelBurstItems(const std::vector<std::string>& items, const char* flag,
                            LevelBurst* out);

// A pod's netqos.io/burst, read once per pod. What it may be (the tenant policy's bound, else the
// level's burst) is tenant_rules.h's RuleBurst.
struct PodBurst {
  std::optional<uint32_t> bytes;  // the annotation's burst (0 = auto); nullopt: absent or refused
  std::string error;              // non-empty: not a burst, why
};

PodBurst ReadPodBurst(const core::StringMap& annotations);

}  // namespace netqos::enforce
