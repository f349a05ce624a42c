// What one allocation costs in the checkpoint, counted at its longest, so that the policy can
// refuse a request that would grow the state past what the checkpoint can hold. Labels and
// annotations come from the pod, which its tenant writes: without a bound, a few hundred
// containers with large kept annotations would pass the snapshot's size limit, and snapshots,
// full-rewrite Allocates and `netqosd --uninstall` would fail (docs/security.md).
#pragma once

#include <cstddef>
#include <string_view>

#include "core/types.h"

namespace netqos::core {

// The default of --checkpoint-pod-metadata-bytes: the most a pod's kept labels and annotations
// may take in one entry. Katalyst's own (the aggregated requests, the QoS level, a few flattened
// enhancements) take well under 2 KiB.
inline constexpr size_t kDefaultPodMetadataBytes = size_t{32} << 10;
// What the pod entries may take in all, both copies counted (the snapshot writes each entry under
// its pod and again under its NIC's state). The snapshot's read limit sits above it, with room for
// the document's other members; the checkpoint asserts that.
inline constexpr size_t kMaxStateBytes = size_t{96} << 20;
// Field names, numbers and punctuation of one entry, above what any entry writes (about 300).
inline constexpr size_t kEntryFixedBytes = 512;

// `s` as a JSON string, quotes included, at its longest: a control byte as \u00XX, a quote or
// backslash escaped, and any byte above 0x7f as three (a byte that is not valid UTF-8 is written
// as U+FFFD; valid UTF-8 keeps its own length, which is less).
size_t JsonStringBytes(std::string_view s);

// A pod's kept labels and annotations as one entry writes them: each key and value as a JSON
// string, with its colon and comma.
size_t MetadataBytes(const StringMap& labels, const StringMap& annotations);

// One entry as the checkpoint writes it once, at most: every string at its longest, its map keys
// (pod uid, container name) and the NIC's identifier included, plus kEntryFixedBytes.
size_t EntryBytes(const AllocationInfo& info);

}  // namespace netqos::core
