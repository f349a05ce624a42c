// Registry: the metrics one process exposes. Two kinds of sources:
//  - metric vectors updated as things happen (CounterVec, GaugeVec, HistogramVec: one series per
//    label-value tuple), thread-safe, cheap enough for every RPC;
//  - collectors, called at scrape time, that turn a snapshot of some state into families (so a
//    gauge never goes stale and nothing is double-booked).
// Names and label names are checked when registered: a bad one is a bug and aborts.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/histogram.h"
#include "metrics/exposition.h"

namespace netqos::metrics {

// Common part of the vectors: name, help, label names; label values -> per-series state.
class MetricVecBase {
 public:
  MetricVecBase(std::string name, std::string help, std::vector<std::string> label_names);
  virtual ~MetricVecBase() = default;
  MetricVecBase(const MetricVecBase&) = delete;
  MetricVecBase& operator=(const MetricVecBase&) = delete;

  const std::string& name() const { return name_; }
  virtual Family Collect() const = 0;

 protected:
  // Aborts when the number of values does not match the label names (a bug at the call site).
  void CheckArity(const std::vector<std::string>& values) const;
  Labels Zip(const std::vector<std::string>& values) const;

  std::string name_;
  std::string help_;
  std::vector<std::string> label_names_;
  mutable std::mutex mu_;
};

class CounterVec : public MetricVecBase {
 public:
  using MetricVecBase::MetricVecBase;
  // Adds `by` (>= 0; a negative amount is ignored: counters never go down).
  void Inc(const std::vector<std::string>& label_values, double by = 1);
  double Value(const std::vector<std::string>& label_values) const;
  Family Collect() const override;

 private:
  std::map<std::vector<std::string>, double> values_;
};

class GaugeVec : public MetricVecBase {
 public:
  using MetricVecBase::MetricVecBase;
  void Set(const std::vector<std::string>& label_values, double value);
  double Value(const std::vector<std::string>& label_values) const;
  Family Collect() const override;

 private:
  std::map<std::vector<std::string>, double> values_;
};

class HistogramVec : public MetricVecBase {
 public:
  // `bounds`: finite, strictly increasing upper bounds (the +Inf bucket is implicit).
  HistogramVec(std::string name, std::string help, std::vector<std::string> label_names,
               std::vector<double> bounds);
  void Observe(const std::vector<std::string>& label_values, double value);
  // Creates the series with zero observations (so it is exposed before the first one).
  void Touch(const std::vector<std::string>& label_values);
  Family Collect() const override;

 private:
  HistogramCounts& SeriesLocked(const std::vector<std::string>& label_values);

  std::vector<double> bounds_;
  std::map<std::vector<std::string>, HistogramCounts> series_;
};

class Registry {
 public:
  using Collector = std::function<void(std::vector<Family>* out)>;

  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // The vectors live as long as the registry. Names must be valid and unique; counters end in
  // "_total". Label names must be valid and not "le".
  CounterVec& AddCounter(const std::string& name, const std::string& help,
                         std::vector<std::string> label_names = {});
  GaugeVec& AddGauge(const std::string& name, const std::string& help,
                     std::vector<std::string> label_names = {});
  HistogramVec& AddHistogram(const std::string& name, const std::string& help,
                             std::vector<std::string> label_names, std::vector<double> bounds);
  // Called on every scrape, outside the registry's lock, possibly from several threads at once.
  void AddCollector(Collector collector);

  // Every vector's family and every collector's output.
  std::vector<Family> Collect() const;
  // Collect() in the Prometheus text format 0.0.4.
  std::string RenderText() const;

 private:
  void CheckNewName(const std::string& name, MetricType type,
                    const std::vector<std::string>& label_names) const;

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<MetricVecBase>> vecs_;
  std::vector<Collector> collectors_;
};

}  // namespace netqos::metrics
