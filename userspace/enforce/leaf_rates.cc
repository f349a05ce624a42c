#include "enforce/leaf_rates.h"

#include <algorithm>

#include "common/log_value.h"
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

ContainerCeil ContainerCeilFor(const core::StringMap& annotations, ContainerCeil fallback,
                               std::vector<std::string>& notes) {
  auto it = annotations.find(kContainerCeilAnnotation);
  if (it == annotations.end()) return fallback;
  if (auto mode = FindChoice(it->second, kContainerCeilNames)) return *mode;
  notes.push_back(std::string("annotation ") + kContainerCeilAnnotation + "=" +
                  LogValue(it->second.substr(0, 64)) + " is not " +
                  ChoiceList(kContainerCeilNames) + "; using " +
                  std::string(ChoiceName(fallback, kContainerCeilNames)));
  return fallback;
}

}  // namespace netqos::enforce
