// The EDT maps as the reconciler's ports (edt_rates.h), over the pinned BPF maps (bpf::Dataplane):
// the pacing rates (NETQOS_MAP_EDT) and the leaves' aggregates (NETQOS_MAP_AGG), both tables of
// u64 -> u64.
#pragma once

#include <map>

#include "bpf/dataplane.h"
#include "enforce/edt_rates.h"

namespace netqos::enforce {

// One table over the dataplane's Set, Clear and List calls of one map.
template <auto kSet, auto kClear, auto kList>
class BpfU64Table : public EdtRateTable {
 public:
  explicit BpfU64Table(bpf::Dataplane& dataplane) : dataplane_(dataplane) {}
  Result<std::map<uint64_t, uint64_t>> List() const override {
    auto list = (dataplane_.*kList)();
    if (!list.ok()) return list.status();
    return std::map<uint64_t, uint64_t>(list->begin(), list->end());
  }
  Status Set(uint64_t key, uint64_t value) override { return (dataplane_.*kSet)(key, value); }
  Status Clear(uint64_t key) override { return (dataplane_.*kClear)(key); }

 private:
  bpf::Dataplane& dataplane_;
};

// Leaf handle -> bytes/s.
using BpfEdtRateTable = BpfU64Table<&bpf::Dataplane::SetEdtRate, &bpf::Dataplane::ClearEdtRate,
                                    &bpf::Dataplane::ListEdtRates>;
// Leaf handle -> its namespace aggregate's handle (an EdtAggregateTable).
using BpfEdtAggregateTable =
    BpfU64Table<&bpf::Dataplane::SetAggregate, &bpf::Dataplane::ClearAggregate,
                &bpf::Dataplane::ListAggregates>;

}  // namespace netqos::enforce
