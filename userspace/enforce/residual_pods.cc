#include "enforce/residual_pods.h"

namespace netqos::enforce {

std::vector<ResidualPods::Missing> ResidualPods::Pass(const std::set<std::string>& allocated,
                                                      const std::set<std::string>& listed,
                                                      Clock::time_point now) {
  for (auto it = missing_since_.begin(); it != missing_since_.end();) {
    if (allocated.count(it->first) == 0 || listed.count(it->first) != 0) {
      it = missing_since_.erase(it);
    } else {
      ++it;
    }
  }
  std::vector<Missing> out;
  for (const std::string& uid : allocated) {
    if (listed.count(uid) != 0) continue;
    auto [it, fresh] = missing_since_.emplace(uid, now);
    const auto missing = now - it->second;
    out.push_back({uid, std::chrono::duration_cast<std::chrono::seconds>(missing),
                   !fresh && missing >= after_});
  }
  return out;
}

}  // namespace netqos::enforce
