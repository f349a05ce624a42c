#include "checkpoint/journal_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <string_view>
#include <utility>
#include <variant>

#include "checkpoint/store_io.h"
#include "common/bounded_file.h"
#include "common/durable_file.h"

namespace netqos::checkpoint {

namespace {

// Writes `bytes` zeros at `offset` of `fd`, in chunks of a static buffer.
Status WriteZeros(int fd, uint64_t offset, uint64_t bytes, const std::string& path) {
  static const char kZeros[1 << 16] = {};
  while (bytes > 0) {
    const uint64_t n = std::min<uint64_t>(bytes, sizeof(kZeros));
    NETQOS_RETURN_IF_ERROR(
        AsIoError(PwriteAll(fd, std::string_view(kZeros, static_cast<size_t>(n)), offset, path)));
    offset += n;
    bytes -= n;
  }
  return Status::Ok();
}

}  // namespace

const std::vector<double>& FlushRecordBounds() {
  static const std::vector<double> kBounds = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  return kBounds;
}

JournalWriter::JournalWriter(Options options, JournalResume resume)
    : options_(std::move(options)),
      next_seq_(resume.next_seq),
      sealed_(std::move(resume.segments)),
      backlog_{resume.records_since_snapshot, resume.bytes_since_snapshot},
      last_written_(resume.next_seq - 1),
      // What is on disk counts as durable: every later record starts a group flush of its own.
      durable_seq_(resume.next_seq - 1) {}

JournalWriter::~JournalWriter() = default;

std::string JournalWriter::SegmentPath(uint64_t first_seq) const {
  return options_.dir + "/" + SegmentFileName(first_seq);
}

Status JournalWriter::OpenSegmentLocked(uint64_t min_bytes) {
  std::string path = SegmentPath(next_seq_);
  // A record larger than a segment gets a segment of its own size, in whole pages.
  const uint64_t capacity =
      std::max<uint64_t>(options_.segment_bytes, (min_bytes + 4095) / 4096 * 4096);
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) return IoError("open", path, errno);
  // Real zeros, flushed once, so that records written over them later change neither the size
  // nor the extents (see the header). Then the new name must be durable too, or a crash could
  // lose the whole segment.
  Status st = WriteZeros(fd.get(), 0, capacity, path);
  if (st.ok() && ::fdatasync(fd.get()) != 0) st = IoError("fdatasync", path, errno);
  if (st.ok()) st = FsyncDir(options_.dir);
  if (!st.ok()) {
    // A full disk shows here, before any record is written: the change is refused whole and the
    // next one tries again. Should the unlink not reach the disk, the loader removes a segment
    // without records.
    fd.reset();
    ::unlink(path.c_str());
    return Internal(
        "cannot create journal segment " + path + " (" + std::to_string(capacity) +
        " bytes of zeros written ahead of its records), the change is not made: " + st.message());
  }
  segment_fd_ = std::move(fd);
  current_ = JournalSegment{path, 0};
  current_bytes_ = 0;
  current_capacity_ = capacity;
  return Status::Ok();
}

int JournalWriter::Datasync(int fd) const {
  return options_.datasync ? options_.datasync(fd) : ::fdatasync(fd);
}

Status JournalWriter::FlushAndSealLocked() {
  // Written records may still wait for their group flush: flush them here (a leader in flight
  // holds its own descriptor), so a sealed segment is durable whole and Sync need not reopen it.
  const bool flushed = Datasync(segment_fd_.get()) == 0;
  const int err = errno;
  segment_fd_.reset();
  sealed_.push_back(current_);
  std::lock_guard sync_lock(sync_mu_);
  if (!flushed) {
    failed_ = IoError("fdatasync", current_.path, err);
    FlushFailedLocked(failed_, current_.last_seq);
    return failed_;
  }
  // Not after a failed flush (Cut still seals then): its error may have been reported to the
  // leader alone, so this fdatasync's success does not make the records it failed durable.
  if (!sync_failed_.ok()) return sync_failed_;
  durable_seq_ = std::max(durable_seq_, current_.last_seq);
  // Callers may sleep on either flush number; the ones this seal made durable see it.
  for (auto& cv : done_cv_) cv.notify_all();
  return Status::Ok();
}

Result<uint64_t> JournalWriter::Write(const core::StateChange& change) {
  std::lock_guard lock(mu_);
  if (!failed_.ok()) return failed_;
  const uint64_t seq = next_seq_;
  const std::string line = EncodeRecord(seq, change);
  if (line.size() - 1 > options_.max_line_bytes) {
    std::string what;
    if (const auto* set = std::get_if<core::SetAllocation>(&change)) {
      what = "pod " + set->info.pod_uid + " container " + set->info.container_name;
    } else {
      what = "removing pod " + std::get<core::RemovePodEntries>(change).pod_uid;
    }
    return InvalidArgument("journal record for " + what + " is " + std::to_string(line.size() - 1) +
                           " bytes, " + SizeLimitText(options_.max_line_bytes) +
                           " (its labels and annotations are too large)");
  }
  if (segment_fd_ && current_bytes_ + line.size() > current_capacity_) {
    // Full: the record goes to a new segment, named after it.
    if (current_.last_seq != 0) {
      NETQOS_RETURN_IF_ERROR(FlushAndSealLocked());
    } else {
      // No record yet (its first write failed) and too small for this one: the new segment
      // takes its name.
      segment_fd_.reset();
      if (::unlink(current_.path.c_str()) != 0) return IoError("unlink", current_.path, errno);
    }
  }
  if (!segment_fd_) NETQOS_RETURN_IF_ERROR(OpenSegmentLocked(line.size()));

  Status st = AsIoError(PwriteAll(segment_fd_.get(), line, current_bytes_, current_.path));
  if (!st.ok()) {
    // Zero the partial line again so that the next record, written at the same offset, is not
    // followed by what is left of this one.
    Status zeroed = WriteZeros(segment_fd_.get(), current_bytes_, line.size(), current_.path);
    if (!zeroed.ok()) {
      failed_ = Status(StatusCode::kInternal,
                       "journal disabled: " + zeroed.message() + " after " + st.message());
      return failed_;
    }
    return st;
  }
  current_bytes_ += line.size();
  current_.last_seq = seq;
  next_seq_ = seq + 1;
  ++backlog_.records;
  backlog_.bytes += line.size();
  // Release: a leader that reads this seq (acquire, then mu_ for the segment) finds the record
  // written, in the segment it flushes or in one sealed, and flushed, since.
  last_written_.store(seq, std::memory_order_release);
  return seq;
}

Status JournalWriter::Sync(uint64_t seq) {
  std::unique_lock sync_lock(sync_mu_);
  for (;;) {
    if (durable_seq_ >= seq) return Status::Ok();
    if (!sync_failed_.ok()) return SyncErrorLocked(seq);
    if (!syncing_) {
      LeadFlushLocked(sync_lock);
    } else if (seq <= flight_target_) {
      SleepUntilFlushedLocked(sync_lock, flushes_started_, seq);
    } else if (!next_leader_) {
      // Too late for the flush in flight: wait for its end, then lead the next one (unless a
      // caller arriving meanwhile already does; the loop then sleeps on that one).
      next_leader_ = true;
      SleepUntilFlushedLocked(sync_lock, flushes_started_, seq);
      next_leader_ = false;
      // Made durable meanwhile by a seal: someone else must lead the next flush.
      if (durable_seq_ >= seq) HandOffLeadLocked();
    } else {
      // The next flush starts after the one in flight ends, so it covers this record.
      SleepUntilFlushedLocked(sync_lock, flushes_started_ + 1, seq);
    }
  }
}

void JournalWriter::SleepUntilFlushedLocked(std::unique_lock<std::mutex>& sync_lock, uint64_t flush,
                                            uint64_t seq) {
  ++sync_sleepers_;
  std::condition_variable& cv = done_cv_[flush % 2];
  // A caller waiting for a flush that is not in flight leaves when no one is to lead it.
  const bool next = flush > flushes_started_;
  while (flushes_ended_ < flush && durable_seq_ < seq && sync_failed_.ok() &&
         !(next && !syncing_ && !next_leader_)) {
    cv.wait(sync_lock);
    ++sync_wakeups_;
  }
  --sync_sleepers_;
}

void JournalWriter::HandOffLeadLocked() {
  // Whoever sleeps now waits for the next flush, on one condition variable: wake one to lead.
  if (!syncing_ && !next_leader_ && sync_sleepers_ > 0) {
    done_cv_[(flushes_started_ + 1) % 2].notify_one();
  }
}

void JournalWriter::LeadFlushLocked(std::unique_lock<std::mutex>& sync_lock) {
  syncing_ = true;
  const uint64_t flush = ++flushes_started_;
  // Every record up to the target is in the segment duplicated below, or in one sealed since
  // (Cut flushes a segment whole before it closes it). Known before sync_mu_ is let go, so that a
  // caller arriving meanwhile knows whether this flush covers its record.
  const uint64_t target = last_written_.load(std::memory_order_acquire);
  flight_target_ = target;
  sync_lock.unlock();
  // A private descriptor, because Cut may seal (and close) the segment meanwhile; no descriptor
  // means nothing is left to flush.
  Fd fd;
  std::string path;
  Status flushed;
  {
    std::lock_guard lock(mu_);
    path = current_.path;
    if (segment_fd_) {
      fd.reset(::fcntl(segment_fd_.get(), F_DUPFD_CLOEXEC, 0));
      if (!fd) flushed = IoError("dup", path, errno);
    }
  }
  const bool had_segment = static_cast<bool>(fd);
  const auto flush_start = std::chrono::steady_clock::now();
  if (fd) {
    if (Datasync(fd.get()) != 0) flushed = IoError("fdatasync", path, errno);
    fd.reset();
  }
  const auto flush_time = std::chrono::steady_clock::now() - flush_start;
  if (flushed.ok()) {
    sync_lock.lock();
  } else {
    // After a failed fdatasync the kernel may have dropped the dirty pages and a retry can
    // report success without the data: refuse further changes until a restart reloads. Both
    // errors are set under mu_, so a seal (which holds mu_) sees either both or neither.
    std::lock_guard lock(mu_);
    if (failed_.ok()) failed_ = flushed;
    sync_lock.lock();
    FlushFailedLocked(flushed, target);
  }
  syncing_ = false;
  flushes_ended_ = flush;
  if (!sync_failed_.ok()) {
    // This flush failed, or a seal's did meanwhile (its callers are woken already). Then none
    // of this flush's records counts as durable: without a segment of its own it relied on that
    // seal, and with one, a descriptor duplicated from the same segment shares its error state
    // (the error is reported to one fdatasync only). Each fails rather than be acknowledged.
  } else {
    // The records this flush made durable: those above durable_seq_, which a seal (Cut) may
    // have moved meanwhile for the records of the segment it flushed.
    if (had_segment) {
      flush_stats_.records.Observe(
          static_cast<double>(target > durable_seq_ ? target - durable_seq_ : 0));
      flush_stats_.seconds.Observe(std::chrono::duration<double>(flush_time).count());
    }
    durable_seq_ = std::max(durable_seq_, target);
    done_cv_[flush % 2].notify_all();
    HandOffLeadLocked();
  }
}

void JournalWriter::FlushFailedLocked(const Status& error, uint64_t through) {
  if (sync_failed_.ok()) {
    sync_failed_ = error;
    failed_through_ = through;
  }
  for (auto& cv : done_cv_) cv.notify_all();
}

Status JournalWriter::SyncErrorLocked(uint64_t seq) const {
  if (seq <= failed_through_) {
    return Status(StatusCode::kInternal,
                  "journal record " + std::to_string(seq) +
                      " is not durable, its flush failed: " + sync_failed_.message());
  }
  return Status(StatusCode::kInternal,
                "journal record " + std::to_string(seq) +
                    " was not flushed: the journal stopped at a failed flush of records up to " +
                    std::to_string(failed_through_) + ": " + sync_failed_.message());
}

Result<uint64_t> JournalWriter::Cut() {
  std::lock_guard lock(mu_);
  // A segment that holds no record (its first write failed: not for a full disk, which fails
  // the segment's zeros before it is open, but an I/O error over them) stays open: its name is
  // still the next record's seq, and sealing it would leave a file of that name behind (until a
  // snapshot that succeeds removes it), so that the next segment could not be created and every
  // later change would fail.
  if (segment_fd_ && current_.last_seq != 0) NETQOS_RETURN_IF_ERROR(FlushAndSealLocked());
  backlog_ = {};
  return next_seq_ - 1;
}

Status JournalWriter::DropCoveredBy(uint64_t seq) {
  std::vector<JournalSegment> covered;
  {
    std::lock_guard lock(mu_);
    auto keep = std::stable_partition(sealed_.begin(), sealed_.end(),
                                      [seq](const JournalSegment& s) { return s.last_seq > seq; });
    covered.assign(keep, sealed_.end());
    sealed_.erase(keep, sealed_.end());
  }
  // Unlinked without mu_: Write keeps journaling into the open segment meanwhile.
  Status result;
  std::vector<JournalSegment> failed;
  for (const JournalSegment& s : covered) {
    if (::unlink(s.path.c_str()) != 0 && errno != ENOENT) {
      if (result.ok()) result = IoError("unlink", s.path, errno);
      failed.push_back(s);  // retried after the next snapshot
    }
  }
  if (!failed.empty()) {
    std::lock_guard lock(mu_);
    sealed_.insert(sealed_.begin(), failed.begin(), failed.end());
  }
  // Not strictly needed (a resurrected segment only holds records <= seq, which replay skips),
  // but it keeps a given-up corrupt segment from coming back after a crash.
  if (failed.size() != covered.size()) {
    Status st = FsyncDir(options_.dir);
    if (result.ok()) result = st;
  }
  return result;
}

uint64_t JournalWriter::LastSeq() const {
  std::lock_guard lock(mu_);
  return next_seq_ - 1;
}

JournalWriter::Backlog JournalWriter::SinceCut() const {
  std::lock_guard lock(mu_);
  return backlog_;
}

size_t JournalWriter::SealedSegments() const {
  std::lock_guard lock(mu_);
  return sealed_.size();
}

core::FlushStats JournalWriter::Flushes() const {
  std::lock_guard sync_lock(sync_mu_);
  return flush_stats_;
}

uint64_t JournalWriter::SyncWakeups() const {
  std::lock_guard sync_lock(sync_mu_);
  return sync_wakeups_;
}

size_t JournalWriter::SyncSleepers() const {
  std::lock_guard sync_lock(sync_mu_);
  return sync_sleepers_;
}

}  // namespace netqos::checkpoint
