// Brings the class map to the desired state. Entries nobody wants any more are cleared right away
// when their cgroup is gone or their pod was removed; an entry whose cgroup still exists but whose
// pod the kubelet no longer lists is kept for a grace period, as Katalyst HEAD's
// clearResidualNetClass does, so a kubelet hiccup never drops enforcement.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "enforce/class_table.h"
#include "enforce/desired_state.h"

namespace netqos::enforce {

using Clock = std::chrono::steady_clock;

struct SyncInputs {
  const std::map<uint64_t, DesiredContainer>* desired = nullptr;
  // Ids of the cgroup directories that exist under the watched tree.
  const std::set<uint64_t>* live_cgroups = nullptr;
  // The kubelet's pod list was read successfully; without it nothing alive is judged residual.
  bool pods_known = false;
  // Cleared without grace (their pod was removed through RemovePod).
  const std::set<uint64_t>* evict_now = nullptr;
  Clock::time_point now;
};

struct SyncReport {
  int set = 0;
  int cleared = 0;
  int kept_in_grace = 0;
  std::vector<Status> errors;        // each names the cgroup id and the operation
  std::vector<uint64_t> failed_ids;  // the cgroup id of each error, same order
};

class ClassSync {
 public:
  // Upstream keeps a residual entry for 30 minutes after it was last wanted, unless the map holds
  // at least half of its capacity (4096 there, NETQOS_MAX_ENTRIES here).
  explicit ClassSync(std::chrono::seconds grace = std::chrono::minutes(30),
                     size_t no_grace_above = 65536 / 2)
      : grace_(grace), no_grace_above_(no_grace_above) {}

  // Entries found in the map at startup count as wanted at `now`: a restart starts their grace
  // period instead of clearing them before the first pod list arrives.
  void Adopt(const std::map<uint64_t, ClassEntry>& current, Clock::time_point now);

  // `current` is the map's content before the sync.
  SyncReport Sync(ClassTable& table, const std::map<uint64_t, ClassEntry>& current,
                  const SyncInputs& in);

 private:
  std::chrono::seconds grace_;
  size_t no_grace_above_;
  std::map<uint64_t, Clock::time_point> last_wanted_;
};

}  // namespace netqos::enforce
