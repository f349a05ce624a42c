// The cgroup -> class map as the reconciler sees it. The BPF map adapter implements it; unit tests
// of the sync rules use an in-memory one.
#pragma once

#include <cstdint>
#include <map>

#include "common/status.h"
#include "enforce/desired_state.h"

namespace netqos::enforce {

class ClassTable {
 public:
  virtual ~ClassTable() = default;
  virtual Result<std::map<uint64_t, ClassEntry>> List() const = 0;
  virtual Status Set(uint64_t cgroup_id, const ClassEntry& entry) = 0;
  virtual Status Clear(uint64_t cgroup_id) = 0;  // a missing entry is not an error
};

}  // namespace netqos::enforce
