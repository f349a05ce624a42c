// --qrm-enable-in-memory-state keeps the checkpoint in a tmpfs directory instead of the disk one;
// the mode can be turned on and off, and a reboot empties the tmpfs. Before each start the
// checkpoint files (the snapshot and its journal segments, file_state_store.h) are settled into
// the directory the mode uses, so that exactly one set remains:
//
//   only the other directory has a set   it moves over (copied, synced, then removed there):
//                                        the mode was just turned on, or off
//   both have one                        the one written last (newest file) wins; the other is
//                                        removed
//   neither, or only the active one      nothing to do
//
// A move cut short (a crash, a full tmpfs) leaves the source whole and a marker next to the
// partial copy, which the next start discards before moving again.
//
// The set is never left in two places, so after a reboot a tmpfs that lost its set does not bring
// back the disk's: that one was removed when the mode took it (the state Katalyst HEAD's
// two-way migration also reaches). Files that are not part of the set are never touched.
#pragma once

#include <string>

#include "common/status.h"

namespace netqos::checkpoint {

// Whether `name` (a file name, no directory) belongs to a checkpoint set.
bool IsCheckpointSetFile(const std::string& name);

// Settles the checkpoint into `active` (created if missing) from `other`, as above. An error
// (a copy that failed: tmpfs full) leaves `other`'s set whole and names the file.
Status SettleCheckpointDirs(const std::string& active, const std::string& other);

}  // namespace netqos::checkpoint
