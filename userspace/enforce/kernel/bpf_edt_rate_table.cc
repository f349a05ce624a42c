#include "enforce/kernel/bpf_edt_rate_table.h"

namespace netqos::enforce {

Result<std::map<uint64_t, uint64_t>> BpfEdtRateTable::List() const {
  auto list = dataplane_.ListEdtRates();
  if (!list.ok()) return list.status();
  return std::map<uint64_t, uint64_t>(list->begin(), list->end());
}

}  // namespace netqos::enforce
