#include "app/nri_metrics.h"

#include <string>
#include <utility>
#include <vector>

namespace netqos::app {
namespace {

// A family without series yet: the caller adds its labelled samples or histogram.
metrics::Family Empty(metrics::MetricType type, std::string name, std::string help) {
  metrics::Family f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

// One family of one series without labels.
metrics::Family Single(metrics::MetricType type, std::string name, std::string help, double value) {
  metrics::Family f = Empty(type, std::move(name), std::move(help));
  f.samples.push_back({{}, value});
  return f;
}

metrics::Family Counter(std::string name, std::string help, double value) {
  return Single(metrics::MetricType::kCounter, std::move(name), std::move(help), value);
}

metrics::Family Gauge(std::string name, std::string help, double value) {
  return Single(metrics::MetricType::kGauge, std::move(name), std::move(help), value);
}

double Of(const std::atomic<uint64_t>& n) { return static_cast<double>(n.load()); }

}  // namespace

void AddNriMetrics(metrics::Registry& registry, const nri_plugin::NriSessionStats& stats) {
  registry.AddCollector([&stats](std::vector<metrics::Family>* out) {
    out->push_back(Gauge("netqos_nri_connected",
                         "1 while netqosd is registered as an NRI plugin with the container "
                         "runtime (Configure answered, connection open), else 0.",
                         stats.connected ? 1.0 : 0.0));
    // What the last Configure settled: the runtime's request timeout (0: it sent none, NRI's
    // default applies) and the budget held below half of it.
    out->push_back(Gauge(
        "netqos_nri_event_budget_seconds",
        "How long netqosd holds a runtime event's reply for its handler, as the last registration "
        "settled it (--nri-event-budget-ms, at most half the runtime's request timeout); 0 before "
        "the first registration.",
        Of(stats.event_budget_ms) / 1000.0));
    out->push_back(Gauge(
        "netqos_nri_runtime_request_timeout_seconds",
        "The request timeout the container runtime sent at the last registration; 0 when it sent "
        "none (containerd 1.7: NRI's default of 2 s applies).",
        Of(stats.runtime_request_timeout_ms) / 1000.0));

    // Every connection after the first is a reconnect (the runtime restarted, or the session
    // dropped a connection over a protocol error).
    const uint64_t connects = stats.connects;
    out->push_back(Counter("netqos_nri_reconnects_total",
                           "Connections made to the runtime's NRI socket after the first one.",
                           static_cast<double>(connects > 0 ? connects - 1 : 0)));
    out->push_back(Counter("netqos_nri_dropped_connections_total",
                           "NRI connections that ended other than by netqosd stopping: the "
                           "runtime closed them, or netqosd dropped them over a protocol error.",
                           Of(stats.dropped_connections)));

    metrics::Family events = Empty(metrics::MetricType::kCounter, "netqos_nri_events_total",
                                   "Runtime events handed to netqosd's NRI handler, by kind (the "
                                   "NRI method: RunPodSandbox, StartContainer, ..., Synchronize).");
    for (size_t k = 0; k < nri_plugin::kNriEventKinds; ++k) {
      events.samples.push_back(
          {{{"kind", nri_plugin::NriEventKindName(static_cast<nri_plugin::NriEventKind>(k))}},
           Of(stats.handled[k])});
    }
    out->push_back(std::move(events));

    metrics::Family ignored =
        Empty(metrics::MetricType::kCounter, "netqos_nri_ignored_events_total",
              "Runtime events answered without the handler, by reason: invalid (content failed "
              "validation), shed (too many events waiting behind a stuck handler).");
    ignored.samples.push_back({{{"reason", "invalid"}}, Of(stats.invalid_events)});
    ignored.samples.push_back({{{"reason", "shed"}}, Of(stats.shed_events)});
    out->push_back(std::move(ignored));

    out->push_back(Counter("netqos_nri_late_replies_total",
                           "Runtime events answered before the handler finished: it ran past "
                           "--nri-event-budget-ms (or half the runtime's request timeout).",
                           Of(stats.late_replies)));
    out->push_back(Counter("netqos_nri_refused_starts_total",
                           "Container starts refused with --nri-fail-closed: netqos caps the "
                           "pod and the container's class was not confirmed in place.",
                           Of(stats.refused_starts)));

    metrics::Family reply =
        Empty(metrics::MetricType::kHistogram, "netqos_nri_reply_seconds",
              "Time from a runtime event's arrival to netqosd's reply, for the events handed to "
              "the handler: how long the runtime waited for netqosd.");
    const HistogramCounts counts = stats.ReplySeconds();
    reply.bounds = counts.bounds;
    reply.histograms.push_back(metrics::FromCounts({}, counts));
    out->push_back(std::move(reply));
  });
}

}  // namespace netqos::app
