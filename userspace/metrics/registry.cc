#include "metrics/registry.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace netqos::metrics {
namespace {

[[noreturn]] void Die(const std::string& name, const std::string& what) {
  std::fprintf(stderr, "netqos metrics: %s: %s\n", name.c_str(), what.c_str());
  std::abort();
}

}  // namespace

MetricVecBase::MetricVecBase(std::string name, std::string help,
                             std::vector<std::string> label_names)
    : name_(std::move(name)), help_(std::move(help)), label_names_(std::move(label_names)) {}

void MetricVecBase::CheckArity(const std::vector<std::string>& values) const {
  if (values.size() != label_names_.size()) {
    Die(name_, "given " + std::to_string(values.size()) + " label values for " +
                   std::to_string(label_names_.size()) + " label names");
  }
}

Labels MetricVecBase::Zip(const std::vector<std::string>& values) const {
  Labels labels;
  labels.reserve(values.size());
  for (size_t i = 0; i < values.size(); ++i) labels.emplace_back(label_names_[i], values[i]);
  return labels;
}

void CounterVec::Inc(const std::vector<std::string>& label_values, double by) {
  CheckArity(label_values);
  if (!(by >= 0)) return;
  std::lock_guard lk(mu_);
  values_[label_values] += by;
}

double CounterVec::Value(const std::vector<std::string>& label_values) const {
  std::lock_guard lk(mu_);
  auto it = values_.find(label_values);
  return it == values_.end() ? 0 : it->second;
}

Family CounterVec::Collect() const {
  Family f{name_, help_, MetricType::kCounter, {}, {}, {}};
  std::lock_guard lk(mu_);
  for (const auto& [values, v] : values_) f.samples.push_back({Zip(values), v});
  return f;
}

void GaugeVec::Set(const std::vector<std::string>& label_values, double value) {
  CheckArity(label_values);
  std::lock_guard lk(mu_);
  values_[label_values] = value;
}

double GaugeVec::Value(const std::vector<std::string>& label_values) const {
  std::lock_guard lk(mu_);
  auto it = values_.find(label_values);
  return it == values_.end() ? 0 : it->second;
}

Family GaugeVec::Collect() const {
  Family f{name_, help_, MetricType::kGauge, {}, {}, {}};
  std::lock_guard lk(mu_);
  for (const auto& [values, v] : values_) f.samples.push_back({Zip(values), v});
  return f;
}

HistogramVec::HistogramVec(std::string name, std::string help, std::vector<std::string> label_names,
                           std::vector<double> bounds)
    : MetricVecBase(std::move(name), std::move(help), std::move(label_names)),
      bounds_(std::move(bounds)) {
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (!std::isfinite(bounds_[i]) || (i > 0 && !(bounds_[i - 1] < bounds_[i])))
      Die(name_, "histogram bounds must be finite and strictly increasing");
  }
}

HistogramCounts& HistogramVec::SeriesLocked(const std::vector<std::string>& label_values) {
  auto it = series_.find(label_values);
  if (it == series_.end()) it = series_.emplace(label_values, HistogramCounts(bounds_)).first;
  return it->second;
}

void HistogramVec::Observe(const std::vector<std::string>& label_values, double value) {
  CheckArity(label_values);
  std::lock_guard lk(mu_);
  SeriesLocked(label_values).Observe(value);
}

void HistogramVec::Touch(const std::vector<std::string>& label_values) {
  CheckArity(label_values);
  std::lock_guard lk(mu_);
  (void)SeriesLocked(label_values);
}

Family HistogramVec::Collect() const {
  Family f{name_, help_, MetricType::kHistogram, {}, bounds_, {}};
  std::lock_guard lk(mu_);
  for (const auto& [values, s] : series_) f.histograms.push_back(FromCounts(Zip(values), s));
  return f;
}

void Registry::CheckNewName(const std::string& name, MetricType type,
                            const std::vector<std::string>& label_names) const {
  if (!IsValidMetricName(name)) Die(name, "invalid metric name");
  if (type == MetricType::kCounter &&
      (name.size() < 6 || name.compare(name.size() - 6, 6, "_total") != 0))
    Die(name, "a counter's name must end in _total");
  for (const auto& l : label_names) {
    if (!IsValidLabelName(l) || l == "le") Die(name, "invalid label name \"" + l + "\"");
  }
  for (const auto& v : vecs_) {
    if (v->name() == name) Die(name, "registered twice");
  }
}

CounterVec& Registry::AddCounter(const std::string& name, const std::string& help,
                                 std::vector<std::string> label_names) {
  std::lock_guard lk(mu_);
  CheckNewName(name, MetricType::kCounter, label_names);
  auto v = std::make_unique<CounterVec>(name, help, std::move(label_names));
  CounterVec& ref = *v;
  vecs_.push_back(std::move(v));
  return ref;
}

GaugeVec& Registry::AddGauge(const std::string& name, const std::string& help,
                             std::vector<std::string> label_names) {
  std::lock_guard lk(mu_);
  CheckNewName(name, MetricType::kGauge, label_names);
  auto v = std::make_unique<GaugeVec>(name, help, std::move(label_names));
  GaugeVec& ref = *v;
  vecs_.push_back(std::move(v));
  return ref;
}

HistogramVec& Registry::AddHistogram(const std::string& name, const std::string& help,
                                     std::vector<std::string> label_names,
                                     std::vector<double> bounds) {
  std::lock_guard lk(mu_);
  CheckNewName(name, MetricType::kHistogram, label_names);
  auto v = std::make_unique<HistogramVec>(name, help, std::move(label_names), std::move(bounds));
  HistogramVec& ref = *v;
  vecs_.push_back(std::move(v));
  return ref;
}

void Registry::AddCollector(Collector collector) {
  std::lock_guard lk(mu_);
  collectors_.push_back(std::move(collector));
}

std::vector<Family> Registry::Collect() const {
  std::vector<Family> out;
  std::vector<Collector> collectors;
  {
    std::lock_guard lk(mu_);
    for (const auto& v : vecs_) out.push_back(v->Collect());
    collectors = collectors_;
  }
  for (const auto& c : collectors) c(&out);
  return out;
}

std::string Registry::RenderText() const { return metrics::RenderText(Collect()); }

}  // namespace netqos::metrics
