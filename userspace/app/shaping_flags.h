// The shaping flags (typed in DaemonConfig) → the HTB hierarchy's per-QoS-level config.
#pragma once

#include "app/daemon_config.h"
#include "common/status.h"
#include "shaping/htb_plan.h"

namespace netqos::app {

// The per-level HTB config from DaemonConfig's typed flag values, all parsed when the flags were
// read: ShapingConfig's defaults with each level --qos-level-shaping set, the level
// --unclassified-qos-level chose, --container-ceil, each level's DSCP and burst (enforce/dscp.h,
// enforce/burst.h) and --dscp-default's unmarked_dscp (auto: CS0 when a level is marked).
// Checks what no single item can: the levels' guaranteed rates must add up to at most 1000
// permille; and holds a config built in code to the flags' ranges. Every message names the flag.
Result<shaping::ShapingConfig> BuildShapingConfig(const DaemonConfig& config);

}  // namespace netqos::app
