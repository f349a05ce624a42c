// FileStateStore: the StateStore backed by a snapshot file in Katalyst's checkpoint layout plus a
// journal of changes, so that each allocation costs one fdatasync'd line instead of a full file.
//
// Files in `dir`:
//   network_plugin_state          the snapshot, compact JSON, Katalyst's layout plus a "netqos"
//                                 member: {"checksum":C,"machineState":{<identifier>:{
//                                 "egress_state":..,"ingress_state":..,"pod_entries":..}},
//                                 "netqos":{"format":1,"seq":S},"pod_entries":..,
//                                 "policyName":"static"}. It holds every change up to seq S.
//   network_plugin_state.wal.<first seq, 20 digits>
//                                 journal segments, one JSON line per change:
//                                 {"seq":n,"op":"set","alloc":{..},"crc":X} or
//                                 {"seq":n,"op":"remove_pod","pod_uid":"..","crc":X}.
//   .network_plugin_state.tmp-<pid>-<n>   a snapshot being written (removed by Load).
//
// Checksums are ours, not Katalyst's (Katalyst hashes a go-spew rendering of its Go types, which
// changes with every type change): C and X are FNV-1a 64-bit over nlohmann's
// compact, key-sorted dump() of the document with its "checksum" (resp. "crc") member removed.
// A file without the "netqos" member was written by Katalyst; its checksum cannot be verified,
// so it is treated as a checksum mismatch and imported only with skip_corruption.
//
// Load() must be called once before Append/BeginSnapshot/FinishSnapshot: it fixes the next
// sequence number and truncates a torn journal tail. Appends always go to a new segment after a
// restart or a BeginSnapshot; FinishSnapshot removes the sealed segments the snapshot covers.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/state_store.h"

namespace netqos::checkpoint {

class FileStateStore final : public core::StateStore {
 public:
  struct Options {
    std::string dir;
    // --skip-network-state-corruption: load through a checksum mismatch (snapshot) or stop the
    // journal replay at a bad record instead of failing. Malformed snapshot JSON stays fatal.
    bool skip_corruption = false;
    // SnapshotDue() once this many records or journal bytes have been appended (or replayed
    // by Load) since the last BeginSnapshot.
    uint64_t snapshot_every_records = 4096;
    uint64_t snapshot_every_bytes = 8 << 20;
  };

  // Creates `dir` (mkdir -p, 0700) if needed. Does not read anything yet.
  static Result<std::unique_ptr<FileStateStore>> Create(Options options);

  ~FileStateStore() override;
  FileStateStore(const FileStateStore&) = delete;
  FileStateStore& operator=(const FileStateStore&) = delete;

  // Errors: DataLoss for malformed JSON (never skippable), a checksum mismatch or a bad journal
  // record (skippable); FailedPrecondition for another policy's checkpoint (skippable) or an
  // unknown snapshot format; Internal for I/O ("fsync(<path>): <strerror>").
  Result<core::LoadedState> Load() override;
  // One write() of one line, then fdatasync. After a failed fdatasync every later Append fails
  // (the kernel may have dropped the data and a retry could falsely succeed); restart to recover.
  Status Append(const core::StateChange& change) override;
  bool SnapshotDue() const override;
  Result<uint64_t> BeginSnapshot() override;
  // `seq` must come from BeginSnapshot; a seq older than the snapshot already on disk is refused
  // (its covering journal may be gone).
  Status FinishSnapshot(uint64_t seq, const core::Snapshot& snapshot) override;

  const std::string& snapshot_path() const { return snapshot_path_; }
  // Path of the segment whose first record has sequence number `first_seq`.
  std::string SegmentPath(uint64_t first_seq) const;

 private:
  struct Segment {
    std::string path;
    uint64_t last_seq = 0;  // highest record; 0 for a segment to drop at the next snapshot
  };

  explicit FileStateStore(Options options);
  Result<core::LoadedState> LoadImpl();
  Status FinishSnapshotImpl(uint64_t seq, const core::Snapshot& snapshot);
  Status OpenSegmentLocked();
  Status WriteSnapshotFile(const std::string& contents);

  const Options options_;
  const std::string snapshot_path_;

  // Serialises FinishSnapshot calls; never taken by Append.
  std::mutex snapshot_mu_;
  uint64_t written_snapshot_seq_ = 0;  // guarded by snapshot_mu_
  uint64_t tmp_counter_ = 0;           // guarded by snapshot_mu_

  mutable std::mutex mu_;  // guards everything below; never held while a snapshot is written
  bool loaded_ = false;
  Status failed_;  // set when an fdatasync failed: the journal can no longer be trusted
  uint64_t next_seq_ = 1;
  int segment_fd_ = -1;  // the open segment, -1 until the next Append opens one
  Segment current_;
  uint64_t current_bytes_ = 0;
  std::vector<Segment> sealed_;
  uint64_t records_since_snapshot_ = 0;
  uint64_t bytes_since_snapshot_ = 0;
};

}  // namespace netqos::checkpoint
