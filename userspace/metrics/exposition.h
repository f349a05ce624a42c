// Metric families as plain values and their Prometheus text exposition (format 0.0.4): # HELP and
// # TYPE lines, escaped label values, histograms as cumulative _bucket{le=...} series plus _sum
// and _count. Output is sorted (families by name, series by labels) so it is stable between
// scrapes and diffable.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/histogram.h"

namespace netqos::metrics {

enum class MetricType { kCounter, kGauge, kHistogram };

// Rates are exposed in the base unit, bytes per second (Prometheus naming: "use base unit
// bytes"); the kernel and the plugin count bits.
inline constexpr double kBitsPerByte = 8;

// Label name/value pairs in the order the family declares its label names.
using Labels = std::vector<std::pair<std::string, std::string>>;

struct Sample {
  Labels labels;
  double value = 0;
};

struct HistogramSample {
  Labels labels;
  // Observations per bucket, NOT cumulative: bucket_counts[i] counts values in
  // (bounds[i-1], bounds[i]]; the last element (index bounds.size()) counts values above the
  // highest bound. The exposition makes them cumulative.
  std::vector<uint64_t> bucket_counts;
  double sum = 0;
};

// A sample of counts an adapter kept (common/histogram.h); its bounds must be the family's.
HistogramSample FromCounts(Labels labels, const HistogramCounts& counts);

struct Family {
  std::string name;
  std::string help;
  MetricType type = MetricType::kGauge;
  std::vector<Sample> samples;              // counters and gauges
  std::vector<double> bounds;               // histograms: increasing upper bounds, no +Inf
  std::vector<HistogramSample> histograms;  // histograms
};

// [a-zA-Z_:][a-zA-Z0-9_:]*
bool IsValidMetricName(std::string_view name);
// [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" (reserved).
bool IsValidLabelName(std::string_view name);

// Label values: backslash, double quote and newline escaped as \\, \" and \n.
std::string EscapeLabelValue(std::string_view value);
// HELP text: backslash and newline escaped as \\ and \n.
std::string EscapeHelp(std::string_view help);
// Shortest text that parses back to the same double: integers below 2^53 as integers, plain
// decimals from 1e-6 to 1e15, exponents beyond; "+Inf", "-Inf", "NaN".
std::string FormatValue(double value);

// The text exposition of `families`. A family with an invalid name, label name, duplicate name,
// a counter not ending in "_total", or histogram buckets that do not match its bounds is a bug in
// the caller: it aborts with a message (the unit and e2e tests render every family).
std::string RenderText(std::vector<Family> families);

}  // namespace netqos::metrics
