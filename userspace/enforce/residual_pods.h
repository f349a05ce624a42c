// ResidualPods: which pods holding allocations the pod source has stopped listing for long enough
// to drop them from the state (Katalyst HEAD's residual state cleanup: 5 minutes). Pure
// bookkeeping, no I/O: the enforcer and, under --enforcement=none, the app's residual sweeper
// feed it a good pod list each pass and remove what it names.
#pragma once

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace netqos::enforce {

class ResidualPods {
 public:
  using Clock = std::chrono::steady_clock;
  struct Missing {
    std::string uid;
    std::chrono::seconds missing_for{0};
    bool due = false;  // unlisted for at least `after`: remove it, then call Forget
  };

  explicit ResidualPods(std::chrono::milliseconds after) : after_(after) {}

  // One pass over a successful read of the pod list. `allocated`: the uids with allocations;
  // `listed`: the uids the source lists. A pod is first seen missing now (so never due on its
  // first pass); one listed again, or without allocations, is forgotten.
  std::vector<Missing> Pass(const std::set<std::string>& allocated,
                            const std::set<std::string>& listed, Clock::time_point now);
  // After a due pod was removed from the state.
  void Forget(const std::string& uid) { missing_since_.erase(uid); }

 private:
  std::chrono::milliseconds after_;
  std::map<std::string, Clock::time_point> missing_since_;  // uid -> first pass not listed
};

}  // namespace netqos::enforce
