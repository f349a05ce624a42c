#include "checkpoint/file_state_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <exception>
#include <utility>

#include "checkpoint/checkpoint_loader.h"
#include "checkpoint/journal_record.h"
#include "checkpoint/store_io.h"
#include "core/constants.h"

namespace netqos::checkpoint {

namespace {

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

// One writer per directory: a second netqosd (or `netqosd --uninstall` folding the journal while
// the daemon runs) would interleave snapshots and journal segments with the first's. The lock is
// on the directory itself, so no file is added next to Katalyst's checkpoint, and the kernel drops
// it when the process dies.
Result<Fd> LockDir(const std::string& dir) {
  Fd lock_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!lock_fd) return IoError("open", dir, errno);
  if (::flock(lock_fd.get(), LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err == EWOULDBLOCK) {
      return FailedPrecondition("checkpoint directory " + dir +
                                " is in use by another netqosd process (it holds the directory's "
                                "lock); stop that one first");
    }
    return IoError("flock", dir, err);
  }
  return lock_fd;
}

}  // namespace

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
  std::lock_guard lock(load_mu_);
  if (loaded_.load(std::memory_order_acquire)) {
    return FailedPrecondition("checkpoint store " + options_.dir + " already loaded");
  }
  NETQOS_ASSIGN_OR_RETURN(dir_lock_fd_, LockDir(options_.dir));

  CheckpointLoadOptions load_options;
  load_options.dir = options_.dir;
  load_options.skip_corruption = options_.skip_corruption;
  load_options.max_journal_line_bytes = options_.max_journal_line_bytes;
  load_options.max_snapshot_bytes = options_.max_snapshot_bytes;
  NETQOS_ASSIGN_OR_RETURN(LoadedCheckpoint loaded, LoadCheckpointDir(load_options));

  const uint64_t next_seq = loaded.journal.next_seq;
  JournalWriter::Options journal_options;
  journal_options.dir = options_.dir;
  journal_options.max_line_bytes = options_.max_journal_line_bytes;
  journal_options.segment_bytes = options_.segment_bytes;
  journal_ = std::make_unique<JournalWriter>(std::move(journal_options), std::move(loaded.journal));
  SnapshotWriter::Options snapshot_options;
  snapshot_options.dir = options_.dir;
  snapshot_options.every_records = options_.snapshot_every_records;
  snapshot_options.every_bytes = options_.snapshot_every_bytes;
  snapshot_options.katalyst_layout = options_.katalyst_layout;
  snapshot_options.max_bytes = options_.max_snapshot_bytes;
  snapshots_ = std::make_unique<SnapshotWriter>(std::move(snapshot_options), loaded.snapshot_seq);
  loaded_.store(true, std::memory_order_release);

  spdlog::info(
      "checkpoint: loaded dir={} found={} pods={} snapshot_seq={} next_seq={} segments={} "
      "corruption_skipped={}",
      options_.dir, loaded.state.found, loaded.state.pod_entries.size(), loaded.snapshot_seq,
      next_seq, journal_->SealedSegments(), loaded.state.corruption_skipped);
  return std::move(loaded.state);
}

Status FileStateStore::Append(const core::StateChange& change) {
  NETQOS_ASSIGN_OR_RETURN(uint64_t seq, Write(change));
  return Sync(seq);
}

Result<uint64_t> FileStateStore::Write(const core::StateChange& change) {
  if (!loaded_.load(std::memory_order_acquire)) {
    return FailedPrecondition("checkpoint store " + options_.dir + ": Append before Load");
  }
  return journal_->Write(change);
}

Status FileStateStore::Sync(uint64_t seq) {
  if (!loaded_.load(std::memory_order_acquire)) {
    // Nothing was written before Load, so only "nothing to wait for" can be answered.
    if (seq == 0) return Status::Ok();
    return FailedPrecondition("checkpoint store " + options_.dir + ": Sync before Load");
  }
  return journal_->Sync(seq);
}

core::FlushStats FileStateStore::Flushes() const {
  if (!loaded_.load(std::memory_order_acquire)) {
    return {HistogramCounts(FlushRecordBounds()), HistogramCounts(LatencyBounds())};
  }
  return journal_->Flushes();
}

bool FileStateStore::SnapshotDue() const {
  if (!loaded_.load(std::memory_order_acquire)) return false;
  const JournalWriter::Backlog backlog = journal_->SinceCut();
  return snapshots_->Due(backlog.records, backlog.bytes);
}

Result<uint64_t> FileStateStore::BeginSnapshot() {
  if (!loaded_.load(std::memory_order_acquire)) {
    return FailedPrecondition("checkpoint store " + options_.dir + ": BeginSnapshot before Load");
  }
  return journal_->Cut();
}

Status FileStateStore::FinishSnapshot(uint64_t seq, const core::Snapshot& snapshot) {
  try {
    return FinishSnapshotImpl(seq, snapshot);
  } catch (const std::exception& e) {
    return Internal("writing snapshot " + snapshot_path_ + ": " + e.what());
  }
}

Status FileStateStore::FinishSnapshotImpl(uint64_t seq, const core::Snapshot& snapshot) {
  if (!loaded_.load(std::memory_order_acquire)) {
    return FailedPrecondition("checkpoint store " + options_.dir + ": FinishSnapshot before Load");
  }
  const uint64_t last = journal_->LastSeq();
  if (seq > last) {
    return InvalidArgument("snapshot seq " + std::to_string(seq) + " is beyond the journal (" +
                           std::to_string(last) + ")");
  }
  // Written while Write keeps journaling into the new segment; then the journal it covers goes.
  NETQOS_RETURN_IF_ERROR(snapshots_->Write(seq, snapshot));
  return journal_->DropCoveredBy(seq);
}

}  // namespace netqos::checkpoint
