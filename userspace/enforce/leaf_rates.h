// A container's leaf rates per direction, from its allocation, the pod's bandwidth annotations
// (kubernetes.io/egress-bandwidth, kubernetes.io/ingress-bandwidth) and the ceiling mode
// (--container-ceil or the pod's netqos.io/container-ceil). Pure. The model, with its
// precedence, is docs/enforcement.md's "The bandwidth model".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/types.h"
#include "shaping/htb_plan.h"

namespace netqos::enforce {

using shaping::ContainerCeil;
using shaping::kContainerCeilNames;

// A pod's own choice, overriding --container-ceil for its containers.
inline constexpr char kContainerCeilAnnotation[] = "netqos.io/container-ceil";

// A leaf's rates in one direction, bit/s. No leaf in that direction when rate_bps is 0.
struct DirectionRates {
  uint64_t rate_bps = 0;  // guaranteed under contention
  uint64_t ceil_bps = 0;  // the most it gets; 0 with `borrow`: its QoS level's ceiling
  bool borrow = false;
  bool annotated = false;  // the pod's annotation set the ceiling
  bool declared = false;   // an implicit allocation's declared bandwidth set the ceiling
  bool member = false;     // there only for the namespace's aggregate (it borrows from it)
  bool capped() const { return rate_bps != 0; }
};

struct LeafRates {
  DirectionRates egress;
  DirectionRates ingress;
  bool any() const { return egress.capped() || ingress.capped(); }
};

// The guarantee a leaf gets when only an annotation asks for it: an annotation is a cap, not a
// reservation (the scheduler never counted it), so it buys no share of the link under contention
// beyond this, which HTB needs as a leaf's rate.
inline constexpr uint64_t kUnreservedLeafRateBps = 1000 * 1000;

// One direction: `allocated_mbps` 0 = none; `annotated_bps` the pod's annotation; `link_bps`
// the NIC. `notes` gets what an operator should hear about (an annotation above a hard-cap
// allocation, a rate above the link), each starting with `direction`; the caller names the
// container.
DirectionRates ComputeDirectionRates(uint64_t allocated_mbps, std::optional<uint64_t> annotated_bps,
                                     ContainerCeil mode, uint64_t link_bps,
                                     const std::string& direction, std::vector<std::string>& notes);

// One direction of an implicit allocation (quantity-from-qrm-declaration), which reserved
// nothing: capped at what it declared (`declared_bps`), or at the annotation when lower, with the
// guarantee of a cap that reserves nothing (kUnreservedLeafRateBps). Never borrows: the
// declaration is the most it gets, whatever the ceiling mode.
DirectionRates ImplicitDirectionRates(uint64_t declared_bps, std::optional<uint64_t> annotated_bps,
                                      uint64_t link_bps, const std::string& direction,
                                      std::vector<std::string>& notes);

}  // namespace netqos::enforce
