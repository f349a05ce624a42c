// The Prometheus text exposition: escaping, value formatting, sorted and stable output,
// cumulative histogram buckets ending at +Inf, and the registry's metric vectors.
#include "metrics/exposition.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "metrics/registry.h"
#include "support/prom_parser.h"

using netqos::metrics::EscapeHelp;
using netqos::metrics::EscapeLabelValue;
using netqos::metrics::Family;
using netqos::metrics::FormatValue;
using netqos::metrics::HistogramSample;
using netqos::metrics::IsValidLabelName;
using netqos::metrics::IsValidMetricName;
using netqos::metrics::MetricType;
using netqos::metrics::Registry;
using netqos::metrics::RenderText;
using netqos::metrics::Sample;
using netqos::testing::ParsePrometheusText;

TEST_CASE("label values escape backslash, double quote and newline") {
  CHECK(EscapeLabelValue("plain") == "plain");
  CHECK(EscapeLabelValue(R"(C:\dir)") == R"(C:\\dir)");
  CHECK(EscapeLabelValue(R"(say "hi")") == R"(say \"hi\")");
  CHECK(EscapeLabelValue("two\nlines") == R"(two\nlines)");
  CHECK(EscapeLabelValue("tab\there {braces} = , ok") == "tab\there {braces} = , ok");
  CHECK(EscapeLabelValue("") == "");
}

TEST_CASE("HELP text escapes backslash and newline but not quotes") {
  CHECK(EscapeHelp(R"(a\b)") == R"(a\\b)");
  CHECK(EscapeHelp("a\nb") == R"(a\nb)");
  CHECK(EscapeHelp(R"("quoted")") == R"("quoted")");
}

TEST_CASE("values print as integers when exact, else the shortest round-trip text") {
  CHECK(FormatValue(0) == "0");
  CHECK(FormatValue(42) == "42");
  CHECK(FormatValue(-7) == "-7");
  CHECK(FormatValue(25e9) == "25000000000");
  CHECK(FormatValue(0.5) == "0.5");
  CHECK(FormatValue(0.0001) == "0.0001");
  CHECK(FormatValue(1e-9) == "1e-09");
  CHECK(FormatValue(0.30000000000000004) == "0.30000000000000004");
  CHECK(FormatValue(1e300) == "1e+300");
  CHECK(FormatValue(std::numeric_limits<double>::infinity()) == "+Inf");
  CHECK(FormatValue(-std::numeric_limits<double>::infinity()) == "-Inf");
  CHECK(FormatValue(std::nan("")) == "NaN");
  for (double v : {0.1, 1.0 / 3, 123456.789, 1e-9, 9007199254740993.0}) {
    INFO(v);
    CHECK(std::stod(FormatValue(v)) == v);
  }
}

TEST_CASE("metric and label names follow the Prometheus grammar") {
  CHECK(IsValidMetricName("netqos_rpc_requests_total"));
  CHECK(IsValidMetricName("a:b_c1"));
  CHECK(IsValidMetricName("_x"));
  CHECK_FALSE(IsValidMetricName(""));
  CHECK_FALSE(IsValidMetricName("1abc"));
  CHECK_FALSE(IsValidMetricName("a-b"));
  CHECK_FALSE(IsValidMetricName("a b"));
  CHECK(IsValidLabelName("nic"));
  CHECK(IsValidLabelName("_x1"));
  CHECK_FALSE(IsValidLabelName("__name__"));
  CHECK_FALSE(IsValidLabelName("a:b"));
  CHECK_FALSE(IsValidLabelName("9"));
  CHECK_FALSE(IsValidLabelName(""));
}

TEST_CASE("a small document renders exactly, families by name and series by labels") {
  Family g{"b_gauge", "A gauge\\with \"help\"", MetricType::kGauge, {}, {}, {}};
  g.samples.push_back({{{"nic", "eth1"}}, 2});
  g.samples.push_back({{{"nic", "eth0"}}, 1.5});
  Family c{"a_things_total", "Things.", MetricType::kCounter, {}, {}, {}};
  c.samples.push_back({{{"method", "Allocate"}, {"code", "OK"}}, 3});
  c.samples.push_back({{{"method", "A\"x\n"}, {"code", "OK"}}, 1});
  const std::string text = RenderText({g, c});
  CHECK(text ==
        "# HELP a_things_total Things.\n"
        "# TYPE a_things_total counter\n"
        "a_things_total{method=\"A\\\"x\\n\",code=\"OK\"} 1\n"
        "a_things_total{method=\"Allocate\",code=\"OK\"} 3\n"
        "# HELP b_gauge A gauge\\\\with \"help\"\n"
        "# TYPE b_gauge gauge\n"
        "b_gauge{nic=\"eth0\"} 1.5\n"
        "b_gauge{nic=\"eth1\"} 2\n");
  auto doc = ParsePrometheusText(text);
  CHECK(doc.Value("a_things_total", {{"method", "A\"x\n"}}) == 1);
  CHECK(doc.Family("b_gauge").help == "A gauge\\with \"help\"");
}

TEST_CASE("histograms render cumulative buckets, +Inf, _sum and _count") {
  Family h{"lat_seconds", "Latency.", MetricType::kHistogram, {}, {0.1, 1}, {}};
  h.histograms.push_back(HistogramSample{{{"method", "Allocate"}}, {2, 3, 1}, 4.25});
  h.histograms.push_back(HistogramSample{{{"method", "A"}}, {0, 0, 0}, 0});
  const std::string text = RenderText({h});
  CHECK(text ==
        "# HELP lat_seconds Latency.\n"
        "# TYPE lat_seconds histogram\n"
        "lat_seconds_bucket{method=\"A\",le=\"0.1\"} 0\n"
        "lat_seconds_bucket{method=\"A\",le=\"1\"} 0\n"
        "lat_seconds_bucket{method=\"A\",le=\"+Inf\"} 0\n"
        "lat_seconds_sum{method=\"A\"} 0\n"
        "lat_seconds_count{method=\"A\"} 0\n"
        "lat_seconds_bucket{method=\"Allocate\",le=\"0.1\"} 2\n"
        "lat_seconds_bucket{method=\"Allocate\",le=\"1\"} 5\n"
        "lat_seconds_bucket{method=\"Allocate\",le=\"+Inf\"} 6\n"
        "lat_seconds_sum{method=\"Allocate\"} 4.25\n"
        "lat_seconds_count{method=\"Allocate\"} 6\n");
  CHECK_NOTHROW(ParsePrometheusText(text));
}

TEST_CASE("output is sorted and stable whatever order the samples come in") {
  Family f{"x_total", "X.", MetricType::kCounter, {}, {}, {}};
  for (int i = 0; i < 50; ++i) {
    f.samples.push_back({{{"a", std::to_string(i % 7)}, {"b", std::to_string(i)}}, i * 1.0});
  }
  Family g{"w", "W.", MetricType::kGauge, {}, {}, {}};
  g.samples.push_back({{}, 1});
  const std::string reference = RenderText({f, g});
  std::mt19937 rng(7);
  for (int round = 0; round < 5; ++round) {
    Family shuffled = f;
    std::shuffle(shuffled.samples.begin(), shuffled.samples.end(), rng);
    CHECK(RenderText({g, shuffled}) == reference);
  }
  CHECK(reference.find("# TYPE w gauge") < reference.find("# TYPE x_total counter"));
  CHECK_NOTHROW(ParsePrometheusText(reference));
}

TEST_CASE("a repeated series keeps its first row, so the scrape stays valid") {
  Family f{"g", "G.", MetricType::kGauge, {}, {}, {}};
  f.samples.push_back({{{"nic", "eth0"}}, 1});
  f.samples.push_back({{{"nic", "eth0"}}, 2});
  const std::string text = RenderText({f});
  CHECK(text == "# HELP g G.\n# TYPE g gauge\ng{nic=\"eth0\"} 1\n");
}

TEST_CASE("registry counters, gauges and histograms") {
  Registry r;
  auto& c = r.AddCounter("netqos_test_requests_total", "Requests.", {"method", "code"});
  auto& g = r.AddGauge("netqos_test_temperature", "Gauge.");
  auto& h = r.AddHistogram("netqos_test_seconds", "Hist.", {"method"}, {0.5, 1, 2});
  c.Inc({"Allocate", "OK"});
  c.Inc({"Allocate", "OK"}, 2);
  c.Inc({"Allocate", "OK"}, -5);  // counters never go down
  c.Inc({"Allocate", "INTERNAL"});
  g.Set({}, 21.5);
  h.Touch({"RemovePod"});
  for (double v : {0.1, 0.5, 0.7, 1.0, 2.0, 3.0, 100.0}) h.Observe({"Allocate"}, v);
  r.AddCollector([](std::vector<Family>* out) {
    Family f{"netqos_test_collected", "From a collector.", MetricType::kGauge, {}, {}, {}};
    f.samples.push_back({{{"nic", "eth0"}}, 7});
    out->push_back(f);
  });
  CHECK(c.Value({"Allocate", "OK"}) == 3);

  auto doc = ParsePrometheusText(r.RenderText());
  CHECK(doc.Value("netqos_test_requests_total", {{"method", "Allocate"}, {"code", "OK"}}) == 3);
  CHECK(doc.Value("netqos_test_requests_total", {{"code", "INTERNAL"}}) == 1);
  CHECK(doc.Value("netqos_test_temperature") == 21.5);
  CHECK(doc.Value("netqos_test_collected", {{"nic", "eth0"}}) == 7);
  // "le" is inclusive: 0.5 lands in le="0.5", 1.0 in le="1", 2.0 in le="2".
  const auto b = [&](const char* le) {
    return doc.Value("netqos_test_seconds_bucket", {{"method", "Allocate"}, {"le", le}});
  };
  CHECK(b("0.5") == 2);
  CHECK(b("1") == 4);
  CHECK(b("2") == 5);
  CHECK(b("+Inf") == 7);
  CHECK(doc.Value("netqos_test_seconds_count", {{"method", "Allocate"}}) == 7);
  CHECK(doc.Value("netqos_test_seconds_sum", {{"method", "Allocate"}}) ==
        Approx(0.1 + 0.5 + 0.7 + 1 + 2 + 3 + 100));
  CHECK(doc.Value("netqos_test_seconds_count", {{"method", "RemovePod"}}) == 0);
  CHECK(doc.Value("netqos_test_seconds_bucket", {{"method", "RemovePod"}, {"le", "+Inf"}}) == 0);
}
