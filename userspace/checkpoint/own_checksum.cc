#include "checkpoint/own_checksum.h"

#include <nlohmann/json.hpp>

namespace netqos::checkpoint {

uint64_t Fnv1a64(std::string_view data, uint64_t h) {
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string CanonicalDump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace netqos::checkpoint
