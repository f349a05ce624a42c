#include "enforce/link_shaper.h"

namespace netqos::enforce {

std::string IfbNameFor(int ifindex) { return kIfbPrefix + std::to_string(ifindex); }

}  // namespace netqos::enforce
