#include "enforce/leaf_rates.h"

#include <algorithm>

#include "shaping/htb_plan.h"

namespace netqos::enforce {

DirectionRates ComputeDirectionRates(uint64_t allocated_mbps, std::optional<uint64_t> annotated_bps,
                                     ContainerCeil mode, uint64_t link_bps,
                                     const std::string& direction,
                                     std::vector<std::string>& notes) {
  DirectionRates r;
  const uint64_t allocated = shaping::MbitToBits(allocated_mbps);
  if (allocated == 0) {
    if (!annotated_bps) return r;
    // Only the annotation: a cap like the CNI bandwidth plugin's, with no guarantee to speak of.
    r.ceil_bps = *annotated_bps;
    r.rate_bps = std::min(r.ceil_bps, kUnreservedLeafRateBps);
    r.annotated = true;
  } else if (mode == ContainerCeil::kAllocation) {
    r.rate_bps = allocated;
    if (annotated_bps) {
      r.annotated = *annotated_bps < allocated;
      if (*annotated_bps > allocated) {
        notes.push_back(direction + " annotation " + shaping::BitRateText(*annotated_bps) +
                        " exceeds the allocation of " + shaping::BitRateText(allocated) +
                        "; held to the allocation");
      }
      r.rate_bps = std::min(allocated, *annotated_bps);
    }
    r.ceil_bps = r.rate_bps;
  } else {
    // The allocation is what the container is guaranteed; the annotation, if any, its ceiling.
    r.rate_bps = annotated_bps ? std::min(allocated, *annotated_bps) : allocated;
    if (annotated_bps) {
      r.ceil_bps = *annotated_bps;
      r.annotated = true;
    } else {
      r.borrow = true;
    }
  }
  if (r.rate_bps > link_bps || r.ceil_bps > link_bps) {
    notes.push_back(direction + " " + shaping::BitRateText(std::max(r.rate_bps, r.ceil_bps)) +
                    " exceeds the link rate of " + shaping::BitRateText(link_bps) + "; capped at " +
                    shaping::BitRateText(link_bps));
    r.rate_bps = std::min(r.rate_bps, link_bps);
    r.ceil_bps = std::min(r.ceil_bps, link_bps);
  }
  return r;
}

DirectionRates ImplicitDirectionRates(uint64_t declared_bps, std::optional<uint64_t> annotated_bps,
                                      uint64_t link_bps, const std::string& direction,
                                      std::vector<std::string>& notes) {
  DirectionRates r;
  r.ceil_bps = declared_bps;
  r.declared = true;
  if (annotated_bps && *annotated_bps < declared_bps) {
    r.ceil_bps = *annotated_bps;
    r.declared = false;
    r.annotated = true;
  }
  if (r.ceil_bps > link_bps) {
    notes.push_back(direction + " " + shaping::BitRateText(r.ceil_bps) +
                    " exceeds the link rate of " + shaping::BitRateText(link_bps) + "; capped at " +
                    shaping::BitRateText(link_bps));
    r.ceil_bps = link_bps;
  }
  r.rate_bps = std::min(r.ceil_bps, kUnreservedLeafRateBps);
  return r;
}

}  // namespace netqos::enforce
