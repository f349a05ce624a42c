#include "ctl/suggest.h"

#include <algorithm>

namespace netqos::ctl {

size_t EditDistance(const std::string& a, const std::string& b) {
  // The full table: names are short, and the transposition needs the row before the last.
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::optional<std::string> ClosestName(const std::string& typed,
                                       const std::vector<std::string>& names) {
  if (typed.empty()) return std::nullopt;
  const size_t limit = std::clamp<size_t>(typed.size() / 3, 1, 3);
  std::optional<std::string> best;
  size_t best_distance = limit + 1;
  for (const auto& name : names) {
    const size_t distance = EditDistance(typed, name);
    if (distance < best_distance) {
      best = name;
      best_distance = distance;
    }
  }
  if (best) return best;
  std::vector<std::string> extended;
  for (const auto& name : names) {
    if (name.rfind(typed, 0) == 0) extended.push_back(name);
  }
  if (extended.size() == 1) return extended.front();
  return std::nullopt;
}

}  // namespace netqos::ctl
