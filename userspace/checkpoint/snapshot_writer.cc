#include "checkpoint/snapshot_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "checkpoint/snapshot_file.h"
#include "checkpoint/store_io.h"
#include "common/bounded_file.h"
#include "common/durable_file.h"
#include "common/fd.h"
#include "core/constants.h"

namespace netqos::checkpoint {

SnapshotWriter::SnapshotWriter(Options options, uint64_t on_disk_seq)
    : options_(std::move(options)),
      path_(options_.dir + "/" + core::kCheckpointFileName),
      on_disk_seq_(on_disk_seq) {}

bool SnapshotWriter::Due(uint64_t records, uint64_t bytes) const {
  return records >= options_.every_records || bytes >= options_.every_bytes;
}

Status SnapshotWriter::Write(uint64_t seq, const core::Snapshot& snapshot) {
  std::lock_guard lock(mu_);
  if (seq < on_disk_seq_) {
    // Writing it would lose the changes between seq and the newer snapshot, whose journal is gone.
    return FailedPrecondition("snapshot seq " + std::to_string(seq) +
                              " is older than the snapshot on disk (" +
                              std::to_string(on_disk_seq_) + ")");
  }
  const std::string contents = RenderSnapshot(seq, snapshot, options_.katalyst_layout, path_);
  if (contents.size() > options_.max_bytes) {
    // The loader would refuse it as damaged; the journal keeps every change instead.
    return ResourceExhausted("snapshot " + path_ + " would be " + std::to_string(contents.size()) +
                             " bytes, " + SizeLimitText(options_.max_bytes) +
                             "; not written, the journal is kept");
  }
  NETQOS_RETURN_IF_ERROR(ReplaceFile(contents));
  on_disk_seq_ = seq;
  return Status::Ok();
}

Status SnapshotWriter::ReplaceFile(const std::string& contents) {
  const std::string tmp = options_.dir + "/" + SnapshotTempPrefix() + std::to_string(::getpid()) +
                          "-" + std::to_string(++tmp_counter_);
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) return IoError("open", tmp, errno);
  Status st = AsIoError(WriteAll(fd.get(), contents, tmp));
  if (st.ok() && ::fsync(fd.get()) != 0) st = IoError("fsync", tmp, errno);
  // close() is checked here: some file systems report a failed write-back only there.
  if (::close(fd.release()) != 0 && st.ok()) st = IoError("close", tmp, errno);
  if (st.ok() && ::rename(tmp.c_str(), path_.c_str()) != 0) {
    st = Internal("rename(" + tmp + ", " + path_ + "): " + std::strerror(errno));
  }
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  // The rename is durable only once the directory is: without this a crash could bring back the
  // file from before a change the kubelet was told had been made.
  return FsyncDir(options_.dir);
}

}  // namespace netqos::checkpoint
