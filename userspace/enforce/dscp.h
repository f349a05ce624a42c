// DSCP marking: which DS field codepoint a container's packets leave the enforced NICs with. Its
// QoS level's value (--qos-level-dscp), or its pod's netqos.io/dscp annotation where the tenant
// policy lists the value (tenant_rules.h); none of either: --dscp-default's, else the DS field is
// left alone. Pure (no I/O).
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

// The pod annotation whose value overrides the QoS level's DSCP for the pod's containers.
inline constexpr char kDscpAnnotation[] = "netqos.io/dscp";

// The DS field's codepoint is 6 bits.
inline constexpr uint8_t kMaxDscp = 63;

// DSCP of each QoS level (shaping::QosLevel order); nullopt = not marked.
using LevelDscp = std::array<std::optional<uint8_t>, shaping::kQosLevelCount>;

// A DSCP value: a decimal number 0..63 (digits only), or a standard name, case-insensitive: EF
// (46), CS0..CS7 (8 x n), AF11..AF43 (AFxy = 8 x x + 2 x y, x 1..4, y 1..3).
Result<uint8_t> ParseDscp(std::string_view text);

// "46 (EF)", "0 (CS0)", "5": for logs and netqosctl.
std::string DscpText(uint8_t dscp);

// Applies --qos-level-dscp items "<level>=<dscp>" (level: one of shaping::kQosLevelSpellings) to
// *out. Errors name the flag (`flag`) and the item; a level given twice is an error.
Status ParseLevelDscpItems(const std::vector<std::string>& items, const char* flag, LevelDscp* out);

// --dscp-default: the DSCP of packets no QoS level or pod marks. auto: CS0 when some level is
// marked (the fabric honours DSCP, so no sender may choose its own), else keep; keep: the
// sender's stays; or a DSCP.
struct DscpDefault {
  enum class Kind : uint8_t { kAuto, kKeep, kDscp };
  Kind kind = Kind::kAuto;
  uint8_t dscp = 0;  // kDscp only
  bool operator==(const DscpDefault&) const = default;
};

// "auto", "keep" or what ParseDscp reads. Errors name `flag` and the value (its first 64
// characters).
Result<DscpDefault> ParseDscpDefault(std::string_view text, const char* flag);

}  // namespace netqos::enforce
