// --qos-level-shaping and --unclassified-qos-level → the HTB hierarchy's per-QoS-level config.
#pragma once

#include "app/daemon_config.h"
#include "common/status.h"
#include "shaping/htb_plan.h"

namespace netqos::app {

// Starts from shaping::ShapingConfig's defaults and applies each --qos-level-shaping item
// "<level>=<rate_permille>:<ceil_permille>:<prio>" (level: system_cores, dedicated_cores,
// shared_cores, reclaimed_cores or their short forms system, dedicated, shared, reclaimed) and
// the level --unclassified-qos-level chose (parsed with the flags). Rejects malformed items, a
// level given twice, values shaping::ValidateConfig refuses and guaranteed rates adding up to more
// than 1000 permille; every message names the flag and the item. The levels' DSCP and burst are
// DaemonConfig's, parsed when the flags were read (enforce/dscp.h, enforce/burst.h): taken as they
// are, values out of their flag's range refused (for configs built in code).
// --dscp-default (auto, keep or a DSCP) gives unmarked_dscp: auto is CS0 when a level is marked.
Result<shaping::ShapingConfig> BuildShapingConfig(const DaemonConfig& config);

}  // namespace netqos::app
