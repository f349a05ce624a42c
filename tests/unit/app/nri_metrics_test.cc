// The NRI session's counters as netqos_nri_* families: each counter lands in its family, read at
// scrape time.
#include "app/nri_metrics.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

namespace {

using netqos::nri_plugin::NriEventKind;

bool Has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

}  // namespace

TEST_CASE("nri metrics: the session's counters, read when scraped") {
  netqos::nri_plugin::NriSessionStats stats;
  netqos::metrics::Registry registry;
  netqos::app::AddNriMetrics(registry, stats);

  const std::string before = registry.RenderText();
  CHECK(Has(before, "netqos_nri_connected 0"));
  CHECK(Has(before, "netqos_nri_reconnects_total 0"));
  CHECK(Has(before, "netqos_nri_events_total{kind=\"StartContainer\"} 0"));
  CHECK(Has(before, "netqos_nri_reply_seconds_count 0"));
  CHECK(Has(before, "netqos_nri_event_budget_seconds 0"));
  CHECK(Has(before, "netqos_nri_runtime_request_timeout_seconds 0"));

  stats.connected = true;
  stats.connects = 3;
  stats.dropped_connections = 2;
  stats.handled[static_cast<size_t>(NriEventKind::kStartContainer)] = 5;
  stats.handled[static_cast<size_t>(NriEventKind::kRunPodSandbox)] = 2;
  stats.invalid_events = 4;
  stats.shed_events = 1;
  stats.late_replies = 6;
  stats.refused_starts = 7;
  stats.event_budget_ms = 900;
  stats.runtime_request_timeout_ms = 1800;
  stats.ObserveReply(std::chrono::milliseconds(3));
  stats.ObserveReply(std::chrono::seconds(2));

  const std::string after = registry.RenderText();
  CHECK(Has(after, "netqos_nri_connected 1"));
  CHECK(Has(after, "netqos_nri_reconnects_total 2"));
  CHECK(Has(after, "netqos_nri_dropped_connections_total 2"));
  CHECK(Has(after, "netqos_nri_events_total{kind=\"StartContainer\"} 5"));
  CHECK(Has(after, "netqos_nri_events_total{kind=\"RunPodSandbox\"} 2"));
  CHECK(Has(after, "netqos_nri_events_total{kind=\"Synchronize\"} 0"));
  CHECK(Has(after, "netqos_nri_ignored_events_total{reason=\"invalid\"} 4"));
  CHECK(Has(after, "netqos_nri_ignored_events_total{reason=\"shed\"} 1"));
  CHECK(Has(after, "netqos_nri_late_replies_total 6"));
  CHECK(Has(after, "netqos_nri_refused_starts_total 7"));
  CHECK(Has(after, "netqos_nri_event_budget_seconds 0.9"));
  CHECK(Has(after, "netqos_nri_runtime_request_timeout_seconds 1.8"));
  CHECK(Has(after, "netqos_nri_reply_seconds_count 2"));
  CHECK(Has(after, "netqos_nri_reply_seconds_bucket{le=\"0.005\"} 1"));
  CHECK(Has(after, "netqos_nri_reply_seconds_bucket{le=\"+Inf\"} 2"));
  CHECK(Has(after, "# TYPE netqos_nri_reply_seconds histogram"));
}
