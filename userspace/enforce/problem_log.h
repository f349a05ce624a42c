// Reports each bad state once: a problem is logged when it first appears (and again, as resolved,
// when it goes away), and counted every time it is seen, so a persistent fault does not flood the
// log every few seconds yet stays visible in the counters.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/problem_kind.h"

namespace netqos::enforce {

// A problem a plan found, for the enforcer to report.
struct Problem {
  ProblemKind kind;
  std::string object;  // "" when the kind names one thing ("class-map")
  std::string message;
  std::string key() const { return ProblemKey(kind, object); }
};

struct ProblemSnapshot {
  ProblemKind kind;
  std::string key;  // ProblemKey(kind, object)
  std::string message;
  uint64_t times_seen = 0;
};

class ProblemLog {
 public:
  // Problems not reported again between BeginPass and EndPass are resolved by EndPass.
  void BeginPass();
  // The kind and object name the problem ("nic" "eth0"); a changed message is logged again.
  void Report(ProblemKind kind, std::string_view object, const std::string& message);
  void Report(const Problem& p) { Report(p.kind, p.object, p.message); }
  void EndPass();

  std::vector<ProblemSnapshot> Active() const;
  uint64_t total_reports() const;

 private:
  struct Entry {
    ProblemKind kind;
    std::string message;
    uint64_t times_seen = 0;
  };
  mutable std::mutex mu_;
  std::map<std::string, Entry> active_;
  std::set<std::string> seen_this_pass_;
  uint64_t total_ = 0;
};

}  // namespace netqos::enforce
