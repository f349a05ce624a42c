// netqos's own checksum over its checkpoint files: FNV-1a 64 of a canonical dump, one per journal
// record and one over the snapshot (which also carries Katalyst's, katalyst_checksum.h).
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace netqos::checkpoint {

inline constexpr uint64_t kFnvOffset = 14695981039346656037ULL;

// FNV-1a 64 of `data`, or of what was hashed into `h` followed by `data`.
uint64_t Fnv1a64(std::string_view data, uint64_t h = kFnvOffset);

// Compact, key-sorted; invalid UTF-8 (which the kubelet should never send) is replaced rather
// than thrown on, so the written bytes and the checksum always agree.
std::string CanonicalDump(const nlohmann::json& j);

// What an error about a failed checksum ends with: the flag that loads through it.
inline constexpr char kSkipCorruptionHint[] =
    " (start with --skip-network-state-corruption to load it anyway)";

}  // namespace netqos::checkpoint
