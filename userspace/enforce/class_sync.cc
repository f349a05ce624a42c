#include "enforce/class_sync.h"

namespace netqos::enforce {

void ClassSync::Adopt(const std::map<uint64_t, ClassEntry>& current, Clock::time_point now) {
  for (const auto& [id, entry] : current) last_wanted_.emplace(id, now);
}

SyncReport ClassSync::Sync(ClassTable& table, const std::map<uint64_t, ClassEntry>& current,
                           const SyncInputs& in) {
  SyncReport r;
  for (const auto& [id, want] : *in.desired) {
    last_wanted_[id] = in.now;
    auto cur = current.find(id);
    if (cur != current.end() && cur->second == want.entry) continue;
    if (Status st = table.Set(id, want.entry); st.ok()) {
      ++r.set;
    } else {
      r.failed_ids.push_back(id);
      r.errors.push_back(st.Wrap("set class of cgroup " + std::to_string(id) + " (pod " +
                                 want.pod_namespace() + "/" + want.pod_name() + " container " +
                                 want.container_name + ")"));
    }
  }
  for (const auto& [id, entry] : current) {
    if (in.desired->count(id) != 0) continue;
    bool clear = false;
    if (in.evict_now != nullptr && in.evict_now->count(id) != 0) {
      clear = true;  // RemovePod
    } else if (in.live_cgroups != nullptr && in.live_cgroups->count(id) == 0) {
      clear = true;  // the cgroup is gone; its id is never reused
    } else if (in.pods_known) {
      auto seen = last_wanted_.find(id);
      const bool fresh = seen != last_wanted_.end() && in.now < seen->second + grace_;
      clear = !fresh || current.size() >= no_grace_above_;
    }
    if (!clear) {
      ++r.kept_in_grace;
      continue;
    }
    if (Status st = table.Clear(id); st.ok()) {
      ++r.cleared;
      last_wanted_.erase(id);
    } else {
      r.failed_ids.push_back(id);
      r.errors.push_back(st.Wrap("clear class of cgroup " + std::to_string(id)));
    }
  }
  // Forget ids that are neither in the map nor wanted.
  for (auto it = last_wanted_.begin(); it != last_wanted_.end();) {
    if (current.count(it->first) == 0 && in.desired->count(it->first) == 0) {
      it = last_wanted_.erase(it);
    } else {
      ++it;
    }
  }
  return r;
}

}  // namespace netqos::enforce
