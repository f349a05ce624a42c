// Which pods' cgroups the watcher saw created or removed since the worker last looked: the
// pods whose cgroups a pass must resolve again rather than take from its ResolveCache
// (container_resolver.h). Written by the watchers' threads, taken by the enforcement worker.
#pragma once

#include <mutex>
#include <set>
#include <string>

namespace netqos::enforce {

struct CgroupChangeSet {
  std::set<std::string> pods;  // pod uids whose cgroups changed
  // A change no pod can be named for (a QoS level's directory, a path of no known shape), or a
  // watch that lost events: nothing resolved before can be trusted.
  bool all = false;
};

class CgroupChanges {
 public:
  // A directory created or removed under a watched root.
  void Record(const std::string& path);
  // The watch failed or lost watches: from now on no pass can rely on it (what it no longer
  // watches never reports), so every pass resolves everything again.
  void Lost();
  // What was recorded since the last Take (`all` set for good after Lost).
  CgroupChangeSet Take();

 private:
  std::mutex mu_;
  CgroupChangeSet pending_;
  bool lost_ = false;
};

}  // namespace netqos::enforce
