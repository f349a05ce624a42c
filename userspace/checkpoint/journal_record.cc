#include "checkpoint/journal_record.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>
#include <variant>

#include "checkpoint/allocation_json.h"
#include "checkpoint/journal_lines.h"
#include "checkpoint/own_checksum.h"
#include "common/json_depth.h"
#include "core/constants.h"

namespace netqos::checkpoint {

using nlohmann::json;

namespace {

std::string SegmentPrefix() { return std::string(core::kCheckpointFileName) + ".wal."; }

}  // namespace

std::string SegmentFileName(uint64_t first_seq) {
  const std::string digits = std::to_string(first_seq);
  return SegmentPrefix() + std::string(20 - digits.size(), '0') + digits;
}

bool ParseSegmentName(const std::string& name, uint64_t* first_seq) {
  const std::string prefix = SegmentPrefix();
  if (name.size() != prefix.size() + 20 || name.compare(0, prefix.size(), prefix) != 0) {
    return false;
  }
  uint64_t v = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    char c = name[i];
    if (c < '0' || c > '9') return false;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - digit) / 10) return false;
    v = v * 10 + digit;
  }
  *first_seq = v;
  return true;
}

std::string EncodeRecord(uint64_t seq, const core::StateChange& change) {
  json j;
  j["seq"] = seq;
  if (const auto* set = std::get_if<core::SetAllocation>(&change)) {
    j["op"] = "set";
    j["alloc"] = AllocationToJson(set->info);
  } else {
    j["op"] = "remove_pod";
    j["pod_uid"] = std::get<core::RemovePodEntries>(change).pod_uid;
  }
  j["crc"] = Fnv1a64(CanonicalDump(j));
  return CanonicalDump(j) + "\n";
}

Result<JournalRecord> DecodeRecord(json j) {
  if (!j.is_object())
    return InvalidArgument(std::string("expected an object, got ") + j.type_name());
  auto crc_it = j.find("crc");
  if (crc_it == j.end() || !crc_it->is_number_unsigned()) {
    return InvalidArgument("missing or malformed crc");
  }
  uint64_t crc = crc_it->get<uint64_t>();
  j.erase(crc_it);
  uint64_t computed = Fnv1a64(CanonicalDump(j));
  if (crc != computed) {
    return InvalidArgument("crc mismatch (stored " + std::to_string(crc) + ", computed " +
                           std::to_string(computed) + ")");
  }
  JournalRecord rec;
  auto seq_it = j.find("seq");
  if (seq_it == j.end() || !seq_it->is_number_unsigned() || seq_it->get<uint64_t>() == 0) {
    return InvalidArgument("missing or malformed seq");
  }
  rec.seq = seq_it->get<uint64_t>();
  auto op_it = j.find("op");
  std::string op = op_it != j.end() && op_it->is_string() ? op_it->get<std::string>() : "";
  if (op == "set") {
    auto alloc_it = j.find("alloc");
    if (alloc_it == j.end()) return InvalidArgument("set record without alloc");
    NETQOS_ASSIGN_OR_RETURN(core::AllocationInfo info, AllocationFromJson(*alloc_it, "alloc"));
    rec.change = core::SetAllocation{std::move(info)};
  } else if (op == "remove_pod") {
    auto uid_it = j.find("pod_uid");
    if (uid_it == j.end() || !uid_it->is_string()) {
      return InvalidArgument("remove_pod record without a string pod_uid");
    }
    rec.change = core::RemovePodEntries{uid_it->get<std::string>()};
  } else {
    return InvalidArgument("unknown op \"" + op + "\"");
  }
  return rec;
}

void ApplyChange(const core::StateChange& change, core::PodEntries* entries) {
  if (const auto* set = std::get_if<core::SetAllocation>(&change)) {
    (*entries)[set->info.pod_uid][set->info.container_name] = set->info;
  } else {
    entries->erase(std::get<core::RemovePodEntries>(change).pod_uid);
  }
}

Result<uint64_t> HighestSeqIn(const std::string& path, uint64_t first_seq, size_t max_line) {
  uint64_t high = first_seq;
  NETQOS_ASSIGN_OR_RETURN(JournalLines lines, JournalLines::Open(path, max_line));
  JournalLines::Line line;
  while (true) {
    NETQOS_ASSIGN_OR_RETURN(bool more, lines.Next(&line));
    if (!more) break;
    if (line.too_long || JsonTooDeep(line.text)) continue;
    json j = json::parse(line.text, nullptr, false);
    if (j.is_object()) {
      auto it = j.find("seq");
      if (it != j.end() && it->is_number_unsigned()) high = std::max(high, it->get<uint64_t>());
    }
  }
  return high;
}

}  // namespace netqos::checkpoint
