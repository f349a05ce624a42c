// DecideScope: what one wake-up of the enforcement worker touches. Pure.
#include "enforce/pass_scope.h"

#include <catch2/catch.hpp>
#include <string>

namespace {

using netqos::enforce::DecideScope;
using netqos::enforce::PassScope;
using netqos::enforce::PassScopeName;
using netqos::enforce::PendingWork;

// A worker that has run a whole pass and has nothing pending.
PendingWork Settled() {
  PendingWork w;
  w.baseline = true;
  return w;
}

}  // namespace

TEST_CASE("pass scope: table of wake-ups and what each must touch", "[enforce]") {
  struct Row {
    const char* what;
    PendingWork work;
    PassScope want;
  };
  auto with = [](auto edit) {
    PendingWork w = Settled();
    edit(w);
    return w;
  };
  const Row rows[] = {
      {"nothing pending", Settled(), PassScope::kNothing},
      {"refresh, same pod list", with([](PendingWork& w) { w.pods_read = true; }),
       PassScope::kNothing},
      {"refresh, pod list changed",
       with([](PendingWork& w) { w.pods_read = w.pods_changed = true; }), PassScope::kAll},
      {"refresh, same list but containers left unresolved",
       with([](PendingWork& w) { w.pods_read = w.unresolved = true; }), PassScope::kAll},
      {"unresolved containers wait for the refresh",
       with([](PendingWork& w) { w.unresolved = true; }), PassScope::kNothing},
      {"one container cgroup created", with([](PendingWork& w) { w.created_containers = 1; }),
       PassScope::kContainers},
      {"created containers and the same pod list", with([](PendingWork& w) {
         w.created_containers = 3;
         w.pods_read = true;
       }),
       PassScope::kContainers},
      {"created containers and a changed pod list", with([](PendingWork& w) {
         w.created_containers = 3;
         w.pods_read = w.pods_changed = true;
       }),
       PassScope::kAll},
      {"created containers and an allocation of a running pod", with([](PendingWork& w) {
         w.created_containers = 1;
         w.allocation_needs_pass = true;
       }),
       PassScope::kAll},
      {"RemovePod, topology or cgroup removal",
       with([](PendingWork& w) { w.general_event = true; }), PassScope::kAll},
      {"an allocation of a pod with a running container",
       with([](PendingWork& w) { w.allocation_needs_pass = true; }), PassScope::kAll},
      {"an allocation of a pod not started yet", Settled(), PassScope::kNothing},
      {"no whole pass yet", with([](PendingWork& w) {
         w.baseline = false;
         w.created_containers = 1;
       }),
       PassScope::kAll},
      {"the periodic full resync, even with nothing changed",
       with([](PendingWork& w) { w.resync_due = w.full_due = w.pods_read = true; }),
       PassScope::kFull},
      {"the periodic full resync wins over created containers", with([](PendingWork& w) {
         w.resync_due = w.full_due = true;
         w.created_containers = 2;
       }),
       PassScope::kFull},
      {"a resync between full ones, even with nothing changed",
       with([](PendingWork& w) { w.resync_due = w.pods_read = true; }), PassScope::kResync},
      {"a resync between full ones wins over created containers and events",
       with([](PendingWork& w) {
         w.resync_due = w.general_event = true;
         w.created_containers = 2;
       }),
       PassScope::kResync},
  };
  for (const auto& row : rows) {
    INFO(row.what);
    CHECK(std::string(PassScopeName(DecideScope(row.work))) == PassScopeName(row.want));
  }
}
