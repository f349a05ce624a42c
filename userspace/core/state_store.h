// StateStore: the port through which the allocation state is made durable (implemented by the
// checkpoint adapter). Append() journals one change; snapshots are written in two steps so that
// the O(pods) file write happens outside the caller's lock.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/histogram.h"
#include "common/status.h"
#include "core/types.h"

namespace netqos::core {

struct LoadedState {
  bool found = false;               // false: no checkpoint existed (fresh node)
  bool corruption_skipped = false;  // a checksum mismatch was ignored (skip flag)
  PodEntries pod_entries;
  // Entries whose file named no NIC namespace at all (Katalyst v0.5.3 has no ns_name), as
  // (pod uid, container name): their NIC is found by name (core/imported_netns.h).
  std::vector<std::pair<std::string, std::string>> without_netns;
  // A later load would not read back what this one did plus changes journaled after it until a
  // snapshot is written: the snapshot was Katalyst's (the next load sets an older journal
  // aside) or a corruption was skipped (the next load stops at it again and gives up every
  // record after it). The service then writes its start-up snapshot before taking changes;
  // otherwise it may write it in the background, the journal keeping every change meanwhile.
  bool snapshot_before_changes = false;
};

// What a snapshot file records. nics gives each machine-state key its resource identifier.
struct Snapshot {
  PodEntries pod_entries;
  MachineState machine_state;
};

// The journal flushes of group commit so far: how many records each one made durable (how well
// concurrent calls share flushes) and how long each took. Failed flushes are not observed.
struct FlushStats {
  HistogramCounts records;
  HistogramCounts seconds;
};

class StateStore {
 public:
  virtual ~StateStore() = default;
  // Reads the snapshot and replays the journal. Errors name the file.
  virtual Result<LoadedState> Load() = 0;
  // Makes one change durable (fsync) before returning OK.
  virtual Status Append(const StateChange& change) = 0;
  // Group commit, in two steps: Write records one change without waiting for the disk and
  // returns its sequence number (> 0); Sync(seq) returns once every change up to seq is durable,
  // and concurrent callers share one flush. A store without it makes Write durable at once
  // (Append) and returns 0, which Sync treats as nothing to wait for. After a failed Sync the
  // store takes no more changes: the disk may have dropped any of them.
  virtual Result<uint64_t> Write(const StateChange& change) {
    Status st = Append(change);
    if (!st.ok()) return st;
    return uint64_t{0};
  }
  virtual Status Sync(uint64_t /*seq*/) { return Status::Ok(); }
  // A copy of the flush statistics; a store without group commit has none (empty counts).
  virtual FlushStats Flushes() const { return {}; }
  // True when the journal has grown enough that a new snapshot is worth writing.
  virtual bool SnapshotDue() const = 0;
  // Called under the caller's lock: seals the journal so far and returns the sequence number the
  // next snapshot covers. Changes appended afterwards go to a new journal segment.
  virtual Result<uint64_t> BeginSnapshot() = 0;
  // Called outside the caller's lock with the state as of `seq`: writes the snapshot atomically
  // (temp file, fsync, rename, fsync dir) and then removes the journal it covers.
  virtual Status FinishSnapshot(uint64_t seq, const Snapshot& snapshot) = 0;
};

}  // namespace netqos::core
