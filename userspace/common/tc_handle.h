// A tc handle (major:minor in 16+16 bits, also what netqos puts in skb->priority) as tc prints it:
// "10:1a3" for a class, "10:" for a qdisc (minor 0). The one spelling every layer shows.
#pragma once

#include <cstdint>
#include <string>

namespace netqos {

std::string TcHandleText(uint32_t handle);

}  // namespace netqos
