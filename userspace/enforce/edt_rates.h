// The EDT map (bpf/netqos_abi.h NETQOS_MAP_EDT) as the reconciler sees it: a capped container's
// egress rate, for the NICs whose egress runs in EDT mode. The planning here is pure; the BPF map
// adapters are in enforce/kernel/bpf_edt_rate_table.h, unit tests use in-memory tables.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "common/status.h"
#include "core/types.h"
#include "shaping/htb_plan.h"

namespace netqos::enforce {

class EdtRateTable {
 public:
  virtual ~EdtRateTable() = default;
  // Keyed by the leaf's class handle (10:minor), which every container of the leaf carries.
  virtual Result<std::map<uint64_t, uint64_t>> List() const = 0;  // leaf handle -> bytes/s
  virtual Status Set(uint64_t leaf_handle, uint64_t bytes_per_second) = 0;
  virtual Status Clear(uint64_t leaf_handle) = 0;  // a missing entry is not an error
};

// The aggregate map (bpf/netqos_abi.h NETQOS_MAP_AGG) has the same shape: a leaf's class handle ->
// the class handle of its namespace's aggregate, whose budget (an entry of the EDT map under that
// handle) paces the leaf's packets too.
using EdtAggregateTable = EdtRateTable;

// The rates the map should hold (leaf handle -> bytes/s): every container leaf of an EDT-mode
// NIC's egress plan, paced at its ceiling when it has one of its own, else at its rate. EDT has
// nothing to borrow from: a leaf that may borrow under HTB
// (--container-ceil=level) is paced at its guarantee. A leaf there only for its namespace's
// aggregate is not paced by itself. Each aggregate of those NICs (`egress_groups`) is paced at its
// ceiling, under its class handle.
std::map<uint64_t, uint64_t> PlanEdtRates(
    const std::map<core::NicId, std::vector<shaping::ContainerAllocation>>& egress_leaves,
    const std::set<core::NicId>& edt_nics,
    const std::map<core::NicId, std::vector<shaping::GroupClass>>& egress_groups = {});

// What the aggregate map should hold: each leaf of an EDT-mode NIC under an aggregate -> the
// aggregate's class handle.
std::map<uint64_t, uint64_t> PlanEdtAggregates(
    const std::map<core::NicId, std::vector<shaping::ContainerAllocation>>& egress_leaves,
    const std::set<core::NicId>& edt_nics);

// How many container leaves of EDT-mode NICs' egress have a burst set: EDT pacing has no bucket
// to size (it carries at most NETQOS_EDT_CREDIT_NS, 2 ms, of a container's idle time over,
// whatever its rate), so those bursts are not applied there.
size_t BurstsNotApplied(
    const std::map<core::NicId, std::vector<shaping::ContainerAllocation>>& egress_leaves,
    const std::set<core::NicId>& edt_nics);

struct EdtSyncReport {
  int set = 0;
  int cleared = 0;
  std::vector<Status> errors;
};

// Writes the entries whose rate differs (a rewrite restarts that container's pacing clock, so an
// unchanged rate is never rewritten) and clears those not wanted. One failure does not stop the
// others.
EdtSyncReport SyncEdtRates(EdtRateTable& table, const std::map<uint64_t, uint64_t>& current,
                           const std::map<uint64_t, uint64_t>& want);

}  // namespace netqos::enforce
