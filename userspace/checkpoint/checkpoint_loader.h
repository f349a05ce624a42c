// Loading a checkpoint directory at start: the snapshot, then the journal replayed over it in
// sequence order, with the checks that tell a torn write (dropped: it was never acknowledged) from
// corruption (an error naming the file and line, or with skip_corruption the end of the replay).
// The result is the state plus where the journal picks up (journal_writer.h).
//
// The load also tidies the directory, as a restart must before anything is appended: it removes
// unfinished snapshots (temp files of a crash before their rename) and journal segments that hold
// no record, truncates a torn tail of the last segment, and sets aside (renames, never deletes)
// the segments older than a snapshot Katalyst wrote. The caller holds the directory's lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "checkpoint/journal_writer.h"
#include "common/status.h"
#include "core/state_store.h"

namespace netqos::checkpoint {

struct CheckpointLoadOptions {
  std::string dir;
  // Load through a snapshot checksum mismatch or another policy's snapshot, and stop the journal
  // replay at a bad record (giving up the rest) instead of failing.
  bool skip_corruption = false;
  size_t max_journal_line_bytes = 0;
  size_t max_snapshot_bytes = 0;
};

struct LoadedCheckpoint {
  core::LoadedState state;
  uint64_t snapshot_seq = 0;  // the last journal record the snapshot holds (0: none, Katalyst's)
  JournalResume journal;
};

// Errors: DataLoss for malformed snapshot JSON or a snapshot over max_snapshot_bytes (never
// skipped), a snapshot checksum mismatch or a bad journal record, including a line over
// max_journal_line_bytes (skipped with skip_corruption; the journal's errors name the segment and
// line: "journal <path>:<line>: ..."); FailedPrecondition for another policy's snapshot or an
// unknown snapshot format; Internal for I/O ("<call>(<path>): <strerror>").
Result<LoadedCheckpoint> LoadCheckpointDir(const CheckpointLoadOptions& options);

}  // namespace netqos::checkpoint
