#include "checkpoint/state_dir_migration.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include "common/durable_file.h"
#include "common/fd.h"
#include "common/log_value.h"
#include "core/constants.h"

namespace netqos::checkpoint {

namespace fs = std::filesystem;

namespace {

// The journal segments' names: the snapshot's, ".wal.", then 20 digits (file_state_store.cc).
constexpr size_t kSegmentDigits = 20;
// In the active directory while a set is being copied in: what is there is not whole yet.
constexpr char kMovingMarker[] = ".network_plugin_state.moving";

struct CheckpointSet {
  std::vector<fs::path> files;
  std::optional<fs::file_time_type> newest;
};

Status Errno(const char* call, const fs::path& path, int err) {
  return Internal(std::string(call) + "(" + path.string() + "): " + std::strerror(err));
}

Result<CheckpointSet> ListSet(const fs::path& dir) {
  CheckpointSet set;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return set;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!IsCheckpointSetFile(it->path().filename().string())) continue;
    if (!it->is_regular_file(ec)) continue;
    fs::file_time_type t = it->last_write_time(ec);
    if (ec) break;
    set.files.push_back(it->path());
    if (!set.newest || t > *set.newest) set.newest = t;
  }
  if (ec) return Internal("listing checkpoint directory " + dir.string() + ": " + ec.message());
  std::sort(set.files.begin(), set.files.end());
  return set;
}

// Copies `from` to `to` (0600, replaced if present) and syncs it.
Status CopySynced(const fs::path& from, const fs::path& to) {
  const Fd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in) return Errno("open", from, errno);
  const Fd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!out) return Errno("open", to, errno);
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(in.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("read", from, errno);
    if (n == 0) break;
    NETQOS_RETURN_IF_ERROR(
        WriteAll(out.get(), std::string_view(buf, static_cast<size_t>(n)), to.string()));
  }
  if (::fsync(out.get()) != 0) return Errno("fsync", to, errno);
  return Status::Ok();
}

Status RemoveSet(const CheckpointSet& set, const fs::path& dir, const char* why) {
  for (const fs::path& f : set.files) {
    std::error_code ec;
    fs::remove(f, ec);
    if (ec) return Internal("removing " + f.string() + ": " + ec.message());
  }
  spdlog::info("checkpoint: removed a set dir={} files={} reason={}", LogValue(dir.string()),
               set.files.size(), LogValue(why));
  return SyncDir(dir);
}

}  // namespace

bool IsCheckpointSetFile(const std::string& name) {
  const std::string snapshot = core::kCheckpointFileName;
  if (name == snapshot) return true;
  const std::string prefix = snapshot + ".wal.";
  if (name.size() != prefix.size() + kSegmentDigits ||
      name.compare(0, prefix.size(), prefix) != 0) {
    return false;
  }
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(prefix.size()), name.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

Status SettleCheckpointDirs(const std::string& active_dir, const std::string& other_dir) {
  const fs::path active(active_dir), other(other_dir);
  std::error_code ec;
  if (fs::exists(active, ec) && fs::exists(other, ec) && fs::equivalent(active, other, ec)) {
    return Status::Ok();
  }
  const fs::path marker = active / kMovingMarker;
  const bool interrupted = fs::exists(marker, ec);
  NETQOS_ASSIGN_OR_RETURN(CheckpointSet theirs, ListSet(other));
  NETQOS_ASSIGN_OR_RETURN(CheckpointSet ours, ListSet(active));
  if (interrupted && theirs.files.empty()) {
    // The move had finished but for removing its marker: ours is whole.
    fs::remove(marker, ec);
    return SyncDir(active);
  }
  if (theirs.files.empty()) return Status::Ok();
  if (!ours.files.empty()) {
    if (!interrupted && *ours.newest >= *theirs.newest) {
      return RemoveSet(theirs, other, "older than the set in the active directory");
    }
    // Theirs is newer, or ours is a copy cut short. Ours goes first; theirs stays whole until
    // the copy is complete.
    NETQOS_RETURN_IF_ERROR(RemoveSet(
        ours, active, interrupted ? "an interrupted move" : "older than the set moved in"));
  }
  fs::create_directories(active, ec);
  if (ec) return Internal("creating checkpoint directory " + active.string() + ": " + ec.message());
  // The marker says "what is here is incomplete" until theirs is gone.
  {
    const Fd fd(::open(marker.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (!fd) return Errno("open", marker, errno);
    NETQOS_RETURN_IF_ERROR(SyncDir(active));
  }
  std::vector<fs::path> copied;
  for (const fs::path& f : theirs.files) {
    const fs::path to = active / f.filename();
    if (Status st = CopySynced(f, to); !st.ok()) {
      for (const fs::path& c : copied) fs::remove(c, ec);
      if (fs::is_regular_file(to, ec)) fs::remove(to, ec);  // a partial copy, not what was there
      fs::remove(marker, ec);
      return st.Wrap("moving the checkpoint from " + other.string() + " to " + active.string() +
                     " (" + other.string() + " still holds it)");
    }
    copied.push_back(to);
  }
  NETQOS_RETURN_IF_ERROR(SyncDir(active));
  spdlog::info("checkpoint: moved a set from={} to={} files={}", LogValue(other.string()),
               LogValue(active.string()), copied.size());
  NETQOS_RETURN_IF_ERROR(RemoveSet(theirs, other, "moved to the active directory"));
  fs::remove(marker, ec);
  if (ec) return Internal("removing " + marker.string() + ": " + ec.message());
  return SyncDir(active);
}

}  // namespace netqos::checkpoint
