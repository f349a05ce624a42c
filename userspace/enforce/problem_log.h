// Reports each bad state once: a problem is logged when it first appears (and again, as resolved,
// when it goes away), and counted every time it is seen, so a persistent fault does not flood the
// log every few seconds yet stays visible in the counters.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace netqos::enforce {

struct ProblemSnapshot {
  std::string key;
  std::string message;
  uint64_t times_seen = 0;
};

class ProblemLog {
 public:
  // Problems not reported again between BeginPass and EndPass are resolved by EndPass.
  void BeginPass();
  // `key` names the object ("nic:eth0", "class:1234"); a changed message is logged again.
  void Report(const std::string& key, const std::string& message);
  void EndPass();

  std::vector<ProblemSnapshot> Active() const;
  uint64_t total_reports() const;

 private:
  struct Entry {
    std::string message;
    uint64_t times_seen = 0;
  };
  mutable std::mutex mu_;
  std::map<std::string, Entry> active_;
  std::set<std::string> seen_this_pass_;
  uint64_t total_ = 0;
};

}  // namespace netqos::enforce
