// What a netqosd leaves behind (pinned maps and links, the checkpoint's journal and snapshot, the
// installed-links record) changes from release to release. An older netqosd that meets state it
// does not understand can do harm: attach second copies of its programs, read journal segments
// as corruption, leave programs it never knew attached (docs/upgrades.md). So every netqosd
// stamps the pin directory and the state directory with a format generation, and refuses to
// touch state stamped by a generation it is not allowed to read.
//
// The rule, for whoever changes a format: kFormatGeneration goes up by one with every change to
// what netqosd writes. kFormatMinReader is the oldest generation that still handles what this one
// writes safely (it ignores what it does not know without harm); raise it to kFormatGeneration
// when an older netqosd would do harm. A netqosd refuses state whose min_reader is above its own
// generation, and names the release that wrote it and the way back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"

namespace netqos {

// Generation 1: the first netqosd to stamp its state (pins without the legacy link names, pod
// veth programs, journal segments written over zeros, EDT aggregates).
// Generation 2: socket tags carry a copy of their container's class (netqos_sktag_v2 in place of
// netqos_sktag_v1), and the class map's generation is kept in slot 0 of the carrier array.
// Generation 1 reads it safely: it tags sockets in its own netqos_sktag_v1, never writes or lists
// carrier slot 0, and its --uninstall removes netqos_sktag_v2 as another version of a map it knows.
inline constexpr uint32_t kFormatGeneration = 2;
inline constexpr uint32_t kFormatMinReader = 1;

struct FormatStamp {
  uint32_t generation = 0;
  uint32_t min_reader = 0;
  std::string release;  // "0.1.0+ae75807": who wrote it, for the message; at most 55 bytes
};

// A stamp as read from a directory, for the status report (netqosctl status).
struct FormatStampReading {
  std::string kind;                  // "pin_dir" or "state_dir"
  std::string path;                  // the stamp's pin or file
  std::optional<FormatStamp> stamp;  // nullopt: unstamped, or unreadable (then `error`)
  std::string error;
};

// This build's stamp.
FormatStamp OwnFormatStamp();

// Ok when this build may use state carrying `found`; otherwise FailedPrecondition naming
// `where` (the pin or file it was read from), the release that wrote it and the way back.
Status CheckFormatStamp(const FormatStamp& found, const std::string& where);

}  // namespace netqos
