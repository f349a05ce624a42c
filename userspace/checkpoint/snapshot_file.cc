#include "checkpoint/snapshot_file.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "checkpoint/allocation_json.h"
#include "checkpoint/own_checksum.h"
#include "common/json_depth.h"
#include "core/constants.h"

namespace netqos::checkpoint {

using nlohmann::json;

namespace {

// 1: "checksum" is netqos's own FNV-1a 64 (read, no longer written). 2: "checksum" is Katalyst's,
// for the layout named in netqos.katalyst_layout, and netqos's own is netqos.checksum.
constexpr uint64_t kSnapshotFormat = 2;
constexpr uint64_t kOldestSnapshotFormat = 1;

// A file without the "netqos" member was written by Katalyst, whose checksum depends on the Go
// types of the Katalyst release that wrote it: it verifies if either known layout reproduces
// the stored value. Returns "" when it does, else the mismatch to report.
std::string VerifyKatalystChecksum(const std::string& path, const json& doc, uint64_t stored) {
  std::string tried;
  for (KatalystLayout layout : {KatalystLayout::kV053, KatalystLayout::kHead}) {
    Result<uint32_t> sum = KatalystChecksum(doc, layout);
    if (sum.ok() && sum.value() == stored) {
      spdlog::info("checkpoint: Katalyst checksum verified path={} layout={} checksum={}", path,
                   KatalystLayoutName(layout), stored);
      return "";
    }
    tried += std::string("; ") + KatalystLayoutName(layout) + ": ";
    // A layout the document does not decode as could not have written it.
    tried += sum.ok() ? "computed " + std::to_string(sum.value())
                      : "does not decode (" + sum.status().message() + ")";
  }
  return "checkpoint " + path + " was written by Katalyst and its Katalyst checksum did not " +
         "match (stored " + std::to_string(stored) + tried + ")";
}

// Decimal digits at *pos (at least one), *pos moved past them.
bool ReadDigits(std::string_view text, size_t* pos, uint64_t* value) {
  uint64_t v = 0;
  const size_t start = *pos;
  for (; *pos < text.size() && text[*pos] >= '0' && text[*pos] <= '9'; ++*pos) {
    const uint64_t digit = static_cast<uint64_t>(text[*pos] - '0');
    if (v > (UINT64_MAX - digit) / 10) return false;
    v = v * 10 + digit;
  }
  *value = v;
  return *pos > start;
}

// The members of a format-2 snapshot found in its text.
struct OwnSnapshotText {
  std::string_view pod_entries;  // the member's value
  uint64_t seq = 0;
  std::string policy;
};

// A format-2 snapshot exactly as FinishSnapshot wrote it, checked on its bytes. CanonicalDump()
// sorts keys, so such a file is {"checksum":K,"machineState":..,"netqos":{"checksum":C,"format":2,
// "katalyst_layout":"..","seq":S},"pod_entries":..,"policyName":".."}, and C is the FNV-1a of
// these very bytes without `"checksum":K,` and `"checksum":C,` (the dump C was computed on). When
// that holds, the file is byte for byte one netqos wrote (up to FNV collisions, as for the check
// on the parsed document), so where each member lies is known: the load parses pod_entries and
// neither the machine state (a copy of pod_entries by NIC, rendered by netqos, so well-formed)
// nor a re-dump of the document to hash it, which at 10,000 containers is most of the time a
// start takes before it can serve. Anything else (Katalyst's files, format 1, a file rewritten
// by a tool, damage): nullopt, and the document is parsed and checked whole.
std::optional<OwnSnapshotText> MatchOwnSnapshot(std::string_view text) {
  constexpr std::string_view kHead = "{\"checksum\":";
  constexpr std::string_view kNetqos = ",\"netqos\":{\"checksum\":";
  constexpr std::string_view kPodEntries = ",\"pod_entries\":";
  constexpr std::string_view kPolicy = ",\"policyName\":";
  if (text.substr(0, kHead.size()) != kHead) return std::nullopt;
  size_t pos = kHead.size();
  uint64_t value = 0;
  if (!ReadDigits(text, &pos, &value) || pos >= text.size() || text[pos] != ',') {
    return std::nullopt;
  }
  const size_t body = pos + 1;  // what follows "checksum":K,
  // Only the top-level member can match: elsewhere a "netqos" key holds a pod's containers or is
  // a label, never an object whose first member is a number.
  const size_t netqos = text.find(kNetqos, body);
  if (netqos == std::string_view::npos) return std::nullopt;
  const size_t own_at = netqos + kNetqos.size() - std::string_view("\"checksum\":").size();
  pos = netqos + kNetqos.size();
  uint64_t own = 0;
  if (!ReadDigits(text, &pos, &own) || pos >= text.size() || text[pos] != ',') {
    return std::nullopt;
  }
  const size_t after_own = pos + 1;
  uint64_t h = Fnv1a64("{");
  h = Fnv1a64(text.substr(body, own_at - body), h);
  h = Fnv1a64(text.substr(after_own), h);
  if (h != own) return std::nullopt;

  // The rest of the netqos member is flat: numbers and the layout's flag value.
  const size_t close = text.find('}', after_own);
  if (close == std::string_view::npos) return std::nullopt;
  const json meta =
      json::parse("{" + std::string(text.substr(after_own, close + 1 - after_own)), nullptr, false);
  if (!meta.is_object()) return std::nullopt;
  auto format = meta.find("format");
  auto seq = meta.find("seq");
  if (format == meta.end() || !format->is_number_unsigned() ||
      format->get<uint64_t>() != kSnapshotFormat || seq == meta.end() ||
      !seq->is_number_unsigned()) {
    return std::nullopt;
  }
  if (text.substr(close + 1, kPodEntries.size()) != kPodEntries) return std::nullopt;
  const size_t entries_at = close + 1 + kPodEntries.size();
  const size_t policy_at = text.rfind(kPolicy);
  if (policy_at == std::string_view::npos || policy_at < entries_at) return std::nullopt;
  const json policy = json::parse("{" + std::string(text.substr(policy_at + 1)), nullptr, false);
  if (!policy.is_object() || policy.size() != 1 || !policy.begin()->is_string()) {
    return std::nullopt;
  }
  OwnSnapshotText out;
  out.pod_entries = text.substr(entries_at, policy_at - entries_at);
  out.seq = seq->get<uint64_t>();
  out.policy = policy.begin()->get<std::string>();
  return out;
}

// Another policy's checkpoint is refused, or loaded with skip (its entries as they are).
Status CheckPolicy(const std::string& path, const std::string& policy, bool skip) {
  if (policy == core::kPolicyName) return Status::Ok();
  if (!skip) {
    return FailedPrecondition("checkpoint " + path + " was written by policy \"" + policy +
                              "\" but the configured policy is \"" + core::kPolicyName + "\"");
  }
  spdlog::warn("checkpoint: ignoring policy mismatch path={} checkpoint_policy=\"{}\" policy={}",
               path, policy, core::kPolicyName);
  return Status::Ok();
}

// Fills out.without_netns from a parsed pod_entries member.
void FindEntriesWithoutNetns(const json& pod_entries, ParsedSnapshot* out) {
  if (!pod_entries.is_object()) return;
  for (const auto& [uid, containers] : pod_entries.items()) {
    for (const auto& [name, entry] : containers.items()) {
      if (!entry.contains("ns_name")) out->without_netns.emplace_back(uid, name);
    }
  }
}

// Katalyst's checksum of `doc` as it reads back from `dump`, its CanonicalDump. The dump replaces
// invalid UTF-8 with U+FFFD, which the document still holds, so such a document is hashed as it
// parses back from the dump. When the dump holds no U+FFFD at all, nothing was replaced and
// reading it back gives `doc` again (strings, keys and integers round-trip; the renderer takes a
// non-negative integer signed or unsigned alike): `doc` is hashed as it is. That spares a second
// parsed copy of the whole document, about 40 MB at 10,000 containers.
Result<uint32_t> KatalystChecksumOfDump(const json& doc, std::string_view dump,
                                        KatalystLayout layout) {
  constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD in UTF-8
  if (dump.find(kReplacement) == std::string_view::npos) return KatalystChecksum(doc, layout);
  return KatalystChecksum(json::parse(dump), layout);
}

}  // namespace

Result<ParsedSnapshot> ParseSnapshot(const std::string& path, const std::string& contents,
                                     bool skip) {
  // Malformed JSON is never skippable: the file is left untouched for inspection.
  const std::string malformed = "checkpoint " + path + " is malformed and was left in place: ";
  if (JsonTooDeep(contents)) return DataLoss(malformed + JsonTooDeepText());
  if (auto own = MatchOwnSnapshot(contents)) {
    ParsedSnapshot out;
    // False is not expected of bytes netqos wrote; if it happens, the whole check below says what
    // is wrong.
    if (PodEntriesFromOwnText(own->pod_entries, &out.pod_entries, &out.without_netns)) {
      out.seq = own->seq;
      NETQOS_RETURN_IF_ERROR(CheckPolicy(path, own->policy, skip));
      return out;
    }
  }
  json doc;
  try {
    doc = json::parse(contents);
  } catch (const json::exception& e) {
    return DataLoss(malformed + e.what());
  }
  if (!doc.is_object()) return DataLoss(malformed + "expected an object, got " + doc.type_name());

  ParsedSnapshot out;
  uint64_t stored_checksum = 0;
  if (auto it = doc.find("checksum"); it != doc.end() && !it->is_null()) {
    if (!it->is_number_unsigned()) {
      return DataLoss(malformed + "checksum: expected an unsigned integer, got " + it->type_name());
    }
    stored_checksum = it->get<uint64_t>();
  }
  std::string policy;
  if (auto it = doc.find("policyName"); it != doc.end() && !it->is_null()) {
    if (!it->is_string()) {
      return DataLoss(malformed + "policyName: expected a string, got " + it->type_name());
    }
    policy = it->get<std::string>();
  }
  auto entries = PodEntriesFromJson(doc.contains("pod_entries") ? doc["pod_entries"] : json());
  if (!entries.ok()) return DataLoss(malformed + entries.status().message());
  out.pod_entries = std::move(entries).value();
  if (auto it = doc.find("pod_entries"); it != doc.end()) FindEntriesWithoutNetns(*it, &out);
  if (auto it = doc.find("machineState"); it != doc.end()) {
    Status st = ValidateMachineStateJson(*it);
    if (!st.ok()) return DataLoss(malformed + st.message());
  }
  bool ours = false;
  uint64_t format = 0;
  uint64_t own_checksum = 0;
  if (auto it = doc.find("netqos"); it != doc.end() && !it->is_null()) {
    ours = true;
    if (!it->is_object()) return DataLoss(malformed + "netqos: expected an object");
    auto format_it = it->find("format");
    auto seq = it->find("seq");
    if (format_it == it->end() || !format_it->is_number_unsigned() || seq == it->end() ||
        !seq->is_number_unsigned()) {
      return DataLoss(malformed + "netqos: expected unsigned integers format and seq");
    }
    format = format_it->get<uint64_t>();
    if (format < kOldestSnapshotFormat || format > kSnapshotFormat) {
      return FailedPrecondition("checkpoint " + path + " has format " + std::to_string(format) +
                                ", this netqos reads formats " +
                                std::to_string(kOldestSnapshotFormat) + " to " +
                                std::to_string(kSnapshotFormat));
    }
    out.seq = seq->get<uint64_t>();
    if (format >= 2) {
      auto own = it->find("checksum");
      if (own == it->end() || !own->is_number_unsigned()) {
        return DataLoss(malformed + "netqos.checksum: expected an unsigned integer");
      }
      own_checksum = own->get<uint64_t>();
    }
  }

  out.katalyst = !ours;
  std::string mismatch;
  if (!ours) {
    mismatch = VerifyKatalystChecksum(path, doc, stored_checksum);
  } else {
    // Format 1 kept its own checksum at the top level; format 2 leaves that member to Katalyst's
    // checksum (for a rollback) and keeps its own inside "netqos". Either covers everything else.
    doc.erase("checksum");
    if (format >= 2) {
      doc["netqos"].erase("checksum");
    } else {
      own_checksum = stored_checksum;
    }
    uint64_t computed = Fnv1a64(CanonicalDump(doc));
    if (computed != own_checksum) {
      mismatch = "checkpoint " + path + " failed its checksum (stored " +
                 std::to_string(own_checksum) + ", computed " + std::to_string(computed) + ")";
    }
  }
  if (!mismatch.empty()) {
    if (!skip) return DataLoss(mismatch + kSkipCorruptionHint);
    spdlog::warn("checkpoint: loading despite checksum mismatch path={} reason=\"{}\"", path,
                 mismatch);
    out.corruption_skipped = true;
  }
  NETQOS_RETURN_IF_ERROR(CheckPolicy(path, policy, skip));
  return out;
}

std::string RenderSnapshot(uint64_t seq, const core::Snapshot& snapshot, KatalystLayout layout,
                           const std::string& path) {
  json doc = json::object();
  doc["policyName"] = core::kPolicyName;
  doc["pod_entries"] = PodEntriesToJson(snapshot.pod_entries);
  doc["machineState"] = MachineStateToJson(snapshot.machine_state, snapshot.pod_entries);
  doc["netqos"] = json{{"format", kSnapshotFormat},
                       {"seq", seq},
                       {"katalyst_layout", KatalystLayoutFlagValue(layout)}};
  // Katalyst's checksum is over what its Go types decode from the bytes on disk (unknown
  // members such as "netqos" are dropped). Ours covers the whole document but the two checksums.
  const std::string unsigned_contents = CanonicalDump(doc);
  Result<uint32_t> katalyst = KatalystChecksumOfDump(doc, unsigned_contents, layout);
  const uint64_t own = Fnv1a64(unsigned_contents);
  uint64_t katalyst_sum = 0;
  if (katalyst.ok()) {
    katalyst_sum = katalyst.value();
  } else {
    // Never expected (netqos writes only what Go decodes); netqos itself still reads the file.
    spdlog::error("checkpoint: snapshot {} will not verify in Katalyst {}: {}", path,
                  KatalystLayoutName(layout), katalyst.status().message());
  }
  // The file is the same dump with the two checksums in it. Both sort first in their objects
  // ("checksum" < "format" < "machineState"), so they go in after the document's "{" and after
  // the netqos member's "{": spliced into the text rather than dumped again from the document,
  // which at 10,000 containers would hold the document (about 45 MB) and a second 16 MB text at
  // once, beside the start's first enforcement pass.
  const std::string netqos_member =
      ",\"netqos\":" + CanonicalDump(doc["netqos"]) + ",\"pod_entries\":";
  // Only the top-level member reads so: elsewhere a "netqos" key is a label (its value a string),
  // a pod or a container (its value an object of objects or of an entry's own members).
  const size_t netqos_at = unsigned_contents.find(netqos_member);
  if (unsigned_contents.empty() || unsigned_contents.front() != '{' ||
      netqos_at == std::string::npos) {
    // Not expected of a dump of `doc`; the document itself is then dumped with the checksums.
    doc["netqos"]["checksum"] = own;
    doc["checksum"] = katalyst_sum;
    return CanonicalDump(doc);
  }
  doc = json();  // the text holds everything from here on
  const size_t netqos_open = netqos_at + std::string_view(",\"netqos\":{").size();
  const std::string katalyst_text = "\"checksum\":" + std::to_string(katalyst_sum) + ",";
  const std::string own_text = "\"checksum\":" + std::to_string(own) + ",";
  std::string contents;
  contents.reserve(unsigned_contents.size() + katalyst_text.size() + own_text.size());
  contents += '{';
  contents += katalyst_text;
  contents.append(unsigned_contents, 1, netqos_open - 1);
  contents += own_text;
  contents.append(unsigned_contents, netqos_open);
  return contents;
}

std::string SnapshotTempPrefix() { return "." + std::string(core::kCheckpointFileName) + ".tmp-"; }

}  // namespace netqos::checkpoint
