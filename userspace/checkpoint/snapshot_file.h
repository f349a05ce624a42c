// The snapshot file's text, without I/O: netqos's own (Katalyst's checkpoint layout plus a
// "netqos" member, file_state_store.h) rendered from a core::Snapshot, and any file the store may
// find read back: its own, an older format, or one Katalyst wrote.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/katalyst_checksum.h"
#include "common/status.h"
#include "core/state_store.h"
#include "core/types.h"

namespace netqos::checkpoint {

struct ParsedSnapshot {
  core::PodEntries pod_entries;
  uint64_t seq = 0;  // the last journal record it holds (0 for Katalyst's)
  bool corruption_skipped = false;
  bool katalyst = false;  // no "netqos" member: written by Katalyst
  std::vector<std::pair<std::string, std::string>> without_netns;  // (uid, container)
};

// `contents` of the snapshot at `path` (named in errors). DataLoss for malformed JSON (never
// skippable); for a checksum mismatch DataLoss, or a warning and corruption_skipped with `skip`;
// FailedPrecondition for another policy's file (loaded with `skip`) or an unknown format.
Result<ParsedSnapshot> ParseSnapshot(const std::string& path, const std::string& contents,
                                     bool skip);

// ".network_plugin_state.tmp-": how the name of a snapshot being written begins (the writer adds
// its pid and a counter); the loader removes such files, left by a crash before the rename.
std::string SnapshotTempPrefix();

// The text of the snapshot holding `snapshot` and every journal record up to `seq`, with
// Katalyst's checksum for `layout` (so that that release loads it after a rollback) and netqos's
// own. `path` is named in the error logged if Katalyst's checksum cannot be computed.
std::string RenderSnapshot(uint64_t seq, const core::Snapshot& snapshot, KatalystLayout layout,
                           const std::string& path);

}  // namespace netqos::checkpoint
