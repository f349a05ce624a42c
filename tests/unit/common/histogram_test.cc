// HistogramCounts: which bucket a value lands in (inclusive upper bounds), sums and counts.
#include "common/histogram.h"

#include <catch2/catch.hpp>
#include <cmath>

namespace netqos {
namespace {

TEST_CASE("histogram: a value lands in the first bucket whose bound is at least it") {
  HistogramCounts h({1, 2, 4});
  for (double v : {0.5, 1.0, 1.5, 4.0, 4.5, 100.0}) h.Observe(v);
  CHECK(h.buckets == std::vector<uint64_t>{2, 1, 1, 2});  // le 1, le 2, le 4, +Inf
  CHECK(h.count() == 6);
  CHECK(h.sum == 111.5);
}

TEST_CASE("histogram: NaN is not observed, and empty counts have every bucket at zero") {
  HistogramCounts h({1});
  CHECK(h.buckets == std::vector<uint64_t>{0, 0});
  h.Observe(std::nan(""));
  CHECK(h.count() == 0);
  CHECK(h.sum == 0);
  CHECK(BucketIndex({1, 2}, 3) == 2);
  CHECK(BucketIndex({1, 2}, -1) == 0);
}

TEST_CASE("histogram: latency bounds run from 0.1 ms to 5 s, increasing") {
  const auto& b = LatencyBounds();
  REQUIRE(b.size() == 15);
  CHECK(b.front() == 0.0001);
  CHECK(b.back() == 5);
  for (size_t i = 1; i < b.size(); ++i) CHECK(b[i - 1] < b[i]);
}

}  // namespace
}  // namespace netqos
