// EdtRateTable over the pinned BPF EDT map (bpf::Dataplane).
#pragma once

#include "bpf/dataplane.h"
#include "enforce/edt_rates.h"

namespace netqos::enforce {

class BpfEdtRateTable : public EdtRateTable {
 public:
  explicit BpfEdtRateTable(bpf::Dataplane& dataplane) : dataplane_(dataplane) {}
  Result<std::map<uint64_t, uint64_t>> List() const override;
  Status Set(uint64_t leaf_handle, uint64_t bytes_per_second) override {
    return dataplane_.SetEdtRate(leaf_handle, bytes_per_second);
  }
  Status Clear(uint64_t leaf_handle) override { return dataplane_.ClearEdtRate(leaf_handle); }

 private:
  bpf::Dataplane& dataplane_;
};

}  // namespace netqos::enforce
