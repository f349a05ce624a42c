// The strict Prometheus text parser used by the metrics tests (tests/support/prom_parser.h):
// it accepts valid documents and names the line of each kind of invalid one.
#include "support/prom_parser.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using netqos::testing::ParsePrometheusText;
using netqos::testing::PromParseOptions;

namespace {

const char kValid[] =
    "# HELP up_total Ups.\n"
    "# TYPE up_total counter\n"
    "up_total{a=\"x\\\"y\\\\z\\n\",b=\"\"} 3 1700000000000\n"
    "up_total 1e3\n"
    "# a plain comment\n"
    "\n"
    "# HELP lat Latency.\n"
    "# TYPE lat histogram\n"
    "lat_bucket{le=\"0.5\"} 1\n"
    "lat_bucket{le=\"+Inf\"} 2\n"
    "lat_sum 0.7\n"
    "lat_count 2\n"
    "# HELP g Gauge.\n"
    "# TYPE g gauge\n"
    "g{x=\"1\",} -Inf\n"
    "g{x=\"2\"} NaN\n";

}  // namespace

TEST_CASE("prom parser accepts a valid document and reads it back") {
  auto doc = ParsePrometheusText(kValid);
  CHECK(doc.Value("up_total", {{"a", "x\"y\\z\n"}}) == 3);
  CHECK(doc.Samples("up_total").size() == 2);
  CHECK(doc.Family("lat").type == "histogram");
  CHECK(doc.Value("lat_count") == 2);
  CHECK(doc.Family("g").samples.size() == 2);
  CHECK(doc.ValueOr0("missing_total") == 0);
}

TEST_CASE("prom parser rejects what Prometheus or netqos's conventions reject") {
  struct Bad {
    const char* why;
    std::string text;
  };
  const std::vector<Bad> bad = {
      {"no trailing newline", "# HELP g G.\n# TYPE g gauge\ng 1"},
      {"sample without TYPE", "g 1\n"},
      {"TYPE after samples", "# HELP g G.\n# TYPE g gauge\ng 1\n# TYPE g gauge\n"},
      {"TYPE without HELP", "# TYPE g gauge\ng 1\n"},
      {"unknown type", "# HELP g G.\n# TYPE g meter\n"},
      {"bad metric name", "# HELP g G.\n# TYPE g gauge\n1g 1\n"},
      {"bad label name", "# HELP g G.\n# TYPE g gauge\ng{1a=\"x\"} 1\n"},
      {"reserved label name", "# HELP g G.\n# TYPE g gauge\ng{__x=\"x\"} 1\n"},
      {"unquoted label value", "# HELP g G.\n# TYPE g gauge\ng{a=x} 1\n"},
      {"bad escape", "# HELP g G.\n# TYPE g gauge\ng{a=\"\\t\"} 1\n"},
      {"duplicate label", "# HELP g G.\n# TYPE g gauge\ng{a=\"1\",a=\"2\"} 1\n"},
      {"duplicate series", "# HELP g G.\n# TYPE g gauge\ng{a=\"1\"} 1\ng{a=\"1\"} 2\n"},
      {"bad value", "# HELP g G.\n# TYPE g gauge\ng 1,5\n"},
      {"trailing text", "# HELP g G.\n# TYPE g gauge\ng 1 2 3\n"},
      {"counter without _total", "# HELP c C.\n# TYPE c counter\nc 1\n"},
      {"negative counter", "# HELP c_total C.\n# TYPE c_total counter\nc_total -1\n"},
      {"family in two blocks",
       "# HELP a A.\n# TYPE a gauge\na{x=\"1\"} 1\n# HELP b B.\n# TYPE b gauge\nb 1\n"
       "a{x=\"2\"} 1\n"},
      {"histogram without +Inf",
       "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n"},
      {"histogram buckets decreasing",
       "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\n"
       "h_sum 1\nh_count 1\n"},
      {"histogram le not increasing",
       "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\n"
       "h_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n"},
      {"histogram +Inf != _count",
       "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n"},
      {"histogram without _sum",
       "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_count 2\n"},
      {"histogram bucket without le", "# HELP h H.\n# TYPE h histogram\nh_bucket 1\n"},
      {"foreign sample in a histogram",
       "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\nh 1\n"},
  };
  for (const auto& b : bad) {
    INFO(b.why);
    CHECK_THROWS_WITH(ParsePrometheusText(b.text), Catch::Contains("line"));
  }
}

TEST_CASE("prom parser options relax TYPE, HELP and _total") {
  PromParseOptions lax;
  lax.require_type = false;
  lax.require_help = false;
  lax.counters_end_in_total = false;
  CHECK_NOTHROW(ParsePrometheusText("g 1\n# TYPE c counter\nc 2\n", lax));
}
