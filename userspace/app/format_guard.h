// The rollback guard (common/format_stamp.h): netqosd checks the format stamps of its pin
// directory and state directories before it reads or attaches anything, and stamps them with its
// own once it has opened them. A netqosd rolled back below what a newer one left refuses to
// start, or to uninstall, naming the newer release and the way back.
#pragma once

#include <string>
#include <vector>

#include "app/daemon_config.h"
#include "common/format_stamp.h"
#include "common/status.h"

namespace netqos::app {

// FailedPrecondition when a stamp in --bpf-pin-dir (checked when `pins` is set) or a state
// directory (both, with --qrm-state-dir-in-memory) forbids this build; an unreadable or foreign
// stamp is an error too. Logs stamps of other generations that this build may use.
Status CheckFormatStamps(const DaemonConfig& config, bool pins);

// This build's stamp in the state directory in use, and in the pin directory (which must exist).
// Failures are logged, not fatal: a full disk must not stop a node agent, and an unstamped
// directory is what every netqosd before stamps left.
void StampStateDir(const DaemonConfig& config);
void StampPinDir(const std::string& pin_dir);

// The stamps as they are now, for GetStatus: the pin directory's (when `pins`) and each state
// directory's. Reads only; an unreadable stamp is reported with its error.
std::vector<FormatStampReading> ReadFormatStamps(const DaemonConfig& config, bool pins);

// After --uninstall folded the checkpoint and removed the dataplane: the stamps go (what is left,
// a folded snapshot, every generation reads), so that the way back is open.
Status RemoveStateStamps(const DaemonConfig& config);

}  // namespace netqos::app
