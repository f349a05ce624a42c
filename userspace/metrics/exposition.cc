#include "metrics/exposition.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <utility>

namespace netqos::metrics {
namespace {

bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

[[noreturn]] void Die(const std::string& family, const std::string& what) {
  std::fprintf(stderr, "netqos metrics: family %s: %s\n", family.c_str(), what.c_str());
  std::abort();
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

const char* TypeName(MetricType t) {
  switch (t) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

void CheckLabels(const std::string& family, const Labels& labels) {
  std::set<std::string_view> seen;
  for (const auto& [name, value] : labels) {
    if (!IsValidLabelName(name)) Die(family, "invalid label name \"" + name + "\"");
    if (!seen.insert(name).second) Die(family, "label \"" + name + "\" given twice");
  }
}

// name{a="x",b="y"} (or just name), plus an extra trailing label when `extra_name` is set.
void AppendSeries(std::string& out, const std::string& name, const Labels& labels,
                  std::string_view extra_name = {}, std::string_view extra_value = {}) {
  out += name;
  if (labels.empty() && extra_name.empty()) return;
  out += '{';
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out += ',';
    first = false;
    out += k;
    out += "=\"";
    out += EscapeLabelValue(v);
    out += '"';
  }
  if (!extra_name.empty()) {
    if (!first) out += ',';
    out += extra_name;
    out += "=\"";
    out += extra_value;
    out += '"';
  }
  out += '}';
}

void AppendLine(std::string& out, const std::string& value) {
  out += ' ';
  out += value;
  out += '\n';
}

void RenderScalar(std::string& out, Family& f) {
  std::stable_sort(f.samples.begin(), f.samples.end(),
                   [](const Sample& a, const Sample& b) { return a.labels < b.labels; });
  const Labels* previous = nullptr;
  for (const auto& s : f.samples) {
    // A repeated series (two collectors' rows for the same object) keeps the first row: a
    // duplicate would make the whole scrape invalid.
    if (previous != nullptr && *previous == s.labels) continue;
    previous = &s.labels;
    CheckLabels(f.name, s.labels);
    AppendSeries(out, f.name, s.labels);
    AppendLine(out, FormatValue(s.value));
  }
}

void RenderHistogram(std::string& out, Family& f) {
  for (size_t i = 0; i < f.bounds.size(); ++i) {
    if (!std::isfinite(f.bounds[i]) || (i > 0 && !(f.bounds[i - 1] < f.bounds[i])))
      Die(f.name, "histogram bounds must be finite and increasing");
  }
  std::stable_sort(
      f.histograms.begin(), f.histograms.end(),
      [](const HistogramSample& a, const HistogramSample& b) { return a.labels < b.labels; });
  const std::string bucket = f.name + "_bucket", sum = f.name + "_sum", count = f.name + "_count";
  const Labels* previous = nullptr;
  for (const auto& h : f.histograms) {
    if (previous != nullptr && *previous == h.labels) continue;
    previous = &h.labels;
    CheckLabels(f.name, h.labels);
    for (const auto& [k, v] : h.labels) {
      if (k == "le") Die(f.name, "a histogram cannot have a label named le");
    }
    if (h.bucket_counts.size() != f.bounds.size() + 1)
      Die(f.name, "histogram has " + std::to_string(h.bucket_counts.size()) + " buckets for " +
                      std::to_string(f.bounds.size()) + " bounds (+Inf)");
    uint64_t cumulative = 0;
    for (size_t i = 0; i < f.bounds.size(); ++i) {
      cumulative += h.bucket_counts[i];
      AppendSeries(out, bucket, h.labels, "le", FormatValue(f.bounds[i]));
      AppendLine(out, FormatValue(static_cast<double>(cumulative)));
    }
    cumulative += h.bucket_counts.back();
    AppendSeries(out, bucket, h.labels, "le", "+Inf");
    AppendLine(out, FormatValue(static_cast<double>(cumulative)));
    AppendSeries(out, sum, h.labels);
    AppendLine(out, FormatValue(h.sum));
    AppendSeries(out, count, h.labels);
    AppendLine(out, FormatValue(static_cast<double>(cumulative)));
  }
}

}  // namespace

HistogramSample FromCounts(Labels labels, const HistogramCounts& counts) {
  std::vector<uint64_t> buckets = counts.buckets;
  // Counts that observed nothing yet may not have their buckets: all zero.
  if (buckets.size() != counts.bounds.size() + 1) buckets.assign(counts.bounds.size() + 1, 0);
  return {std::move(labels), std::move(buckets), counts.sum};
}

bool IsValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  if (!IsAlpha(name[0]) && name[0] != '_' && name[0] != ':') return false;
  return std::all_of(name.begin() + 1, name.end(),
                     [](char c) { return IsAlpha(c) || IsDigit(c) || c == '_' || c == ':'; });
}

bool IsValidLabelName(std::string_view name) {
  if (name.empty() || name.rfind("__", 0) == 0) return false;
  if (!IsAlpha(name[0]) && name[0] != '_') return false;
  return std::all_of(name.begin() + 1, name.end(),
                     [](char c) { return IsAlpha(c) || IsDigit(c) || c == '_'; });
}

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string EscapeHelp(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
  if (value == std::trunc(value) && std::fabs(value) < kExactIntegers) {
    return std::to_string(static_cast<int64_t>(value));
  }
  // Plain decimals where they read well (bucket bounds like 0.0005), exponents beyond.
  const double magnitude = std::fabs(value);
  const auto format =
      magnitude >= 1e-6 && magnitude < 1e15 ? std::chars_format::fixed : std::chars_format::general;
  char buf[400];  // a fixed-format double needs at most ~330 characters
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value, format);
  if (ec != std::errc()) return "NaN";  // cannot happen: the buffer holds any double
  return std::string(buf, end);
}

std::string RenderText(std::vector<Family> families) {
  std::sort(families.begin(), families.end(),
            [](const Family& a, const Family& b) { return a.name < b.name; });
  std::string out;
  for (size_t i = 0; i < families.size(); ++i) {
    Family& f = families[i];
    if (!IsValidMetricName(f.name)) Die(f.name, "invalid metric name");
    if (i > 0 && families[i - 1].name == f.name) Die(f.name, "registered twice");
    if (f.type == MetricType::kCounter && !EndsWith(f.name, "_total"))
      Die(f.name, "a counter's name must end in _total");
    out += "# HELP " + f.name + " " + EscapeHelp(f.help) + "\n";
    out += "# TYPE " + f.name + " " + TypeName(f.type) + "\n";
    if (f.type == MetricType::kHistogram) {
      RenderHistogram(out, f);
    } else {
      RenderScalar(out, f);
    }
  }
  return out;
}

}  // namespace netqos::metrics
