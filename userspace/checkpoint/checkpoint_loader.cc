#include "checkpoint/checkpoint_loader.h"

#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "checkpoint/journal_lines.h"
#include "checkpoint/journal_record.h"
#include "checkpoint/own_checksum.h"
#include "checkpoint/snapshot_file.h"
#include "checkpoint/store_io.h"
#include "common/bounded_file.h"
#include "common/fd.h"
#include "common/json_depth.h"
#include "core/constants.h"

namespace netqos::checkpoint {

using nlohmann::json;

namespace {

// A segment file found in the directory, by its first sequence number.
using FoundSegment = std::pair<uint64_t, std::string>;

// Step 1: the journal segments, in sequence order. Temp files left by a crash between a
// snapshot's write and its rename are removed on the way (the snapshot they would have replaced
// is still whole).
Result<std::vector<FoundSegment>> ListSegmentsRemovingTemps(const std::string& dir) {
  std::vector<FoundSegment> segments;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return IoError("opendir", dir, errno);
  const std::string temp_prefix = SnapshotTempPrefix();
  while (dirent* ent = ::readdir(d)) {
    std::string name = ent->d_name;
    uint64_t first = 0;
    if (name.compare(0, temp_prefix.size(), temp_prefix) == 0) {
      std::string path = dir + "/" + name;
      if (::unlink(path.c_str()) == 0) {
        spdlog::warn("checkpoint: removed unfinished snapshot path={}", path);
      } else {
        spdlog::warn("checkpoint: cannot remove unfinished snapshot error=\"{}\"",
                     SysError("unlink", path, errno));
      }
    } else if (ParseSegmentName(name, &first)) {
      segments.emplace_back(first, dir + "/" + name);
    }
  }
  ::closedir(d);
  std::sort(segments.begin(), segments.end());
  return segments;
}

// The snapshot, whole, if it is within `max_bytes`. Netqos never writes a larger one
// (SnapshotWriter refuses), so a larger file is damaged: DataLoss, never skippable, left in place.
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

// Step 2: the snapshot, if there is one.
Result<std::optional<ParsedSnapshot>> ReadSnapshot(const std::string& path,
                                                   const CheckpointLoadOptions& options) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::optional<ParsedSnapshot>();
    return IoError("stat", path, errno);
  }
  NETQOS_ASSIGN_OR_RETURN(std::string contents, ReadSnapshotFile(path, options.max_snapshot_bytes));
  NETQOS_ASSIGN_OR_RETURN(ParsedSnapshot parsed,
                          ParseSnapshot(path, contents, options.skip_corruption));
  return std::optional<ParsedSnapshot>(std::move(parsed));
}

// Renames journal segments out of the set (they no longer parse as segments), for an operator
// to inspect; nothing is deleted.
Status SetAsideSegments(const std::string& dir, const std::vector<FoundSegment>& segments) {
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

// A journal line parsed, unless it is too long or too deep to be parsed at all (then `doc` is
// discarded, as for text that is not JSON).
struct ParsedLine {
  json doc;
  bool too_deep = false;
};

ParsedLine ParseLine(const JournalLines::Line& l) {
  ParsedLine out;
  out.too_deep = !l.too_long && JsonTooDeep(l.text);
  out.doc = l.too_long || out.too_deep ? json(json::value_t::discarded)
                                       : json::parse(l.text, nullptr, false);
  return out;
}

// The record a line holds, or what is wrong with it (InvalidArgument).
Result<JournalRecord> RecordOf(const JournalLines::Line& l, ParsedLine parsed, size_t max_bytes) {
  if (l.too_long) {
    return InvalidArgument("a line of " + std::to_string(l.length) + " bytes is " +
                           SizeLimitText(max_bytes) + " for one record");
  }
  if (parsed.too_deep) return InvalidArgument(JsonTooDeepText());
  if (l.zero_end) {
    return InvalidArgument(
        "a record cut short by zero bytes in a segment that was flushed whole before the next one "
        "was created");
  }
  if (parsed.doc.is_discarded()) return InvalidArgument("not valid JSON");
  return DecodeRecord(std::move(parsed.doc));
}

// Records follow one another without a gap once past the snapshot; below it, the journal may
// still hold records the snapshot already has.
Status CheckOrder(uint64_t seq, uint64_t prev, uint64_t snapshot_seq) {
  if (seq <= prev) {
    return InvalidArgument("sequence number " + std::to_string(seq) + " does not follow " +
                           std::to_string(prev));
  }
  const uint64_t expected = std::max(prev, snapshot_seq) + 1;
  if (seq > snapshot_seq && seq != expected) {
    return InvalidArgument("records " + std::to_string(expected) + " to " +
                           std::to_string(seq - 1) + " are missing");
  }
  return Status::Ok();
}

// Cuts a torn write off the end of a segment, durably.
Status TruncateTornTail(const std::string& path, uint64_t offset) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return IoError("open", path, errno);
  if (::ftruncate(fd.get(), static_cast<off_t>(offset)) != 0) {
    return IoError("ftruncate", path, errno);
  }
  if (::fsync(fd.get()) != 0) return IoError("fsync", path, errno);
  return Status::Ok();
}

// Step 3: the journal replayed over the snapshot's entries, segment by segment.
class JournalReplay {
 public:
  JournalReplay(const CheckpointLoadOptions& options, uint64_t snapshot_seq, core::LoadedState* out)
      : options_(options), snapshot_seq_(snapshot_seq), out_(out) {}

  Status Segment(uint64_t first_seq, const std::string& path, bool last_segment) {
    if (stopped_) return GiveUp(first_seq, path);
    uint64_t seg_last = 0;
    NETQOS_RETURN_IF_ERROR(Records(path, last_segment, &seg_last));
    if (stopped_) return GiveUp(first_seq, path);
    if (seg_last == 0) {
      // Empty (created just before a crash, or emptied by the torn-tail truncation).
      if (::unlink(path.c_str()) != 0) return IoError("unlink", path, errno);
      return Status::Ok();
    }
    resume_.segments.push_back({path, seg_last});
    return Status::Ok();
  }

  JournalResume Finish() && {
    resume_.next_seq = std::max({snapshot_seq_, prev_, high_}) + 1;
    return std::move(resume_);
  }

 private:
  // A segment at or after a skipped corruption: its records are given up, and it is dropped by
  // the next snapshot, which covers what was loaded. New records are numbered after its highest.
  Status GiveUp(uint64_t first_seq, const std::string& path) {
    NETQOS_ASSIGN_OR_RETURN(uint64_t seg_high,
                            HighestSeqIn(path, first_seq, options_.max_journal_line_bytes));
    high_ = std::max(high_, seg_high);
    resume_.segments.push_back({path, 0});
    return Status::Ok();
  }

  // Applies the segment's records; *seg_last is the last one read (0 for none).
  Status Records(const std::string& path, bool last_segment, uint64_t* seg_last) {
    NETQOS_ASSIGN_OR_RETURN(JournalLines lines,
                            JournalLines::Open(path, options_.max_journal_line_bytes));
    uint64_t line_no = 0;
    JournalLines::Line l;
    while (true) {
      NETQOS_ASSIGN_OR_RETURN(bool more, lines.Next(&l));
      if (!more) return Status::Ok();
      ++line_no;
      if (l.zero_end && l.length == 0) {
        // A NUL where a record would start: the segment's pre-written zeros, the end of its
        // journal. Whatever lies beyond (in the last segment, records after a run of zeros) is
        // never read, and that loses nothing acknowledged: records are written in sequence order
        // at increasing offsets, and Sync acknowledges seq only after an fdatasync that began
        // once every record up to seq had been written (a segment is flushed whole before the
        // next one is created, or, after a crash, read by the load up to this same place), so
        // the acknowledged records are a prefix of the journal that is on disk whole. A record
        // starts with '{', never a NUL, so the record that should start here never reached the
        // disk: it was not acknowledged, and neither was any later one. (Later bytes can still be
        // on disk: the page cache writes back in any order.) Nothing is truncated: every load
        // stops at the same NUL, and new records go to a new segment.
        return Status::Ok();
      }
      ParsedLine parsed = ParseLine(l);
      // An over-long line is never a torn write: a torn write is a prefix of a record the writer
      // wrote, and it writes none longer than the limit. So it is corruption, like any other
      // damaged record. A line cut short by a NUL (l.zero_end, so l.last) is a torn write too:
      // part of it did not reach the disk. It is truncated with the zeros after it, which
      // drops any never-acknowledged record beyond them for the reason above.
      if (last_segment && l.last && !l.too_long && (!l.complete || parsed.doc.is_discarded())) {
        // A write that never returned: it was not acknowledged, so dropping it loses nothing.
        spdlog::warn("checkpoint: dropping torn journal tail path={} line={} bytes={}", path,
                     line_no, l.length);
        return TruncateTornTail(path, l.offset);
      }
      Result<JournalRecord> rec = RecordOf(l, std::move(parsed), options_.max_journal_line_bytes);
      Status bad = rec.ok() ? CheckOrder(rec->seq, prev_, snapshot_seq_) : rec.status();
      if (!bad.ok()) {
        std::string msg = "journal " + path + ":" + std::to_string(line_no) + ": " + bad.message();
        if (!options_.skip_corruption) return DataLoss(msg + kSkipCorruptionHint);
        spdlog::warn("checkpoint: stopping journal replay at corruption error=\"{}\"", msg);
        out_->corruption_skipped = true;
        stopped_ = true;
        return Status::Ok();
      }
      if (rec->seq > snapshot_seq_) {
        ApplyChange(rec->change, &out_->pod_entries);
        ++resume_.records_since_snapshot;
        resume_.bytes_since_snapshot += l.text.size() + 1;
      }
      prev_ = *seg_last = rec->seq;
    }
  }

  const CheckpointLoadOptions& options_;
  const uint64_t snapshot_seq_;
  core::LoadedState* out_;
  JournalResume resume_;
  uint64_t prev_ = 0;     // sequence number of the previous record
  uint64_t high_ = 0;     // highest sequence number in a given-up segment
  bool stopped_ = false;  // a corruption was skipped: later records are given up
};

}  // namespace

Result<LoadedCheckpoint> LoadCheckpointDir(const CheckpointLoadOptions& options) {
  NETQOS_ASSIGN_OR_RETURN(std::vector<FoundSegment> segments,
                          ListSegmentsRemovingTemps(options.dir));

  LoadedCheckpoint out;
  const std::string snapshot_path = options.dir + "/" + core::kCheckpointFileName;
  NETQOS_ASSIGN_OR_RETURN(std::optional<ParsedSnapshot> snapshot,
                          ReadSnapshot(snapshot_path, options));
  bool katalyst_snapshot = false;
  if (snapshot.has_value()) {
    out.state.found = true;
    out.state.pod_entries = std::move(snapshot->pod_entries);
    out.state.corruption_skipped = snapshot->corruption_skipped;
    out.state.without_netns = std::move(snapshot->without_netns);
    out.snapshot_seq = snapshot->seq;
    katalyst_snapshot = snapshot->katalyst;
    if (katalyst_snapshot && !segments.empty()) {
      // Katalyst wrote the snapshot after netqos last ran here (a rollback, then a swap back):
      // the journal of that earlier run predates it and would bring back pods Katalyst removed.
      NETQOS_RETURN_IF_ERROR(SetAsideSegments(options.dir, segments));
      segments.clear();
    }
  }
  if (!segments.empty()) out.state.found = true;

  JournalReplay replay(options, out.snapshot_seq, &out.state);
  for (size_t i = 0; i < segments.size(); ++i) {
    const auto& [first_seq, path] = segments[i];
    NETQOS_RETURN_IF_ERROR(replay.Segment(first_seq, path, i + 1 == segments.size()));
  }
  out.journal = std::move(replay).Finish();
  out.state.snapshot_before_changes = out.state.corruption_skipped || katalyst_snapshot;
  return out;
}

}  // namespace netqos::checkpoint
