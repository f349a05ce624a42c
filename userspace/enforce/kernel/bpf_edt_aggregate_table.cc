#include "enforce/kernel/bpf_edt_aggregate_table.h"

namespace netqos::enforce {

Result<std::map<uint64_t, uint64_t>> BpfEdtAggregateTable::List() const {
  auto list = dataplane_.ListAggregates();
  if (!list.ok()) return list.status();
  return std::map<uint64_t, uint64_t>(list->begin(), list->end());
}

}  // namespace netqos::enforce
