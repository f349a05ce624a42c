#include "metrics/qos_level_families.h"

#include <string>
#include <utility>

namespace netqos::metrics {
namespace {

Family Make(std::string name, std::string help, MetricType type) {
  return Family{std::move(name), std::move(help), type, {}, {}, {}};
}

}  // namespace

void CollectQosLevels(const service::EnforcementReport& report, std::vector<Family>* out) {
  Family rates =
      Make("netqos_qos_level_class_bytes_per_second",
           "A QoS level's HTB class on a shaped NIC, by direction: bound=rate is what the "
           "level is guaranteed under contention, bound=ceil the most it gets.",
           MetricType::kGauge);
  Family bytes = Make("netqos_qos_level_class_bytes_total",
                      "Bytes a QoS level's HTB class on a shaped NIC sent (all of the level's "
                      "traffic there, frames as the qdisc counts them), by direction.",
                      MetricType::kCounter);
  Family packets = Make("netqos_qos_level_class_packets_total",
                        "Packets a QoS level's HTB class on a shaped NIC sent, by direction.",
                        MetricType::kCounter);
  Family overlimits =
      Make("netqos_qos_level_class_overlimits_total",
           "Times a QoS level's HTB class was over its rate and ceiling when asked to send.",
           MetricType::kCounter);
  for (const auto& l : report.levels) {
    const Labels labels = {{"nic", l.nic}, {"qos_level", l.qos_level}, {"direction", l.direction}};
    for (const auto& [bound, value] :
         {std::pair{"rate", l.rate_bps}, std::pair{"ceil", l.ceil_bps}}) {
      Labels with_bound = labels;
      with_bound.emplace_back("bound", bound);
      rates.samples.push_back({std::move(with_bound), static_cast<double>(value) / kBitsPerByte});
    }
    if (!l.counters) continue;
    bytes.samples.push_back({labels, static_cast<double>(l.counters->bytes)});
    packets.samples.push_back({labels, static_cast<double>(l.counters->packets)});
    overlimits.samples.push_back({labels, static_cast<double>(l.counters->overlimits)});
  }
  for (Family* f : {&rates, &bytes, &packets, &overlimits}) out->push_back(std::move(*f));
}

}  // namespace netqos::metrics
