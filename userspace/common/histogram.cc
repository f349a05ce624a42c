#include "common/histogram.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace netqos {

size_t BucketIndex(const std::vector<double>& bounds, double value) {
  return static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), value) -
                             bounds.begin());
}

HistogramCounts::HistogramCounts(std::vector<double> b) : bounds(std::move(b)) {
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i]) || (i > 0 && !(bounds[i - 1] < bounds[i]))) {
      std::fprintf(stderr, "netqos: histogram bounds must be finite and strictly increasing\n");
      std::abort();
    }
  }
  buckets.assign(bounds.size() + 1, 0);
}

void HistogramCounts::Observe(double value) {
  if (std::isnan(value)) return;
  if (buckets.size() != bounds.size() + 1) buckets.assign(bounds.size() + 1, 0);
  ++buckets[BucketIndex(bounds, value)];
  sum += value;
}

uint64_t HistogramCounts::count() const {
  uint64_t n = 0;
  for (uint64_t b : buckets) n += b;
  return n;
}

const std::vector<double>& LatencyBounds() {
  static const std::vector<double> kBounds = {
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};
  return kBounds;
}

}  // namespace netqos
