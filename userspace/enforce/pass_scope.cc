#include "enforce/pass_scope.h"

namespace netqos::enforce {

PassScope DecideScope(const PendingWork& w) {
  if (w.full_due) return PassScope::kFull;
  if (w.resync_due) return PassScope::kResync;
  if (!w.baseline || w.general_event || w.allocation_needs_pass) return PassScope::kAll;
  if (w.pods_read && (w.pods_changed || w.unresolved)) return PassScope::kAll;
  if (w.created_containers > 0) return PassScope::kContainers;
  return PassScope::kNothing;
}

const char* PassScopeName(PassScope s) {
  switch (s) {
    case PassScope::kNothing:
      return "nothing";
    case PassScope::kContainers:
      return "containers";
    case PassScope::kAll:
      return "all";
    case PassScope::kResync:
      return "resync";
    case PassScope::kFull:
      return "full";
  }
  return "?";
}

}  // namespace netqos::enforce
