// The NRI session's counters (--nri-socket) as netqos_nri_* families on netqosd's metrics
// endpoint, read from NriSessionStats at scrape time. See docs/metrics.md.
#pragma once

#include "metrics/registry.h"
#include "nri_plugin/nri_session.h"

namespace netqos::app {

// `stats` must outlive every scrape: stop the metrics server before the session goes.
void AddNriMetrics(metrics::Registry& registry, const nri_plugin::NriSessionStats& stats);

}  // namespace netqos::app
