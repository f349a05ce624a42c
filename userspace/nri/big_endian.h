// Network byte order for the 32-bit fields of NRI's mux header and ttRPC's message header, done
// byte by byte so that it is independent of the host's order and of alignment.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace netqos::nri {

// The first four bytes of `bytes` (which holds at least four) as a big-endian number.
inline uint32_t LoadBigEndian32(std::string_view bytes) {
  return (uint32_t{static_cast<uint8_t>(bytes[0])} << 24) |
         (uint32_t{static_cast<uint8_t>(bytes[1])} << 16) |
         (uint32_t{static_cast<uint8_t>(bytes[2])} << 8) | uint32_t{static_cast<uint8_t>(bytes[3])};
}

inline void AppendBigEndian32(uint32_t value, std::string& out) {
  out.push_back(static_cast<char>((value >> 24) & 0xff));
  out.push_back(static_cast<char>((value >> 16) & 0xff));
  out.push_back(static_cast<char>((value >> 8) & 0xff));
  out.push_back(static_cast<char>(value & 0xff));
}

}  // namespace netqos::nri
