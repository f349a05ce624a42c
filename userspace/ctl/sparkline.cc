#include "ctl/sparkline.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <string_view>

namespace netqos::ctl {
namespace {

// Eight heights, lowest first.
constexpr std::array<std::string_view, 8> kBlocks = {"\u2581", "\u2582", "\u2583", "\u2584",
                                                     "\u2585", "\u2586", "\u2587", "\u2588"};
constexpr std::string_view kAsciiBars = "_.:-=+*#";

bool NamesUtf8(std::string_view locale) {
  std::string lower;
  for (char c : locale) {
    if (c != '-') lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return lower.find("utf8") != std::string::npos;
}

}  // namespace

SparkGlyphs GlyphsForLocale(const char* lc_all, const char* lc_ctype, const char* lang) {
  for (const char* v : {lc_all, lc_ctype, lang}) {
    if (v != nullptr && *v != '\0')
      return NamesUtf8(v) ? SparkGlyphs::kUnicode : SparkGlyphs::kAscii;
  }
  return SparkGlyphs::kAscii;  // the C locale
}

std::string Sparkline(const std::deque<double>& values, double full_scale, SparkGlyphs glyphs) {
  double top = full_scale;
  if (!(top > 0)) top = values.empty() ? 0 : *std::max_element(values.begin(), values.end());
  std::string out;
  for (double v : values) {
    size_t level = 0;
    if (top > 0 && v > 0) {
      const double scaled = std::round(v / top * static_cast<double>(kBlocks.size() - 1));
      level = static_cast<size_t>(std::min(scaled, static_cast<double>(kBlocks.size() - 1)));
    }
    if (glyphs == SparkGlyphs::kUnicode) {
      out += kBlocks[level];
    } else {
      out += kAsciiBars[level];
    }
  }
  return out;
}

void RateHistory::Add(uint64_t key, double rate) {
  Entry& e = entries_[key];
  e.values.push_back(std::isfinite(rate) && rate > 0 ? rate : 0);
  while (e.values.size() > width_) e.values.pop_front();
  e.seen = true;
}

void RateHistory::Prune() {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (!it->second.seen) {
      it = entries_.erase(it);
    } else {
      it->second.seen = false;
      ++it;
    }
  }
}

const std::deque<double>& RateHistory::Of(uint64_t key) const {
  static const std::deque<double> kNone;
  auto it = entries_.find(key);
  return it == entries_.end() ? kNone : it->second.values;
}

}  // namespace netqos::ctl
