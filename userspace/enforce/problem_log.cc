#include "enforce/problem_log.h"

#include <spdlog/spdlog.h>

#include "common/log_value.h"

namespace netqos::enforce {

void ProblemLog::BeginPass() {
  std::lock_guard<std::mutex> lock(mu_);
  seen_this_pass_.clear();
}

void ProblemLog::Report(ProblemKind kind, std::string_view object, const std::string& message) {
  const std::string key = ProblemKey(kind, object);
  std::lock_guard<std::mutex> lock(mu_);
  seen_this_pass_.insert(key);
  ++total_;
  Entry& e = active_.try_emplace(key, Entry{kind, "", 0}).first->second;
  if (e.times_seen == 0 || e.message != message) {
    spdlog::warn("enforcement problem object={} problem={}", LogValue(key), LogValue(message));
    e.message = message;
  }
  ++e.times_seen;
}

void ProblemLog::EndPass() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = active_.begin(); it != active_.end();) {
    if (seen_this_pass_.count(it->first) != 0) {
      ++it;
      continue;
    }
    spdlog::info("enforcement problem resolved object={} after={}", LogValue(it->first),
                 it->second.times_seen);
    it = active_.erase(it);
  }
}

std::vector<ProblemSnapshot> ProblemLog::Active() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ProblemSnapshot> out;
  for (const auto& [key, e] : active_) out.push_back({e.kind, key, e.message, e.times_seen});
  return out;
}

uint64_t ProblemLog::total_reports() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_;
}

}  // namespace netqos::enforce
