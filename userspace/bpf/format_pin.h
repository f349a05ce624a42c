// The pin directory's format stamp (common/format_stamp.h): a one-entry array map pinned as
// NETQOS_PIN_FORMAT, read by no program, whose layout never changes so that every release can
// read it. An older netqosd then refuses a pin directory a newer one left in a state it would
// mishandle (links under other names, programs on veths it does not know).
#pragma once

#include <optional>
#include <string>

#include "common/format_stamp.h"
#include "common/status.h"

namespace netqos::bpf {

// The stamp pinned in pin_dir; nullopt when there is none (no directory, no pin: nothing
// stamped it, or a netqosd from before stamps). A pin of that name that is not a stamp is an
// error naming it.
Result<std::optional<FormatStamp>> ReadFormatPin(const std::string& pin_dir);

// Writes `stamp` into the pin (created and pinned when missing; pin_dir must exist).
Status WriteFormatPin(const std::string& pin_dir, const FormatStamp& stamp);

}  // namespace netqos::bpf
