#include "checkpoint/file_state_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <utility>

#include "checkpoint/journal_lines.h"
#include "checkpoint/journal_record.h"
#include "checkpoint/katalyst_checksum.h"
#include "checkpoint/own_checksum.h"
#include "checkpoint/snapshot_file.h"
#include "common/bounded_file.h"
#include "common/durable_file.h"
#include "common/json_depth.h"
#include "core/constants.h"

namespace netqos::checkpoint {

using nlohmann::json;

namespace {

std::string TempPrefix() { return "." + std::string(core::kCheckpointFileName) + ".tmp-"; }

std::string SysError(const char* call, const std::string& path, int err) {
  return std::string(call) + "(" + path + "): " + std::strerror(err);
}

Status IoError(const char* call, const std::string& path, int err) {
  return Internal(SysError(call, path, err));
}

// The store's I/O errors are Internal whatever the errno: they say nothing about the files'
// contents, which DataLoss and InvalidArgument are kept for.
Status AsIoError(Status st) { return st.ok() ? st : Internal(st.message()); }

// The snapshot, whole, if it is within `max_bytes`. Netqos never writes a larger one
// (FinishSnapshot refuses), so a larger file is damaged: DataLoss, never skippable, left in place.
Result<std::string> ReadSnapshotFile(const std::string& path, size_t max_bytes) {
  auto contents = ReadFileAtMost(path, max_bytes);
  if (contents.ok()) return contents;
  const Status& st = contents.status();
  if (st.code() == StatusCode::kOutOfRange) {
    return DataLoss("checkpoint " + st.message() +
                    "; netqos never writes one that large, so it "
                    "is damaged and was left in place");
  }
  if (st.code() == StatusCode::kNotFound || st.code() == StatusCode::kPermissionDenied) {
    return Internal(st.message());  // I/O, as before: says nothing about the file's contents
  }
  return st;
}

Status FsyncDir(const std::string& dir) { return AsIoError(SyncDir(dir)); }

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

Status MkdirAll(const std::string& dir) {
  // Create each missing prefix in turn; EEXIST is fine as long as the end result is a directory.
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    std::string prefix = dir.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      return IoError("mkdir", prefix, errno);
    }
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return IoError("stat", dir, errno);
  if (!S_ISDIR(st.st_mode))
    return FailedPrecondition("checkpoint directory " + dir + " is not a directory");
  return Status::Ok();
}

// Renames journal segments out of the set (they no longer parse as segments), for an operator
// to inspect; nothing is deleted.
Status SetAsideSegments(const std::string& dir,
                        const std::vector<std::pair<uint64_t, std::string>>& segments) {
  const std::string suffix = ".before-katalyst-snapshot-" + std::to_string(::time(nullptr));
  for (const auto& seg : segments) {
    const std::string& path = seg.second;
    const std::string to = path + suffix;
    if (::rename(path.c_str(), to.c_str()) != 0) return IoError("rename", path, errno);
    spdlog::warn(
        "checkpoint: journal segment older than a Katalyst-written snapshot set aside "
        "path={} to={}",
        path, to);
  }
  return FsyncDir(dir);
}

}  // namespace

const std::vector<double>& FlushRecordBounds() {
  static const std::vector<double> kBounds = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  return kBounds;
}

// --- FileStateStore ---

Result<bool> FileStateStore::HasCheckpointFiles(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) return false;
    return IoError("opendir", dir, errno);
  }
  bool found = false;
  while (dirent* ent = ::readdir(d)) {
    uint64_t first = 0;
    const std::string name = ent->d_name;
    found = found || name == core::kCheckpointFileName || ParseSegmentName(name, &first);
  }
  ::closedir(d);
  return found;
}

Result<std::unique_ptr<FileStateStore>> FileStateStore::Create(Options options) {
  if (options.dir.empty()) return InvalidArgument("checkpoint directory is empty");
  while (options.dir.size() > 1 && options.dir.back() == '/') options.dir.pop_back();
  Status st = MkdirAll(options.dir);
  if (!st.ok()) return st.Wrap("cannot create checkpoint directory " + options.dir);
  return std::unique_ptr<FileStateStore>(new FileStateStore(std::move(options)));
}

FileStateStore::FileStateStore(Options options)
    : options_(std::move(options)),
      snapshot_path_(options_.dir + "/" + core::kCheckpointFileName) {}

FileStateStore::~FileStateStore() = default;

std::string FileStateStore::SegmentPath(uint64_t first_seq) const {
  return options_.dir + "/" + SegmentFileName(first_seq);
}

Result<core::LoadedState> FileStateStore::Load() {
  // Nothing below is expected to throw (JSON is parsed without exceptions or inside a try); this
  // keeps an unexpected one (bad_alloc on a huge file) from crossing the module boundary.
  try {
    return LoadImpl();
  } catch (const std::exception& e) {
    return Internal("loading checkpoint from " + options_.dir + ": " + e.what());
  }
}

Result<core::LoadedState> FileStateStore::LoadImpl() {
  std::lock_guard snap_lock(snapshot_mu_);
  std::lock_guard lock(mu_);
  if (loaded_) return FailedPrecondition("checkpoint store " + options_.dir + " already loaded");

  // One writer per directory: a second netqosd (or `netqosd --uninstall` folding the journal
  // while the daemon runs) would interleave snapshots and journal segments with the first's.
  // The lock is on the directory itself, so no file is added next to Katalyst's checkpoint, and
  // the kernel drops it when the process dies.
  Fd lock_fd(::open(options_.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!lock_fd) return IoError("open", options_.dir, errno);
  if (::flock(lock_fd.get(), LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err == EWOULDBLOCK) {
      return FailedPrecondition("checkpoint directory " + options_.dir +
                                " is in use by another netqosd process (it holds the directory's "
                                "lock); stop that one first");
    }
    return IoError("flock", options_.dir, err);
  }
  dir_lock_fd_ = std::move(lock_fd);

  // 1. Inventory: segments, and temp files left by a crash between write and rename.
  std::vector<std::pair<uint64_t, std::string>> segments;
  DIR* d = ::opendir(options_.dir.c_str());
  if (d == nullptr) return IoError("opendir", options_.dir, errno);
  const std::string temp_prefix = TempPrefix();
  while (dirent* ent = ::readdir(d)) {
    std::string name = ent->d_name;
    uint64_t first = 0;
    if (name.compare(0, temp_prefix.size(), temp_prefix) == 0) {
      std::string path = options_.dir + "/" + name;
      if (::unlink(path.c_str()) == 0) {
        spdlog::warn("checkpoint: removed unfinished snapshot path={}", path);
      } else {
        spdlog::warn("checkpoint: cannot remove unfinished snapshot error=\"{}\"",
                     SysError("unlink", path, errno));
      }
    } else if (ParseSegmentName(name, &first)) {
      segments.emplace_back(first, options_.dir + "/" + name);
    }
  }
  ::closedir(d);
  std::sort(segments.begin(), segments.end());

  core::LoadedState out;
  uint64_t snapshot_seq = 0;
  bool katalyst_snapshot = false;

  // 2. The snapshot.
  struct stat st {};
  if (::stat(snapshot_path_.c_str(), &st) == 0) {
    out.found = true;
    NETQOS_ASSIGN_OR_RETURN(std::string contents,
                            ReadSnapshotFile(snapshot_path_, options_.max_snapshot_bytes));
    NETQOS_ASSIGN_OR_RETURN(ParsedSnapshot parsed,
                            ParseSnapshot(snapshot_path_, contents, options_.skip_corruption));
    out.pod_entries = std::move(parsed.pod_entries);
    out.corruption_skipped = parsed.corruption_skipped;
    out.without_netns = std::move(parsed.without_netns);
    snapshot_seq = parsed.seq;
    katalyst_snapshot = parsed.katalyst;
    if (parsed.katalyst && !segments.empty()) {
      // Katalyst wrote the snapshot after netqos last ran here (a rollback, then a swap back):
      // the journal of that earlier run predates it and would bring back pods Katalyst removed.
      NETQOS_RETURN_IF_ERROR(SetAsideSegments(options_.dir, segments));
      segments.clear();
    }
  } else if (errno != ENOENT) {
    return IoError("stat", snapshot_path_, errno);
  }
  if (!segments.empty()) out.found = true;

  // 3. The journal, in sequence order.
  uint64_t prev = 0;     // sequence number of the previous record
  uint64_t high = 0;     // highest sequence number anywhere on disk (for next_seq_)
  bool stopped = false;  // a corruption was skipped: later records are given up
  uint64_t replayed = 0;
  uint64_t replayed_bytes = 0;
  std::vector<Segment> sealed;
  for (size_t i = 0; i < segments.size(); ++i) {
    const auto& [first_seq, path] = segments[i];
    const bool last_segment = i + 1 == segments.size();
    if (stopped) {
      NETQOS_ASSIGN_OR_RETURN(uint64_t seg_high,
                              HighestSeqIn(path, first_seq, options_.max_journal_line_bytes));
      high = std::max(high, seg_high);
      sealed.push_back({path, 0});
      continue;
    }
    NETQOS_ASSIGN_OR_RETURN(JournalLines lines,
                            JournalLines::Open(path, options_.max_journal_line_bytes));
    uint64_t seg_last = 0;
    uint64_t line_no = 0;
    JournalLines::Line l;
    while (true) {
      NETQOS_ASSIGN_OR_RETURN(bool more, lines.Next(&l));
      if (!more) break;
      ++line_no;
      const std::string& line = l.text;
      const bool too_deep = !l.too_long && JsonTooDeep(line);
      json j = l.too_long || too_deep ? json(json::value_t::discarded)
                                      : json::parse(line, nullptr, false);
      if (l.zero_end && l.length == 0) {
        // A NUL where a record would start: the segment's pre-written zeros, the end of its
        // journal. Whatever lies beyond (in the last segment, records after a run of zeros) is
        // never read, and that loses nothing acknowledged: records are written in sequence order
        // at increasing offsets, and Sync acknowledges seq only after an fdatasync that began
        // once every record up to seq had been written (a segment is flushed whole before the
        // next one is created, or, after a crash, read by Load up to this same place), so the
        // acknowledged records are a prefix of the journal that is on disk whole. A record starts
        // with '{', never a NUL, so the record that should start here never reached the disk: it
        // was not acknowledged, and neither was any later one. (Later bytes can still be on disk:
        // the page cache writes back in any order.) Nothing is truncated: every load stops at the
        // same NUL, and new records go to a new segment.
        break;
      }
      // An over-long line is never a torn write: a torn write is a prefix of a record Append
      // wrote, and Append writes none longer than the limit. So it is corruption, like any other
      // damaged record. A line cut short by a NUL (l.zero_end, so l.last) is a torn write too:
      // part of it did not reach the disk. It is truncated with the zeros after it, which
      // drops any never-acknowledged record beyond them for the reason above.
      if (last_segment && l.last && !l.too_long && (!l.complete || j.is_discarded())) {
        // A write that never returned: it was not acknowledged, so dropping it loses nothing.
        spdlog::warn("checkpoint: dropping torn journal tail path={} line={} bytes={}", path,
                     line_no, l.length);
        Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
        if (!fd) return IoError("open", path, errno);
        const char* failed_call = nullptr;
        if (::ftruncate(fd.get(), static_cast<off_t>(l.offset)) != 0) {
          failed_call = "ftruncate";
        } else if (::fsync(fd.get()) != 0) {
          failed_call = "fsync";
        }
        const int err = errno;
        if (failed_call != nullptr) return IoError(failed_call, path, err);
        break;
      }
      Status bad;
      Result<JournalRecord> rec =
          l.too_long         ? Result<JournalRecord>(InvalidArgument(
                                   "a line of " + std::to_string(l.length) + " bytes is " +
                                   SizeLimitText(options_.max_journal_line_bytes) + " for one record"))
          : too_deep         ? Result<JournalRecord>(InvalidArgument(JsonTooDeepText()))
          : l.zero_end       ? Result<JournalRecord>(InvalidArgument(
                                   "a record cut short by zero bytes in a segment that was "
                                         "flushed whole before the next one was created"))
          : j.is_discarded() ? Result<JournalRecord>(InvalidArgument("not valid JSON"))
                             : DecodeRecord(std::move(j));
      if (!rec.ok()) {
        bad = rec.status();
      } else if (rec->seq <= prev) {
        bad = InvalidArgument("sequence number " + std::to_string(rec->seq) + " does not follow " +
                              std::to_string(prev));
      } else if (rec->seq > snapshot_seq && rec->seq != std::max(prev, snapshot_seq) + 1) {
        bad = InvalidArgument("records " + std::to_string(std::max(prev, snapshot_seq) + 1) +
                              " to " + std::to_string(rec->seq - 1) + " are missing");
      }
      if (!bad.ok()) {
        std::string msg = "journal " + path + ":" + std::to_string(line_no) + ": " + bad.message();
        if (!options_.skip_corruption) return DataLoss(msg + kSkipCorruptionHint);
        spdlog::warn("checkpoint: stopping journal replay at corruption error=\"{}\"", msg);
        out.corruption_skipped = true;
        stopped = true;
        break;
      }
      if (rec->seq > snapshot_seq) {
        ApplyChange(rec->change, &out.pod_entries);
        ++replayed;
        replayed_bytes += line.size() + 1;
      }
      prev = seg_last = rec->seq;
    }
    if (stopped) {
      // Given up with the rest; dropped by the next snapshot, which covers what was loaded.
      NETQOS_ASSIGN_OR_RETURN(uint64_t seg_high,
                              HighestSeqIn(path, first_seq, options_.max_journal_line_bytes));
      high = std::max(high, seg_high);
      sealed.push_back({path, 0});
    } else if (seg_last == 0) {
      // Empty (created just before a crash, or emptied by the torn-tail truncation).
      if (::unlink(path.c_str()) != 0) return IoError("unlink", path, errno);
    } else {
      sealed.push_back({path, seg_last});
    }
  }

  out.snapshot_before_changes = out.corruption_skipped || katalyst_snapshot;
  next_seq_ = std::max({snapshot_seq, prev, high}) + 1;
  written_snapshot_seq_ = snapshot_seq;
  // The journal not yet folded into the snapshot counts towards the next one.
  records_since_snapshot_ = replayed;
  bytes_since_snapshot_ = replayed_bytes;
  sealed_ = std::move(sealed);
  loaded_ = true;
  {
    // What is on disk now counts as durable: every later record starts a group flush of its own.
    std::lock_guard sync_lock(sync_mu_);
    durable_seq_ = next_seq_ - 1;
  }
  spdlog::info(
      "checkpoint: loaded dir={} found={} pods={} snapshot_seq={} next_seq={} segments={} "
      "corruption_skipped={}",
      options_.dir, out.found, out.pod_entries.size(), snapshot_seq, next_seq_, sealed_.size(),
      out.corruption_skipped);
  return out;
}

Status FileStateStore::OpenSegmentLocked(uint64_t min_bytes) {
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
    // next one tries again. Should the unlink not reach the disk, Load removes a segment
    // without records.
    fd.reset();
    ::unlink(path.c_str());
    return Internal(
        "cannot create journal segment " + path + " (" + std::to_string(capacity) +
        " bytes of zeros written ahead of its records), the change is not made: " + st.message());
  }
  segment_fd_ = std::move(fd);
  current_ = Segment{path, 0};
  current_bytes_ = 0;
  current_capacity_ = capacity;
  return Status::Ok();
}

Status FileStateStore::FlushAndSealLocked() {
  // Written records may still wait for their group flush: flush them here (a leader in flight
  // holds its own descriptor), so a sealed segment is durable whole and Sync need not reopen it.
  const bool flushed = ::fdatasync(segment_fd_.get()) == 0;
  const int err = errno;
  segment_fd_.reset();
  sealed_.push_back(current_);
  if (!flushed) {
    failed_ = IoError("fdatasync", current_.path, err);
    std::lock_guard sync_lock(sync_mu_);
    if (sync_failed_.ok()) sync_failed_ = failed_;
    sync_cv_.notify_all();
    return failed_;
  }
  std::lock_guard sync_lock(sync_mu_);
  durable_seq_ = std::max(durable_seq_, current_.last_seq);
  sync_cv_.notify_all();
  return Status::Ok();
}

Status FileStateStore::Append(const core::StateChange& change) {
  NETQOS_ASSIGN_OR_RETURN(uint64_t seq, Write(change));
  return Sync(seq);
}

Result<uint64_t> FileStateStore::Write(const core::StateChange& change) {
  std::lock_guard lock(mu_);
  if (!loaded_)
    return FailedPrecondition("checkpoint store " + options_.dir + ": Append before Load");
  if (!failed_.ok()) return failed_;
  const uint64_t seq = next_seq_;
  const std::string line = EncodeRecord(seq, change);
  if (line.size() - 1 > options_.max_journal_line_bytes) {
    std::string what;
    if (const auto* set = std::get_if<core::SetAllocation>(&change)) {
      what = "pod " + set->info.pod_uid + " container " + set->info.container_name;
    } else {
      what = "removing pod " + std::get<core::RemovePodEntries>(change).pod_uid;
    }
    return InvalidArgument("journal record for " + what + " is " + std::to_string(line.size() - 1) +
                           " bytes, " + SizeLimitText(options_.max_journal_line_bytes) +
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
  ++records_since_snapshot_;
  bytes_since_snapshot_ += line.size();
  return seq;
}

Status FileStateStore::Sync(uint64_t seq) {
  std::unique_lock sync_lock(sync_mu_);
  for (;;) {
    if (!sync_failed_.ok()) return sync_failed_;
    if (durable_seq_ >= seq) return Status::Ok();
    if (syncing_) {
      // Another caller's flush is in flight: it may cover seq; if not, the next one will.
      sync_cv_.wait(sync_lock);
      continue;
    }
    syncing_ = true;
    sync_lock.unlock();
    // Lead one flush for everything written so far. A private descriptor, because
    // BeginSnapshot may seal (and close) the segment meanwhile; a sealed segment was flushed
    // whole before it was closed, so no descriptor means nothing is left to flush.
    uint64_t target = 0;
    Fd fd;
    std::string path;
    Status flushed;
    {
      std::lock_guard lock(mu_);
      target = next_seq_ - 1;
      path = current_.path;
      if (segment_fd_) {
        fd.reset(::fcntl(segment_fd_.get(), F_DUPFD_CLOEXEC, 0));
        if (!fd) flushed = IoError("dup", path, errno);
      }
    }
    const bool had_segment = static_cast<bool>(fd);
    const auto flush_start = std::chrono::steady_clock::now();
    if (fd) {
      if (::fdatasync(fd.get()) != 0) flushed = IoError("fdatasync", path, errno);
      fd.reset();
    }
    const std::chrono::duration<double> flush_time = std::chrono::steady_clock::now() - flush_start;
    if (!flushed.ok()) {
      // After a failed fdatasync the kernel may have dropped the dirty pages and a retry can
      // report success without the data: refuse further changes until a restart reloads.
      std::lock_guard lock(mu_);
      if (failed_.ok()) failed_ = flushed;
    }
    sync_lock.lock();
    syncing_ = false;
    if (had_segment && flushed.ok()) {
      // The records this flush made durable: those above durable_seq_, which a seal
      // (BeginSnapshot) may have moved meanwhile for the records of the segment it flushed.
      flush_stats_.records.Observe(
          static_cast<double>(target > durable_seq_ ? target - durable_seq_ : 0));
      flush_stats_.seconds.Observe(flush_time.count());
    }
    if (flushed.ok()) {
      durable_seq_ = std::max(durable_seq_, target);
    } else if (sync_failed_.ok()) {
      sync_failed_ = flushed;
    }
    sync_cv_.notify_all();
  }
}

core::FlushStats FileStateStore::Flushes() const {
  std::lock_guard sync_lock(sync_mu_);
  return flush_stats_;
}

bool FileStateStore::SnapshotDue() const {
  std::lock_guard lock(mu_);
  return records_since_snapshot_ >= options_.snapshot_every_records ||
         bytes_since_snapshot_ >= options_.snapshot_every_bytes;
}

Result<uint64_t> FileStateStore::BeginSnapshot() {
  std::lock_guard lock(mu_);
  if (!loaded_) {
    return FailedPrecondition("checkpoint store " + options_.dir + ": BeginSnapshot before Load");
  }
  // A segment that holds no record (its first write failed: not for a full disk, which fails
  // the segment's zeros before it is open, but an I/O error over them) stays open:
  // its name is still the next record's seq, and sealing it would leave a file of that name
  // behind (until a snapshot that succeeds removes it), so that the next segment could not be
  // created and every later change would fail.
  if (segment_fd_ && current_.last_seq != 0) NETQOS_RETURN_IF_ERROR(FlushAndSealLocked());
  records_since_snapshot_ = 0;
  bytes_since_snapshot_ = 0;
  return next_seq_ - 1;
}

Status FileStateStore::WriteSnapshotFile(const std::string& contents) {
  const std::string tmp = options_.dir + "/" + TempPrefix() + std::to_string(::getpid()) + "-" +
                          std::to_string(++tmp_counter_);
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) return IoError("open", tmp, errno);
  Status st = AsIoError(WriteAll(fd.get(), contents, tmp));
  if (st.ok() && ::fsync(fd.get()) != 0) st = IoError("fsync", tmp, errno);
  // close() is checked here: some file systems report a failed write-back only there.
  if (::close(fd.release()) != 0 && st.ok()) st = IoError("close", tmp, errno);
  if (st.ok() && ::rename(tmp.c_str(), snapshot_path_.c_str()) != 0) {
    st = Internal("rename(" + tmp + ", " + snapshot_path_ + "): " + std::strerror(errno));
  }
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  // The rename is durable only once the directory is: without this a crash could bring back the
  // file from before a change the kubelet was told had been made.
  return FsyncDir(options_.dir);
}

Status FileStateStore::FinishSnapshot(uint64_t seq, const core::Snapshot& snapshot) {
  try {
    return FinishSnapshotImpl(seq, snapshot);
  } catch (const std::exception& e) {
    return Internal("writing snapshot " + snapshot_path_ + ": " + e.what());
  }
}

Status FileStateStore::FinishSnapshotImpl(uint64_t seq, const core::Snapshot& snapshot) {
  {
    std::lock_guard lock(mu_);
    if (!loaded_) {
      return FailedPrecondition("checkpoint store " + options_.dir +
                                ": FinishSnapshot before Load");
    }
    if (seq >= next_seq_) {
      return InvalidArgument("snapshot seq " + std::to_string(seq) + " is beyond the journal (" +
                             std::to_string(next_seq_ - 1) + ")");
    }
  }
  std::lock_guard snap_lock(snapshot_mu_);
  if (seq < written_snapshot_seq_) {
    // Writing it would lose the changes between seq and the newer snapshot, whose journal is gone.
    return FailedPrecondition("snapshot seq " + std::to_string(seq) +
                              " is older than the snapshot on disk (" +
                              std::to_string(written_snapshot_seq_) + ")");
  }

  // Built and written without mu_: Append keeps journaling into the new segment meanwhile.
  const std::string contents =
      RenderSnapshot(seq, snapshot, options_.katalyst_layout, snapshot_path_);
  if (contents.size() > options_.max_snapshot_bytes) {
    // Load would refuse it as damaged; the journal keeps every change instead.
    return ResourceExhausted(
        "snapshot " + snapshot_path_ + " would be " + std::to_string(contents.size()) + " bytes, " +
        SizeLimitText(options_.max_snapshot_bytes) + "; not written, the journal is kept");
  }
  NETQOS_RETURN_IF_ERROR(WriteSnapshotFile(contents));
  written_snapshot_seq_ = seq;

  // The snapshot is durable: the sealed segments it covers can go.
  std::vector<Segment> covered;
  {
    std::lock_guard lock(mu_);
    auto keep = std::stable_partition(sealed_.begin(), sealed_.end(),
                                      [seq](const Segment& s) { return s.last_seq > seq; });
    covered.assign(keep, sealed_.end());
    sealed_.erase(keep, sealed_.end());
  }
  Status result;
  std::vector<Segment> failed;
  for (const Segment& s : covered) {
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

}  // namespace netqos::checkpoint
