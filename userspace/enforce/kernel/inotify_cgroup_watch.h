// The enforcer's cgroup-events port (enforce/cgroup_events.h) over the inotify watcher of the
// cgroup layer (cgroup::CgroupWatcher): what netqosd wires.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "enforce/cgroup_events.h"

namespace netqos::enforce {

// One cgroup::CgroupWatcher on `root`, existing directories not reported (the enforcer's first
// pass lists them). A WatchCgroups.
Result<std::unique_ptr<CgroupWatch>> WatchCgroupsWithInotify(const std::string& root,
                                                             CgroupEventHandlers handlers);

}  // namespace netqos::enforce
