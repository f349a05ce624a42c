// A rate's recent history as a row of bar glyphs (a sparkline), for `netqosctl top --sparkline`.
// Terminal-safe: one printable, single-width glyph per sample, eight heights; Unicode blocks
// (U+2581..U+2588) where the locale is UTF-8, ASCII otherwise, never an escape sequence. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>

namespace netqos::ctl {

enum class SparkGlyphs { kUnicode, kAscii };

// UTF-8 when the first of LC_ALL, LC_CTYPE, LANG that is set and not empty names a UTF-8
// codeset (as the C library chooses the locale); ASCII otherwise. Null means unset.
SparkGlyphs GlyphsForLocale(const char* lc_all, const char* lc_ctype, const char* lang);

// One glyph per value, oldest first: 0 at the lowest bar, `full_scale` and above at the highest.
// full_scale <= 0: the largest value is the top (all lowest when every value is 0).
std::string Sparkline(const std::deque<double>& values, double full_scale, SparkGlyphs glyphs);

// The last `width` rates of each container, by cgroup id: what top's sparklines draw.
class RateHistory {
 public:
  explicit RateHistory(size_t width) : width_(width) {}
  // Appends a rate; keeps the newest `width` of them.
  void Add(uint64_t key, double rate);
  // Drops the containers not added to since the last Prune (gone from the counters).
  void Prune();
  const std::deque<double>& Of(uint64_t key) const;

 private:
  struct Entry {
    std::deque<double> values;
    bool seen = false;
  };
  size_t width_;
  std::map<uint64_t, Entry> entries_;
};

}  // namespace netqos::ctl
