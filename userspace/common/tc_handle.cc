#include "common/tc_handle.h"

#include <cstdio>

namespace netqos {

std::string TcHandleText(uint32_t handle) {
  char buf[24];
  const unsigned major = handle >> 16;
  const unsigned minor = handle & 0xffffu;
  if (minor == 0) {
    std::snprintf(buf, sizeof(buf), "%x:", major);
  } else {
    std::snprintf(buf, sizeof(buf), "%x:%x", major, minor);
  }
  return buf;
}

}  // namespace netqos
