// The journal's records and files: one change per line, with netqos's checksum, in segments
// named by their first sequence number (file_state_store.h describes the layout). Encoding and
// decoding are pure; HighestSeqIn reads a segment that is being given up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "common/status.h"
#include "core/types.h"

namespace netqos::checkpoint {

struct JournalRecord {
  uint64_t seq = 0;
  core::StateChange change;
};

// A segment file and the highest sequence number in it; 0 for a segment given up after a skipped
// corruption, which the next snapshot drops with the segments it covers.
struct JournalSegment {
  std::string path;
  uint64_t last_seq = 0;
};

// "network_plugin_state.wal.<first_seq in 20 digits>".
std::string SegmentFileName(uint64_t first_seq);
// Whether `name` is a segment's file name, and its first sequence number.
bool ParseSegmentName(const std::string& name, uint64_t* first_seq);

// One line, "\n" included: {"seq":n,"op":"set","alloc":{..},"crc":X} or
// {"seq":n,"op":"remove_pod","pod_uid":"..","crc":X}.
std::string EncodeRecord(uint64_t seq, const core::StateChange& change);
// `j` is a parsed line; it is consumed (the crc member is removed to check it). Errors
// (InvalidArgument) name the member that is missing or wrong, or the checksum mismatch.
Result<JournalRecord> DecodeRecord(nlohmann::json j);
// What replaying the record does to the entries.
void ApplyChange(const core::StateChange& change, core::PodEntries* entries);

// Best-effort highest sequence number in a segment that is being given up after a skipped
// corruption, so that new records are numbered after everything on disk. Over-long lines are
// skipped unread, like any other line that does not parse.
Result<uint64_t> HighestSeqIn(const std::string& path, uint64_t first_seq, size_t max_line);

}  // namespace netqos::checkpoint
