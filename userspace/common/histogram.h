// Observed values counted over fixed upper bounds, as plain numbers: how an adapter measures a
// distribution (records per journal flush, an enforcement pass's time) without depending on the
// metrics layer, which exposes a copy as a Prometheus histogram at scrape time. Not thread-safe:
// its owner guards it with the lock its other state is under.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace netqos {

// The index of the bucket `value` falls in: the first bound >= value ("le" is inclusive), or
// bounds.size() (the +Inf bucket) above the highest. `bounds` is strictly increasing.
size_t BucketIndex(const std::vector<double>& bounds, double value);

struct HistogramCounts {
  HistogramCounts() = default;
  // Aborts unless `bounds` is finite and strictly increasing (a bug at the call site).
  explicit HistogramCounts(std::vector<double> bounds);

  void Observe(double value);  // NaN is ignored
  uint64_t count() const;

  std::vector<double> bounds;     // upper bounds; the +Inf bucket is implicit
  std::vector<uint64_t> buckets;  // observations per bucket, NOT cumulative: bounds.size() + 1
  double sum = 0;
};

// Upper bounds for durations that range from a tenth of a millisecond (an fdatasync on a fast
// disk, a gRPC call) to seconds: 0.1 ms ... 5 s.
const std::vector<double>& LatencyBounds();

}  // namespace netqos
