// The families of netqosd's own work, read at scrape time: the journal's group-commit flushes
// and the failed flush that stops the service (from the allocation service), and the enforcer's
// passes, their failures and its failed kernel writes (from its report). docs/metrics.md has the
// table; the alerts in deploy/monitoring/ are written on these.
#pragma once

#include <vector>

#include "core/state_store.h"
#include "metrics/exposition.h"
#include "service/enforcement_view.h"

namespace netqos::metrics {

// netqos_checkpoint_flush_records, netqos_checkpoint_flush_duration_seconds and
// netqos_checkpoint_flush_failed (`failed`: a flush failed and every call is refused).
void CollectCheckpoint(const core::FlushStats& flushes, bool failed, std::vector<Family>* out);

// netqos_enforcement_pass_duration_seconds, netqos_enforcement_pass_failures_total and
// netqos_enforcement_kernel_failures_total.
void CollectPasses(const service::EnforcementReport& report, std::vector<Family>* out);

}  // namespace netqos::metrics
