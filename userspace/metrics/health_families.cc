#include "metrics/health_families.h"

#include <string>
#include <utility>

namespace netqos::metrics {
namespace {

// A histogram family of one series, or of none when nothing was ever measured (its bounds are
// then unknown: a store without group commit).
Family HistogramFamily(std::string name, std::string help, Labels labels,
                       const HistogramCounts& counts) {
  Family f{std::move(name), std::move(help), MetricType::kHistogram, {}, counts.bounds, {}};
  if (!counts.bounds.empty()) f.histograms.push_back(FromCounts(std::move(labels), counts));
  return f;
}

}  // namespace

void CollectCheckpoint(const core::FlushStats& flushes, bool failed, std::vector<Family>* out) {
  out->push_back(HistogramFamily(
      "netqos_checkpoint_flush_records",
      "Journal records each group-commit flush made durable (concurrent calls share a flush).", {},
      flushes.records));
  out->push_back(HistogramFamily("netqos_checkpoint_flush_duration_seconds",
                                 "Time of each group-commit flush of the journal (fdatasync).", {},
                                 flushes.seconds));
  out->push_back(Family{"netqos_checkpoint_flush_failed",
                        "1 once a journal flush failed: netqosd refuses every call until it is "
                        "restarted from the checkpoint on disk.",
                        MetricType::kGauge,
                        {{{}, failed ? 1.0 : 0.0}},
                        {},
                        {}});
}

void CollectPasses(const service::EnforcementReport& report, std::vector<Family>* out) {
  Family duration{"netqos_enforcement_pass_duration_seconds",
                  "Time of each enforcement pass (its pod list read included), by scope: "
                  "containers (new containers only), all (the whole desired state), full (the "
                  "periodic resync).",
                  MetricType::kHistogram,
                  {},
                  {},
                  {}};
  for (const auto& [scope, counts] : report.pass_seconds) {
    // The enforcer gives every scope the same bounds.
    if (duration.bounds.empty()) duration.bounds = counts.bounds;
    if (counts.bounds != duration.bounds) continue;
    duration.histograms.push_back(FromCounts({{"scope", scope}}, counts));
  }
  out->push_back(std::move(duration));

  Family failures{"netqos_enforcement_pass_failures_total",
                  "Enforcement passes that did not finish (an exception, or the class map could "
                  "not be read); the next pass retries.",
                  MetricType::kCounter,
                  {},
                  {},
                  {}};
  failures.samples.push_back({{}, static_cast<double>(report.pass_failures)});
  out->push_back(std::move(failures));

  Family kernel{"netqos_enforcement_kernel_failures_total",
                "Enforcement passes in which a kernel write failed, by target: class_map, "
                "shaping (a NIC's qdiscs), edt_map, pod_address_map.",
                MetricType::kCounter,
                {},
                {},
                {}};
  for (const auto& [target, n] : report.kernel_failures) {
    kernel.samples.push_back({{{"target", target}}, static_cast<double>(n)});
  }
  out->push_back(std::move(kernel));
}

}  // namespace netqos::metrics
