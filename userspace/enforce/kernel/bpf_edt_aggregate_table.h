// EdtAggregateTable over the pinned BPF aggregate map (bpf::Dataplane): leaf -> its namespace's
// aggregate, for the NICs in EDT mode.
#pragma once

#include "bpf/dataplane.h"
#include "enforce/edt_rates.h"

namespace netqos::enforce {

class BpfEdtAggregateTable : public EdtAggregateTable {
 public:
  explicit BpfEdtAggregateTable(bpf::Dataplane& dataplane) : dataplane_(dataplane) {}
  Result<std::map<uint64_t, uint64_t>> List() const override;
  Status Set(uint64_t leaf_handle, uint64_t aggregate_handle) override {
    return dataplane_.SetAggregate(leaf_handle, aggregate_handle);
  }
  Status Clear(uint64_t leaf_handle) override { return dataplane_.ClearAggregate(leaf_handle); }

 private:
  bpf::Dataplane& dataplane_;
};

}  // namespace netqos::enforce
