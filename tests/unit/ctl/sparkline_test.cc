// netqosctl top's sparklines: heights against a cap or the history's peak, the glyphs a locale
// allows, the history per container, and the TX TREND column lined up in the table.
#include "ctl/sparkline.h"

#include <catch2/catch.hpp>
#include <cctype>
#include <sstream>

#include "ctl/top_view.h"

namespace netqos::ctl {
namespace {

TEST_CASE("sparkline: eight heights from zero to the full scale, ASCII or Unicode blocks",
          "[ctl]") {
  const std::deque<double> rising = {0, 25, 50, 75, 100, 150};
  // Heights 0, 2, 4, 5, 7 of 0..7 (rounded), and above the cap the top.
  CHECK(Sparkline(rising, 100, SparkGlyphs::kAscii) == "_:=+##");
  CHECK(Sparkline(rising, 100, SparkGlyphs::kUnicode) == "\u2581\u2583\u2585\u2586\u2588\u2588");
  // No scale: the largest value is the top.
  CHECK(Sparkline({0, 75, 150}, 0, SparkGlyphs::kAscii) == "_=#");
  CHECK(Sparkline({0, 0}, 0, SparkGlyphs::kAscii) == "__");
  CHECK(Sparkline({}, 100, SparkGlyphs::kUnicode).empty());
  // Printable glyphs only: no control character, no escape sequence.
  for (char c : Sparkline(rising, 100, SparkGlyphs::kAscii)) CHECK(std::isprint(c));
}

TEST_CASE("sparkline: Unicode only where the locale is UTF-8", "[ctl]") {
  CHECK(GlyphsForLocale(nullptr, nullptr, "en_US.UTF-8") == SparkGlyphs::kUnicode);
  CHECK(GlyphsForLocale(nullptr, nullptr, "C.utf8") == SparkGlyphs::kUnicode);
  CHECK(GlyphsForLocale("C", nullptr, "en_US.UTF-8") == SparkGlyphs::kAscii);  // LC_ALL wins
  CHECK(GlyphsForLocale("", "de_DE.UTF-8", "C") == SparkGlyphs::kUnicode);     // empty: skipped
  CHECK(GlyphsForLocale(nullptr, nullptr, "POSIX") == SparkGlyphs::kAscii);
  CHECK(GlyphsForLocale(nullptr, nullptr, nullptr) == SparkGlyphs::kAscii);
}

TEST_CASE("sparkline: the history keeps the newest rates of the containers still there", "[ctl]") {
  RateHistory h(3);
  for (double v : {1.0, 2.0, 3.0, 4.0}) h.Add(7, v);
  h.Add(8, -5);  // a negative or NaN rate is drawn as 0
  h.Prune();
  CHECK(h.Of(7) == std::deque<double>{2, 3, 4});
  CHECK(h.Of(8) == std::deque<double>{0});
  h.Add(7, 5);
  h.Prune();  // 8 was not seen in this frame: gone
  CHECK(h.Of(7) == std::deque<double>{3, 4, 5});
  CHECK(h.Of(8).empty());
}

TEST_CASE("top: the TX TREND column, full height at the container's egress cap", "[ctl]") {
  TopFrame f;
  f.interval_seconds = 1;
  f.source = "pinned maps";
  TopFrame::Container capped;
  capped.cgroup_id = 1;
  capped.row = ClassRow{};
  capped.row->cgroup_id = 1;
  capped.row->daemon = ::netqos::admin::v1::ContainerClass{};
  capped.row->daemon->set_pod_namespace("ns");
  capped.row->daemon->set_pod_name("web");
  capped.row->daemon->set_container("app");
  capped.row->daemon->mutable_egress_cap()->set_ceil_bps(100'000'000);
  TopFrame::Container uncapped;
  uncapped.cgroup_id = 2;
  f.containers = {capped, uncapped};

  RateHistory history(24);
  for (double mbps : {25.0, 50.0, 100.0}) {
    TopFrame g = f;
    g.containers[0].rates.tx_bits = mbps * 1e6;
    g.containers[1].rates.tx_bits = mbps * 1e3;  // its own peak is its top
    AddTrends(history, SparkGlyphs::kUnicode, &g);
    f.containers[0].tx_trend = g.containers[0].tx_trend;
    f.containers[1].tx_trend = g.containers[1].tx_trend;
    f.trends = g.trends;
  }
  CHECK(f.containers[0].tx_trend == "\u2583\u2585\u2588");
  CHECK(f.containers[1].tx_trend == "\u2583\u2585\u2588");
  std::ostringstream out;
  PrintTopFrame(f, out);
  const std::string text = out.str();
  CHECK_THAT(text, Catch::Contains("TX TREND"));
  // The column starts where its header does, on every row (widths count characters, not bytes).
  std::istringstream lines(text);
  std::string line;
  size_t header_at = std::string::npos;
  int rows = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("CGROUP", 0) == 0) header_at = line.find("TX TREND");
    if (header_at == std::string::npos || line.rfind("CGROUP", 0) == 0 || line.empty()) continue;
    if (line.find("\u2583") == std::string::npos) continue;
    // Characters before the sparkline: its first glyph's byte offset is its column (ASCII before).
    CHECK(line.find("\u2583") == header_at);
    ++rows;
  }
  CHECK(rows == 2);
}

}  // namespace
}  // namespace netqos::ctl
