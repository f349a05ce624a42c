// JournalWriter: the checkpoint's journal from the moment it is loaded on. It numbers and writes
// each change as one record into pre-written segments, flushes them with group commit (callers
// whose records are written when a flush starts share that one fdatasync), seals the open
// segment when a snapshot begins and removes the segments a written snapshot covers.
//
// Pre-written segments. A segment is created at Options::segment_bytes of real zeros, written and
// fdatasync'd once, and records are written over the zeros with pwrite; a record that does not fit
// starts a new segment. Overwriting blocks that are already allocated and written changes neither
// the file's size nor its extents, so the fdatasync of each group commit flushes the data alone,
// without the inode that an appended line's new size dirties (on ext4 a synchronous inode write
// without a journal, a jbd2 commit with one): ~30 % less time and CPU per flush, measured in
// docs/benchmarks.md. Not fallocate: it leaves unwritten extents, whose conversion on the first
// write into them is again a metadata update. Creating a segment (zeros, fdatasync, directory
// fsync: ~0.7 ms for 1 MiB on the benchmark's disk) happens under the caller's lock once per
// segment of records and after each snapshot. The reader (journal_lines.h) takes a NUL at the
// start of a record as the end of the segment, and a record cut short by a NUL as a torn write.
//
// Records always go to a new segment after a restart (the writer never reopens one), after Cut
// and when the current one is full.
//
// Group commit. The daemon is CPU-bound when many changes overlap, and each durable record costs
// its RPC thread a sleep and a wake-up on top of its share of a flush, so Sync spends as few of
// both as it can. A caller whose record a flush in flight covers sleeps until that flush ends;
// one caller whose record came too late for it waits to lead the next flush; the others sleep
// until the next flush ends, and the end of a flush wakes only the callers it made durable (and
// the next leader). A leader flushes at once: a commit window (waiting for more records before
// the flush) was measured and did not pay (docs/benchmarks.md, "Group commit"). Under that load a
// flush is slow mostly because the block layer's flush worker waits for a CPU, not because of the
// device (measured there too).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "checkpoint/journal_record.h"
#include "common/fd.h"
#include "common/histogram.h"
#include "common/status.h"
#include "core/state_store.h"
#include "core/types.h"

namespace netqos::checkpoint {

// Upper bounds of the records one flush makes durable: 1 when calls do not overlap, up to the
// number of concurrent callers (the kubelet's Allocate calls, one per container admitted).
const std::vector<double>& FlushRecordBounds();

// Where a journal picks up after a load: what the loader found on disk.
struct JournalResume {
  uint64_t next_seq = 1;                 // the number of the next record
  std::vector<JournalSegment> segments;  // on disk, sealed, in sequence order
  // The records (and their bytes, newlines included) not yet folded into a snapshot; they count
  // towards the next one.
  uint64_t records_since_snapshot = 0;
  uint64_t bytes_since_snapshot = 0;
};

class JournalWriter {
 public:
  struct Options {
    std::string dir;
    // A longer record is refused by Write: the loader could not read it back.
    size_t max_line_bytes = 0;
    // The size of a new segment (a larger record gets a segment of its own size).
    uint64_t segment_bytes = uint64_t{1} << 20;
    // Flushes a segment's records (fdatasync unless a test holds or fails it); 0 or -1 and errno.
    std::function<int(int fd)> datasync;
  };
  // The records and bytes written since the last Cut (or, at first, the resume's backlog).
  struct Backlog {
    uint64_t records = 0;
    uint64_t bytes = 0;
  };

  // Everything up to resume.next_seq - 1 counts as durable (the loader read it from disk).
  JournalWriter(Options options, JournalResume resume);
  ~JournalWriter();
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;

  // Writes the next record (one pwrite over the segment's zeros) without flushing, and returns
  // its sequence number. InvalidArgument naming the pod (and container) for a record over
  // max_line_bytes; Internal for I/O. After a failed flush every Write fails with that error (the
  // kernel may have dropped the data and a retry could falsely succeed).
  Result<uint64_t> Write(const core::StateChange& change);
  // Returns once every record up to `seq` is on disk: leads one fdatasync covering every record
  // written when it starts, or waits for the flush that covers it.
  // After a failed flush, a record it carried fails with the flush's error, a record written
  // after it with an error saying it was not flushed because of it, and a record made durable
  // before it stays OK.
  Status Sync(uint64_t seq);
  // Seals the open segment (flushing it whole) so that later records go to a new one, resets the
  // backlog and returns the last sequence number written: what a snapshot begun now covers.
  Result<uint64_t> Cut();
  // Removes the sealed segments whose records are all at most `seq` (a durable snapshot holds
  // them). A segment that cannot be removed is kept and tried again next time; the first such
  // error is returned.
  Status DropCoveredBy(uint64_t seq);

  // The last sequence number written (0 before the first record ever).
  uint64_t LastSeq() const;
  Backlog SinceCut() const;
  size_t SealedSegments() const;
  // The flushes Sync led so far, with the records each made durable and its time.
  core::FlushStats Flushes() const;
  // How many times a caller sleeping in Sync was woken (each one a context switch), and how many
  // sleep there now: what group commit costs besides its flushes.
  uint64_t SyncWakeups() const;
  size_t SyncSleepers() const;

 private:
  Status OpenSegmentLocked(uint64_t min_bytes);
  Status FlushAndSealLocked();
  int Datasync(int fd) const;
  // Sync's parts, with sync_mu_ held: lead one flush (the flush itself without the lock), and sleep
  // on the flush numbered `flush` until it ends or `seq` is durable.
  void LeadFlushLocked(std::unique_lock<std::mutex>& sync_lock);
  void SleepUntilFlushedLocked(std::unique_lock<std::mutex>& sync_lock, uint64_t flush,
                               uint64_t seq);
  // With no flush in flight and no caller to lead the next: wakes a sleeper to lead it.
  void HandOffLeadLocked();
  void FlushFailedLocked(const Status& error, uint64_t through);
  Status SyncErrorLocked(uint64_t seq) const;
  std::string SegmentPath(uint64_t first_seq) const;

  const Options options_;

  mutable std::mutex mu_;  // guards everything down to the group flush state
  Status failed_;          // set when a write or fdatasync failed: the journal cannot be trusted
  uint64_t next_seq_ = 1;
  Fd segment_fd_;  // the open segment; none until the next Write opens one
  JournalSegment current_;
  uint64_t current_bytes_ = 0;     // records written into the current segment (its next offset)
  uint64_t current_capacity_ = 0;  // the current segment's size, pre-written with zeros
  std::vector<JournalSegment> sealed_;
  Backlog backlog_;

  // The last record written (stored under mu_), for a leader, which reads it under sync_mu_
  // alone: what its flush covers is then known before it lets go of sync_mu_.
  std::atomic<uint64_t> last_written_{0};

  // Group flush state. Lock order: mu_ before sync_mu_; Sync never holds sync_mu_ while it
  // takes mu_ or flushes.
  mutable std::mutex sync_mu_;
  // Callers waiting for flush number n sleep on done_cv_[n % 2], so the end of a flush leaves
  // those waiting for the next one asleep.
  std::condition_variable done_cv_[2];
  uint64_t durable_seq_ = 0;      // every record up to it is on disk
  bool syncing_ = false;          // a leader's fdatasync is in flight
  uint64_t flushes_started_ = 0;  // the number of the flush in flight, or of the last one
  uint64_t flushes_ended_ = 0;
  uint64_t flight_target_ = 0;  // the last record the flush in flight covers
  bool next_leader_ = false;    // a caller waits for the flush in flight to end to lead the next
  uint64_t sync_wakeups_ = 0;
  size_t sync_sleepers_ = 0;
  core::FlushStats flush_stats_{HistogramCounts(FlushRecordBounds()),
                                HistogramCounts(LatencyBounds())};
  // A flush failed: the records up to failed_through_ that were not durable failed with it, and
  // no later record is flushed.
  Status sync_failed_;
  uint64_t failed_through_ = 0;
};

}  // namespace netqos::checkpoint
