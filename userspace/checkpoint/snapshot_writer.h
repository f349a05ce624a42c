// SnapshotWriter: replaces the checkpoint's snapshot file atomically (a temp file, fsync, rename,
// directory fsync), never with an older one than it holds, and says when the journal has grown
// enough that writing one (and so dropping the journal it covers) is worth it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "checkpoint/katalyst_checksum.h"
#include "common/status.h"
#include "core/state_store.h"

namespace netqos::checkpoint {

class SnapshotWriter {
 public:
  struct Options {
    std::string dir;
    // Due() once this many records or journal bytes are not yet in a snapshot.
    uint64_t every_records = 4096;
    uint64_t every_bytes = 8 << 20;
    // Katalyst's checksum in the file is for this layout (snapshot_file.h).
    KatalystLayout katalyst_layout = KatalystLayout::kV053;
    // A larger snapshot is not written: the loader would refuse it as damaged.
    size_t max_bytes = 0;
  };

  // `on_disk_seq`: the sequence number the snapshot already in `dir` holds (0 for none).
  SnapshotWriter(Options options, uint64_t on_disk_seq);
  SnapshotWriter(const SnapshotWriter&) = delete;
  SnapshotWriter& operator=(const SnapshotWriter&) = delete;

  // Whether a journal of `records` records and `bytes` bytes not yet in a snapshot calls for one.
  bool Due(uint64_t records, uint64_t bytes) const;
  // Writes `snapshot`, which holds every journal record up to `seq`, over the file. Refused:
  // FailedPrecondition for a seq older than the file's (the journal between them may be gone),
  // ResourceExhausted for a file over max_bytes (nothing is written). Internal for I/O, naming
  // the call and the file; the old file is then left whole. Calls are serialised.
  Status Write(uint64_t seq, const core::Snapshot& snapshot);

  const std::string& path() const { return path_; }

 private:
  Status ReplaceFile(const std::string& contents);

  const Options options_;
  const std::string path_;

  std::mutex mu_;             // serialises Write
  uint64_t on_disk_seq_ = 0;  // guarded by mu_
  uint64_t tmp_counter_ = 0;  // guarded by mu_
};

}  // namespace netqos::checkpoint
