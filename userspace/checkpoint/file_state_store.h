// FileStateStore: the StateStore backed by a snapshot file in Katalyst's checkpoint layout plus a
// journal of changes, so that each allocation costs one fdatasync'd line instead of a full file.
// The formats are apart, without I/O: journal_record.h (a record's line, segment names),
// snapshot_file.h (the snapshot's text, written and read) and own_checksum.h. The files are
// handled by three parts, which this class holds the directory's lock for and wires together:
// checkpoint_loader.h (the load: snapshot, journal replay, tidying the directory),
// journal_writer.h (records, segments, group commit) and snapshot_writer.h (the snapshot file
// and when it is due).
//
// Files in `dir`:
//   network_plugin_state          the snapshot, compact JSON, Katalyst's layout plus a "netqos"
//                                 member: {"checksum":K,"machineState":{<identifier>:{
//                                 "egress_state":..,"ingress_state":..,"pod_entries":..}},
//                                 "netqos":{"checksum":C,"format":2,"katalyst_layout":"v0.5.3",
//                                 "seq":S},"pod_entries":..,"policyName":"static"}. It holds
//                                 every change up to seq S.
//   network_plugin_state.wal.<first seq, 20 digits>
//                                 journal segments, one JSON line per change:
//                                 {"seq":n,"op":"set","alloc":{..},"crc":X} or
//                                 {"seq":n,"op":"remove_pod","pod_uid":"..","crc":X},
//                                 then zeros up to the segment's size (below).
//   .network_plugin_state.tmp-<pid>-<n>   a snapshot being written (removed by Load).
//
// Two checksums in the snapshot. K is Katalyst's (katalyst_checksum.h) for the layout chosen
// by Options::katalyst_layout, so that Katalyst loads the file after a rollback; Katalyst's Go
// decoder ignores the "netqos" member. C and X are ours, FNV-1a 64-bit over nlohmann's compact,
// key-sorted dump() of the document without K and C (resp. of the line without "crc"). netqos
// verifies only its own on its own files: K cannot cover what Katalyst does not decode. Format 1
// snapshots (before K existed) kept C at the top level; they are still read.
// A file without the "netqos" member was written by Katalyst and carries Katalyst's checksum:
// it is recomputed for each known Katalyst layout, and the file loads without skip_corruption
// when one matches; otherwise it is a checksum mismatch, imported only with skip_corruption.
// The journal is netqos's alone: Katalyst reads only the snapshot, so a rollback needs the
// journal folded into it first (a graceful stop or `netqosd --uninstall` does that).
//
// Pre-written segments: the journal's segments are created full of zeros and records are written
// over them, so that a flush writes the data alone (journal_writer.h).
//
// Load() must be called once before Append/Write/Sync/BeginSnapshot/FinishSnapshot, which refuse
// to run before it (FailedPrecondition; SnapshotDue is false until then): it fixes the next
// sequence number and truncates a torn journal tail. Appends always go to a new segment after a
// restart, a BeginSnapshot or when the current one is full; FinishSnapshot removes the sealed
// segments the snapshot covers.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "checkpoint/journal_writer.h"
#include "checkpoint/katalyst_checksum.h"
#include "checkpoint/snapshot_writer.h"
#include "common/fd.h"
#include "common/status.h"
#include "core/state_size.h"
#include "core/state_store.h"

namespace netqos::checkpoint {

// Size limits on the files Load reads, so that a damaged or hostile file is refused before it is
// read into memory. Both are far above anything a node produces, and both are also enforced when
// writing, so a file over a limit was never written whole by netqos and is reported as damaged.
//
// One journal line is one container's allocation: ids, names, NIC and numbers (a few hundred
// bytes) plus the pod's labels and annotations, which the API server caps (256 KiB of
// annotations; a whole object must fit etcd's 1.5 MiB request limit). It comes from one gRPC
// request, at most 4 MiB (gRPC's default receive limit, which netqos keeps). JSON escaping can
// lengthen strings, so allow twice that.
inline constexpr size_t kMaxJournalLineBytes = size_t{8} << 20;
// The snapshot holds every container's entry twice (pod_entries and the machineState of its NIC).
// A node runs at most a few hundred pods (the kubelet's --max-pods defaults to 110); a typical
// entry is under 2 KiB. Even 1,000 pods of 8 containers with 8 KiB of labels and annotations
// each come to 1000 * 8 * 2 * 8 KiB = 125 MiB, and parsing costs several times the file's size
// in memory, so the limit stops there.
inline constexpr size_t kMaxSnapshotBytes = size_t{128} << 20;
// The policy keeps the pod entries within core::kMaxStateBytes (both copies, counted at their
// longest), so a snapshot netqos writes always loads: the rest of the document (the NICs'
// numbers, the netqos member) takes a few KiB per NIC.
static_assert(kMaxSnapshotBytes >= core::kMaxStateBytes + (size_t{16} << 20));

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
    // --katalyst-checkpoint-layout: the Go types whose checksum the snapshot's "checksum"
    // member carries, so that the Katalyst release being rolled back to loads the file.
    KatalystLayout katalyst_layout = KatalystLayout::kV053;
    // The size limits, lowered only by tests.
    size_t max_journal_line_bytes = kMaxJournalLineBytes;
    size_t max_snapshot_bytes = kMaxSnapshotBytes;
    // The size of a new journal segment, written with zeros when it is created (a record larger
    // than that gets a segment of its own size). Lowered by tests.
    uint64_t segment_bytes = uint64_t{1} << 20;
  };

  // Whether `dir` holds a snapshot or a journal segment (false when `dir` does not exist).
  static Result<bool> HasCheckpointFiles(const std::string& dir);

  // Creates `dir` (mkdir -p, 0700) if needed. Does not read anything yet.
  static Result<std::unique_ptr<FileStateStore>> Create(Options options);

  ~FileStateStore() override;
  FileStateStore(const FileStateStore&) = delete;
  FileStateStore& operator=(const FileStateStore&) = delete;

  // Errors: DataLoss for malformed JSON or a snapshot over max_snapshot_bytes (never skippable),
  // a checksum mismatch or a bad journal record, including a line over max_journal_line_bytes
  // (skippable); FailedPrecondition for another policy's checkpoint (skippable) or an
  // unknown snapshot format; Internal for I/O ("fsync(<path>): <strerror>").
  Result<core::LoadedState> Load() override;
  // Write then Sync: one pwrite() of one line, then a flush (shared with concurrent callers).
  // A record over max_journal_line_bytes is refused
  // (InvalidArgument naming the pod and container): Load could not read it back. After a failed
  // fdatasync every later Append fails (the kernel may have dropped the data and a retry could
  // falsely succeed); restart to recover.
  Status Append(const core::StateChange& change) override;
  // Group commit: Write writes the line (one pwrite() over the segment's zeros) without flushing;
  // Sync(seq) leads or joins one fdatasync that covers every line written when it starts, so
  // concurrent callers share flushes. A record over max_journal_line_bytes is refused by Write as
  // by Append.
  Result<uint64_t> Write(const core::StateChange& change) override;
  Status Sync(uint64_t seq) override;
  bool SnapshotDue() const override;
  Result<uint64_t> BeginSnapshot() override;
  // `seq` must come from BeginSnapshot; a seq older than the snapshot already on disk is refused
  // (its covering journal may be gone), and so is a snapshot over max_snapshot_bytes
  // (ResourceExhausted; the journal it would cover is kept, so nothing is lost).
  Status FinishSnapshot(uint64_t seq, const core::Snapshot& snapshot) override;

  const std::string& snapshot_path() const { return snapshot_path_; }
  // The journal flushes Sync led so far (group commit: fewer than the records synced when
  // callers overlap), with the records each made durable and its time (fdatasync).
  core::FlushStats Flushes() const override;
  // Path of the segment whose first record has sequence number `first_seq`.
  std::string SegmentPath(uint64_t first_seq) const;

 private:
  explicit FileStateStore(Options options);
  Result<core::LoadedState> LoadImpl();
  Status FinishSnapshotImpl(uint64_t seq, const core::Snapshot& snapshot);

  const Options options_;
  const std::string snapshot_path_;

  std::mutex load_mu_;  // serialises Load
  Fd dir_lock_fd_;      // flock(LOCK_EX) on options_.dir from Load on; guarded by load_mu_
  // Made by Load, then never replaced: read by the other calls once loaded_ is true.
  std::unique_ptr<JournalWriter> journal_;
  std::unique_ptr<SnapshotWriter> snapshots_;
  std::atomic<bool> loaded_{false};
};

}  // namespace netqos::checkpoint
