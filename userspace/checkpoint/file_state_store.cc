#include "checkpoint/file_state_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <utility>

#include "checkpoint/allocation_json.h"
#include "checkpoint/journal_lines.h"
#include "checkpoint/katalyst_checksum.h"
#include "common/bounded_file.h"
#include "common/durable_file.h"
#include "common/json_depth.h"
#include "core/constants.h"

namespace netqos::checkpoint {

using nlohmann::json;

namespace {

// 1: "checksum" is netqos's own FNV-1a 64 (read, no longer written). 2: "checksum" is Katalyst's,
// for the layout named in netqos.katalyst_layout, and netqos's own is netqos.checksum.
constexpr uint64_t kSnapshotFormat = 2;
constexpr uint64_t kOldestSnapshotFormat = 1;
constexpr char kSkipHint[] = " (start with --skip-network-state-corruption to load it anyway)";

std::string SegmentPrefix() { return std::string(core::kCheckpointFileName) + ".wal."; }
std::string TempPrefix() { return "." + std::string(core::kCheckpointFileName) + ".tmp-"; }

std::string SysError(const char* call, const std::string& path, int err) {
  return std::string(call) + "(" + path + "): " + std::strerror(err);
}

Status IoError(const char* call, const std::string& path, int err) {
  return Internal(SysError(call, path, err));
}

constexpr uint64_t kFnvOffset = 14695981039346656037ULL;

// FNV-1a 64 of `data`, or of what was hashed into `h` followed by `data`.
uint64_t Fnv1a64(std::string_view data, uint64_t h = kFnvOffset) {
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

// Compact, key-sorted; invalid UTF-8 (which the kubelet should never send) is replaced rather
// than thrown on, so the written bytes and the checksum always agree.
std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// The store's I/O errors are Internal whatever the errno: they say nothing about the files'
// contents, which DataLoss and InvalidArgument are kept for.
Status AsIoError(Status st) { return st.ok() ? st : Internal(st.message()); }

// The snapshot, whole, if it is within `max_bytes`. Netqos never writes a larger one
// (FinishSnapshot refuses), so a larger file is damaged: DataLoss, never skippable, left in place.
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

Status FsyncDir(const std::string& dir) { return AsIoError(SyncDir(dir)); }

// Writes `bytes` zeros at `offset` of `fd`, in chunks of a static buffer.
Status WriteZeros(int fd, uint64_t offset, uint64_t bytes, const std::string& path) {
  static const char kZeros[1 << 16] = {};
  while (bytes > 0) {
    const uint64_t n = std::min<uint64_t>(bytes, sizeof(kZeros));
    NETQOS_RETURN_IF_ERROR(
        AsIoError(PwriteAll(fd, std::string_view(kZeros, static_cast<size_t>(n)), offset, path)));
    offset += n;
    bytes -= n;
  }
  return Status::Ok();
}

Status MkdirAll(const std::string& dir) {
  // Create each missing prefix in turn; EEXIST is fine as long as the end result is a directory.
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    std::string prefix = dir.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      return IoError("mkdir", prefix, errno);
    }
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return IoError("stat", dir, errno);
  if (!S_ISDIR(st.st_mode))
    return FailedPrecondition("checkpoint directory " + dir + " is not a directory");
  return Status::Ok();
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

// --- journal records ---

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
  j["crc"] = Fnv1a64(Dump(j));
  return Dump(j) + "\n";
}

struct Record {
  uint64_t seq = 0;
  core::StateChange change;
};

// `j` is a parsed line; it is consumed (the crc member is removed to check it).
Result<Record> DecodeRecord(json j) {
  if (!j.is_object())
    return InvalidArgument(std::string("expected an object, got ") + j.type_name());
  auto crc_it = j.find("crc");
  if (crc_it == j.end() || !crc_it->is_number_unsigned()) {
    return InvalidArgument("missing or malformed crc");
  }
  uint64_t crc = crc_it->get<uint64_t>();
  j.erase(crc_it);
  uint64_t computed = Fnv1a64(Dump(j));
  if (crc != computed) {
    return InvalidArgument("crc mismatch (stored " + std::to_string(crc) + ", computed " +
                           std::to_string(computed) + ")");
  }
  Record rec;
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

// Best-effort highest sequence number in a segment that is being given up after a skipped
// corruption, so that new records are numbered after everything on disk. Over-long lines are
// skipped unread, like any other line that does not parse.
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

// --- snapshot ---

struct ParsedSnapshot {
  core::PodEntries pod_entries;
  uint64_t seq = 0;
  bool corruption_skipped = false;
  bool katalyst = false;  // no "netqos" member: written by Katalyst
  std::vector<std::pair<std::string, std::string>> without_netns;  // (uid, container)
};

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

// A format-2 snapshot exactly as FinishSnapshot wrote it, checked on its bytes. Dump() sorts keys,
// so such a file is {"checksum":K,"machineState":..,"netqos":{"checksum":C,"format":2,
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
    uint64_t computed = Fnv1a64(Dump(doc));
    if (computed != own_checksum) {
      mismatch = "checkpoint " + path + " failed its checksum (stored " +
                 std::to_string(own_checksum) + ", computed " + std::to_string(computed) + ")";
    }
  }
  if (!mismatch.empty()) {
    if (!skip) return DataLoss(mismatch + kSkipHint);
    spdlog::warn("checkpoint: loading despite checksum mismatch path={} reason=\"{}\"", path,
                 mismatch);
    out.corruption_skipped = true;
  }
  NETQOS_RETURN_IF_ERROR(CheckPolicy(path, policy, skip));
  return out;
}

// Renames journal segments out of the set (they no longer parse as segments), for an operator
// to inspect; nothing is deleted.
Status SetAsideSegments(const std::string& dir,
                        const std::vector<std::pair<uint64_t, std::string>>& segments) {
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

}  // namespace

const std::vector<double>& FlushRecordBounds() {
  static const std::vector<double> kBounds = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  return kBounds;
}

// --- FileStateStore ---

Result<bool> FileStateStore::HasCheckpointFiles(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) return false;
    return IoError("opendir", dir, errno);
  }
  bool found = false;
  while (dirent* ent = ::readdir(d)) {
    uint64_t first = 0;
    const std::string name = ent->d_name;
    found = found || name == core::kCheckpointFileName || ParseSegmentName(name, &first);
  }
  ::closedir(d);
  return found;
}

Result<std::unique_ptr<FileStateStore>> FileStateStore::Create(Options options) {
  if (options.dir.empty()) return InvalidArgument("checkpoint directory is empty");
  while (options.dir.size() > 1 && options.dir.back() == '/') options.dir.pop_back();
  Status st = MkdirAll(options.dir);
  if (!st.ok()) return st.Wrap("cannot create checkpoint directory " + options.dir);
  return std::unique_ptr<FileStateStore>(new FileStateStore(std::move(options)));
}

FileStateStore::FileStateStore(Options options)
    : options_(std::move(options)),
      snapshot_path_(options_.dir + "/" + core::kCheckpointFileName) {}

FileStateStore::~FileStateStore() = default;

std::string FileStateStore::SegmentPath(uint64_t first_seq) const {
  std::string digits = std::to_string(first_seq);
  return options_.dir + "/" + SegmentPrefix() + std::string(20 - digits.size(), '0') + digits;
}

Result<core::LoadedState> FileStateStore::Load() {
  // Nothing below is expected to throw (JSON is parsed without exceptions or inside a try); this
  // keeps an unexpected one (bad_alloc on a huge file) from crossing the module boundary.
  try {
    return LoadImpl();
  } catch (const std::exception& e) {
    return Internal("loading checkpoint from " + options_.dir + ": " + e.what());
  }
}

Result<core::LoadedState> FileStateStore::LoadImpl() {
  std::lock_guard snap_lock(snapshot_mu_);
  std::lock_guard lock(mu_);
  if (loaded_) return FailedPrecondition("checkpoint store " + options_.dir + " already loaded");

  // One writer per directory: a second netqosd (or `netqosd --uninstall` folding the journal
  // while the daemon runs) would interleave snapshots and journal segments with the first's.
  // The lock is on the directory itself, so no file is added next to Katalyst's checkpoint, and
  // the kernel drops it when the process dies.
  Fd lock_fd(::open(options_.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!lock_fd) return IoError("open", options_.dir, errno);
  if (::flock(lock_fd.get(), LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err == EWOULDBLOCK) {
      return FailedPrecondition("checkpoint directory " + options_.dir +
                                " is in use by another netqosd process (it holds the directory's "
                                "lock); stop that one first");
    }
    return IoError("flock", options_.dir, err);
  }
  dir_lock_fd_ = std::move(lock_fd);

  // 1. Inventory: segments, and temp files left by a crash between write and rename.
  std::vector<std::pair<uint64_t, std::string>> segments;
  DIR* d = ::opendir(options_.dir.c_str());
  if (d == nullptr) return IoError("opendir", options_.dir, errno);
  const std::string temp_prefix = TempPrefix();
  while (dirent* ent = ::readdir(d)) {
    std::string name = ent->d_name;
    uint64_t first = 0;
    if (name.compare(0, temp_prefix.size(), temp_prefix) == 0) {
      std::string path = options_.dir + "/" + name;
      if (::unlink(path.c_str()) == 0) {
        spdlog::warn("checkpoint: removed unfinished snapshot path={}", path);
      } else {
        spdlog::warn("checkpoint: cannot remove unfinished snapshot error=\"{}\"",
                     SysError("unlink", path, errno));
      }
    } else if (ParseSegmentName(name, &first)) {
      segments.emplace_back(first, options_.dir + "/" + name);
    }
  }
  ::closedir(d);
  std::sort(segments.begin(), segments.end());

  core::LoadedState out;
  uint64_t snapshot_seq = 0;
  bool katalyst_snapshot = false;

  // 2. The snapshot.
  struct stat st {};
  if (::stat(snapshot_path_.c_str(), &st) == 0) {
    out.found = true;
    NETQOS_ASSIGN_OR_RETURN(std::string contents,
                            ReadSnapshotFile(snapshot_path_, options_.max_snapshot_bytes));
    NETQOS_ASSIGN_OR_RETURN(ParsedSnapshot parsed,
                            ParseSnapshot(snapshot_path_, contents, options_.skip_corruption));
    out.pod_entries = std::move(parsed.pod_entries);
    out.corruption_skipped = parsed.corruption_skipped;
    out.without_netns = std::move(parsed.without_netns);
    snapshot_seq = parsed.seq;
    katalyst_snapshot = parsed.katalyst;
    if (parsed.katalyst && !segments.empty()) {
      // Katalyst wrote the snapshot after netqos last ran here (a rollback, then a swap back):
      // the journal of that earlier run predates it and would bring back pods Katalyst removed.
      NETQOS_RETURN_IF_ERROR(SetAsideSegments(options_.dir, segments));
      segments.clear();
    }
  } else if (errno != ENOENT) {
    return IoError("stat", snapshot_path_, errno);
  }
  if (!segments.empty()) out.found = true;

  // 3. The journal, in sequence order.
  uint64_t prev = 0;     // sequence number of the previous record
  uint64_t high = 0;     // highest sequence number anywhere on disk (for next_seq_)
  bool stopped = false;  // a corruption was skipped: later records are given up
  uint64_t replayed = 0;
  uint64_t replayed_bytes = 0;
  std::vector<Segment> sealed;
  for (size_t i = 0; i < segments.size(); ++i) {
    const auto& [first_seq, path] = segments[i];
    const bool last_segment = i + 1 == segments.size();
    if (stopped) {
      NETQOS_ASSIGN_OR_RETURN(uint64_t seg_high,
                              HighestSeqIn(path, first_seq, options_.max_journal_line_bytes));
      high = std::max(high, seg_high);
      sealed.push_back({path, 0});
      continue;
    }
    NETQOS_ASSIGN_OR_RETURN(JournalLines lines,
                            JournalLines::Open(path, options_.max_journal_line_bytes));
    uint64_t seg_last = 0;
    uint64_t line_no = 0;
    JournalLines::Line l;
    while (true) {
      NETQOS_ASSIGN_OR_RETURN(bool more, lines.Next(&l));
      if (!more) break;
      ++line_no;
      const std::string& line = l.text;
      const bool too_deep = !l.too_long && JsonTooDeep(line);
      json j = l.too_long || too_deep ? json(json::value_t::discarded)
                                      : json::parse(line, nullptr, false);
      if (l.zero_end && l.length == 0) {
        // A NUL where a record would start: the segment's pre-written zeros, the end of its
        // journal. Whatever lies beyond (in the last segment, records after a run of zeros) is
        // never read, and that loses nothing acknowledged: records are written in sequence order
        // at increasing offsets, and Sync acknowledges seq only after an fdatasync that began
        // once every record up to seq had been written (a segment is flushed whole before the
        // next one is created, or, after a crash, read by Load up to this same place), so the
        // acknowledged records are a prefix of the journal that is on disk whole. A record starts
        // with '{', never a NUL, so the record that should start here never reached the disk: it
        // was not acknowledged, and neither was any later one. (Later bytes can still be on disk:
        // the page cache writes back in any order.) Nothing is truncated: every load stops at the
        // same NUL, and new records go to a new segment.
        break;
      }
      // An over-long line is never a torn write: a torn write is a prefix of a record Append
      // wrote, and Append writes none longer than the limit. So it is corruption, like any other
      // damaged record. A line cut short by a NUL (l.zero_end, so l.last) is a torn write too:
      // part of it did not reach the disk. It is truncated with the zeros after it, which
      // drops any never-acknowledged record beyond them for the reason above.
      if (last_segment && l.last && !l.too_long && (!l.complete || j.is_discarded())) {
        // A write that never returned: it was not acknowledged, so dropping it loses nothing.
        spdlog::warn("checkpoint: dropping torn journal tail path={} line={} bytes={}", path,
                     line_no, l.length);
        Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
        if (!fd) return IoError("open", path, errno);
        const char* failed_call = nullptr;
        if (::ftruncate(fd.get(), static_cast<off_t>(l.offset)) != 0) {
          failed_call = "ftruncate";
        } else if (::fsync(fd.get()) != 0) {
          failed_call = "fsync";
        }
        const int err = errno;
        if (failed_call != nullptr) return IoError(failed_call, path, err);
        break;
      }
      Status bad;
      Result<Record> rec =
          l.too_long         ? Result<Record>(InvalidArgument(
                                   "a line of " + std::to_string(l.length) + " bytes is " +
                                   SizeLimitText(options_.max_journal_line_bytes) + " for one record"))
          : too_deep         ? Result<Record>(InvalidArgument(JsonTooDeepText()))
          : l.zero_end       ? Result<Record>(InvalidArgument(
                                   "a record cut short by zero bytes in a segment that was "
                                         "flushed whole before the next one was created"))
          : j.is_discarded() ? Result<Record>(InvalidArgument("not valid JSON"))
                             : DecodeRecord(std::move(j));
      if (!rec.ok()) {
        bad = rec.status();
      } else if (rec->seq <= prev) {
        bad = InvalidArgument("sequence number " + std::to_string(rec->seq) + " does not follow " +
                              std::to_string(prev));
      } else if (rec->seq > snapshot_seq && rec->seq != std::max(prev, snapshot_seq) + 1) {
        bad = InvalidArgument("records " + std::to_string(std::max(prev, snapshot_seq) + 1) +
                              " to " + std::to_string(rec->seq - 1) + " are missing");
      }
      if (!bad.ok()) {
        std::string msg = "journal " + path + ":" + std::to_string(line_no) + ": " + bad.message();
        if (!options_.skip_corruption) return DataLoss(msg + kSkipHint);
        spdlog::warn("checkpoint: stopping journal replay at corruption error=\"{}\"", msg);
        out.corruption_skipped = true;
        stopped = true;
        break;
      }
      if (rec->seq > snapshot_seq) {
        ApplyChange(rec->change, &out.pod_entries);
        ++replayed;
        replayed_bytes += line.size() + 1;
      }
      prev = seg_last = rec->seq;
    }
    if (stopped) {
      // Given up with the rest; dropped by the next snapshot, which covers what was loaded.
      NETQOS_ASSIGN_OR_RETURN(uint64_t seg_high,
                              HighestSeqIn(path, first_seq, options_.max_journal_line_bytes));
      high = std::max(high, seg_high);
      sealed.push_back({path, 0});
    } else if (seg_last == 0) {
      // Empty (created just before a crash, or emptied by the torn-tail truncation).
      if (::unlink(path.c_str()) != 0) return IoError("unlink", path, errno);
    } else {
      sealed.push_back({path, seg_last});
    }
  }

  out.snapshot_before_changes = out.corruption_skipped || katalyst_snapshot;
  next_seq_ = std::max({snapshot_seq, prev, high}) + 1;
  written_snapshot_seq_ = snapshot_seq;
  // The journal not yet folded into the snapshot counts towards the next one.
  records_since_snapshot_ = replayed;
  bytes_since_snapshot_ = replayed_bytes;
  sealed_ = std::move(sealed);
  loaded_ = true;
  {
    // What is on disk now counts as durable: every later record starts a group flush of its own.
    std::lock_guard sync_lock(sync_mu_);
    durable_seq_ = next_seq_ - 1;
  }
  spdlog::info(
      "checkpoint: loaded dir={} found={} pods={} snapshot_seq={} next_seq={} segments={} "
      "corruption_skipped={}",
      options_.dir, out.found, out.pod_entries.size(), snapshot_seq, next_seq_, sealed_.size(),
      out.corruption_skipped);
  return out;
}

Status FileStateStore::OpenSegmentLocked(uint64_t min_bytes) {
  std::string path = SegmentPath(next_seq_);
  // A record larger than a segment gets a segment of its own size, in whole pages.
  const uint64_t capacity =
      std::max<uint64_t>(options_.segment_bytes, (min_bytes + 4095) / 4096 * 4096);
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) return IoError("open", path, errno);
  // Real zeros, flushed once, so that records written over them later change neither the size
  // nor the extents (see the header). Then the new name must be durable too, or a crash could
  // lose the whole segment.
  Status st = WriteZeros(fd.get(), 0, capacity, path);
  if (st.ok() && ::fdatasync(fd.get()) != 0) st = IoError("fdatasync", path, errno);
  if (st.ok()) st = FsyncDir(options_.dir);
  if (!st.ok()) {
    // A full disk shows here, before any record is written: the change is refused whole and the
    // next one tries again. Should the unlink not reach the disk, Load removes a segment
    // without records.
    fd.reset();
    ::unlink(path.c_str());
    return Internal(
        "cannot create journal segment " + path + " (" + std::to_string(capacity) +
        " bytes of zeros written ahead of its records), the change is not made: " + st.message());
  }
  segment_fd_ = std::move(fd);
  current_ = Segment{path, 0};
  current_bytes_ = 0;
  current_capacity_ = capacity;
  return Status::Ok();
}

Status FileStateStore::FlushAndSealLocked() {
  // Written records may still wait for their group flush: flush them here (a leader in flight
  // holds its own descriptor), so a sealed segment is durable whole and Sync need not reopen it.
  const bool flushed = ::fdatasync(segment_fd_.get()) == 0;
  const int err = errno;
  segment_fd_.reset();
  sealed_.push_back(current_);
  if (!flushed) {
    failed_ = IoError("fdatasync", current_.path, err);
    std::lock_guard sync_lock(sync_mu_);
    if (sync_failed_.ok()) sync_failed_ = failed_;
    sync_cv_.notify_all();
    return failed_;
  }
  std::lock_guard sync_lock(sync_mu_);
  durable_seq_ = std::max(durable_seq_, current_.last_seq);
  sync_cv_.notify_all();
  return Status::Ok();
}

Status FileStateStore::Append(const core::StateChange& change) {
  NETQOS_ASSIGN_OR_RETURN(uint64_t seq, Write(change));
  return Sync(seq);
}

Result<uint64_t> FileStateStore::Write(const core::StateChange& change) {
  std::lock_guard lock(mu_);
  if (!loaded_)
    return FailedPrecondition("checkpoint store " + options_.dir + ": Append before Load");
  if (!failed_.ok()) return failed_;
  const uint64_t seq = next_seq_;
  const std::string line = EncodeRecord(seq, change);
  if (line.size() - 1 > options_.max_journal_line_bytes) {
    std::string what;
    if (const auto* set = std::get_if<core::SetAllocation>(&change)) {
      what = "pod " + set->info.pod_uid + " container " + set->info.container_name;
    } else {
      what = "removing pod " + std::get<core::RemovePodEntries>(change).pod_uid;
    }
    return InvalidArgument("journal record for " + what + " is " + std::to_string(line.size() - 1) +
                           " bytes, " + SizeLimitText(options_.max_journal_line_bytes) +
                           " (its labels and annotations are too large)");
  }
  if (segment_fd_ && current_bytes_ + line.size() > current_capacity_) {
    // Full: the record goes to a new segment, named after it.
    if (current_.last_seq != 0) {
      NETQOS_RETURN_IF_ERROR(FlushAndSealLocked());
    } else {
      // No record yet (its first write failed) and too small for this one: the new segment
      // takes its name.
      segment_fd_.reset();
      if (::unlink(current_.path.c_str()) != 0) return IoError("unlink", current_.path, errno);
    }
  }
  if (!segment_fd_) NETQOS_RETURN_IF_ERROR(OpenSegmentLocked(line.size()));

  Status st = AsIoError(PwriteAll(segment_fd_.get(), line, current_bytes_, current_.path));
  if (!st.ok()) {
    // Zero the partial line again so that the next record, written at the same offset, is not
    // followed by what is left of this one.
    Status zeroed = WriteZeros(segment_fd_.get(), current_bytes_, line.size(), current_.path);
    if (!zeroed.ok()) {
      failed_ = Status(StatusCode::kInternal,
                       "journal disabled: " + zeroed.message() + " after " + st.message());
      return failed_;
    }
    return st;
  }
  current_bytes_ += line.size();
  current_.last_seq = seq;
  next_seq_ = seq + 1;
  ++records_since_snapshot_;
  bytes_since_snapshot_ += line.size();
  return seq;
}

Status FileStateStore::Sync(uint64_t seq) {
  std::unique_lock sync_lock(sync_mu_);
  for (;;) {
    if (!sync_failed_.ok()) return sync_failed_;
    if (durable_seq_ >= seq) return Status::Ok();
    if (syncing_) {
      // Another caller's flush is in flight: it may cover seq; if not, the next one will.
      sync_cv_.wait(sync_lock);
      continue;
    }
    syncing_ = true;
    sync_lock.unlock();
    // Lead one flush for everything written so far. A private descriptor, because
    // BeginSnapshot may seal (and close) the segment meanwhile; a sealed segment was flushed
    // whole before it was closed, so no descriptor means nothing is left to flush.
    uint64_t target = 0;
    Fd fd;
    std::string path;
    Status flushed;
    {
      std::lock_guard lock(mu_);
      target = next_seq_ - 1;
      path = current_.path;
      if (segment_fd_) {
        fd.reset(::fcntl(segment_fd_.get(), F_DUPFD_CLOEXEC, 0));
        if (!fd) flushed = IoError("dup", path, errno);
      }
    }
    const bool had_segment = static_cast<bool>(fd);
    const auto flush_start = std::chrono::steady_clock::now();
    if (fd) {
      if (::fdatasync(fd.get()) != 0) flushed = IoError("fdatasync", path, errno);
      fd.reset();
    }
    const std::chrono::duration<double> flush_time = std::chrono::steady_clock::now() - flush_start;
    if (!flushed.ok()) {
      // After a failed fdatasync the kernel may have dropped the dirty pages and a retry can
      // report success without the data: refuse further changes until a restart reloads.
      std::lock_guard lock(mu_);
      if (failed_.ok()) failed_ = flushed;
    }
    sync_lock.lock();
    syncing_ = false;
    if (had_segment && flushed.ok()) {
      // The records this flush made durable: those above durable_seq_, which a seal
      // (BeginSnapshot) may have moved meanwhile for the records of the segment it flushed.
      flush_stats_.records.Observe(
          static_cast<double>(target > durable_seq_ ? target - durable_seq_ : 0));
      flush_stats_.seconds.Observe(flush_time.count());
    }
    if (flushed.ok()) {
      durable_seq_ = std::max(durable_seq_, target);
    } else if (sync_failed_.ok()) {
      sync_failed_ = flushed;
    }
    sync_cv_.notify_all();
  }
}

core::FlushStats FileStateStore::Flushes() const {
  std::lock_guard sync_lock(sync_mu_);
  return flush_stats_;
}

bool FileStateStore::SnapshotDue() const {
  std::lock_guard lock(mu_);
  return records_since_snapshot_ >= options_.snapshot_every_records ||
         bytes_since_snapshot_ >= options_.snapshot_every_bytes;
}

Result<uint64_t> FileStateStore::BeginSnapshot() {
  std::lock_guard lock(mu_);
  if (!loaded_) {
    return FailedPrecondition("checkpoint store " + options_.dir + ": BeginSnapshot before Load");
  }
  // A segment that holds no record (its first write failed: not for a full disk, which fails
  // the segment's zeros before it is open, but an I/O error over them) stays open:
  // its name is still the next record's seq, and sealing it would leave a file of that name
  // behind (until a snapshot that succeeds removes it), so that the next segment could not be
  // created and every later change would fail.
  if (segment_fd_ && current_.last_seq != 0) NETQOS_RETURN_IF_ERROR(FlushAndSealLocked());
  records_since_snapshot_ = 0;
  bytes_since_snapshot_ = 0;
  return next_seq_ - 1;
}

Status FileStateStore::WriteSnapshotFile(const std::string& contents) {
  const std::string tmp = options_.dir + "/" + TempPrefix() + std::to_string(::getpid()) + "-" +
                          std::to_string(++tmp_counter_);
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) return IoError("open", tmp, errno);
  Status st = AsIoError(WriteAll(fd.get(), contents, tmp));
  if (st.ok() && ::fsync(fd.get()) != 0) st = IoError("fsync", tmp, errno);
  // close() is checked here: some file systems report a failed write-back only there.
  if (::close(fd.release()) != 0 && st.ok()) st = IoError("close", tmp, errno);
  if (st.ok() && ::rename(tmp.c_str(), snapshot_path_.c_str()) != 0) {
    st = Internal("rename(" + tmp + ", " + snapshot_path_ + "): " + std::strerror(errno));
  }
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  // The rename is durable only once the directory is: without this a crash could bring back the
  // file from before a change the kubelet was told had been made.
  return FsyncDir(options_.dir);
}

Status FileStateStore::FinishSnapshot(uint64_t seq, const core::Snapshot& snapshot) {
  try {
    return FinishSnapshotImpl(seq, snapshot);
  } catch (const std::exception& e) {
    return Internal("writing snapshot " + snapshot_path_ + ": " + e.what());
  }
}

Status FileStateStore::FinishSnapshotImpl(uint64_t seq, const core::Snapshot& snapshot) {
  {
    std::lock_guard lock(mu_);
    if (!loaded_) {
      return FailedPrecondition("checkpoint store " + options_.dir +
                                ": FinishSnapshot before Load");
    }
    if (seq >= next_seq_) {
      return InvalidArgument("snapshot seq " + std::to_string(seq) + " is beyond the journal (" +
                             std::to_string(next_seq_ - 1) + ")");
    }
  }
  std::lock_guard snap_lock(snapshot_mu_);
  if (seq < written_snapshot_seq_) {
    // Writing it would lose the changes between seq and the newer snapshot, whose journal is gone.
    return FailedPrecondition("snapshot seq " + std::to_string(seq) +
                              " is older than the snapshot on disk (" +
                              std::to_string(written_snapshot_seq_) + ")");
  }

  // Built and written without mu_: Append keeps journaling into the new segment meanwhile.
  json doc = json::object();
  doc["policyName"] = core::kPolicyName;
  doc["pod_entries"] = PodEntriesToJson(snapshot.pod_entries);
  doc["machineState"] = MachineStateToJson(snapshot.machine_state, snapshot.pod_entries);
  doc["netqos"] = json{{"format", kSnapshotFormat},
                       {"seq", seq},
                       {"katalyst_layout", KatalystLayoutFlagValue(options_.katalyst_layout)}};
  // Katalyst's checksum is over what its Go types decode from the bytes on disk (unknown
  // members such as "netqos" are dropped), so it is computed on the dump read back: Dump
  // replaces invalid UTF-8, which the in-memory document still holds. Ours covers the whole
  // document but the two checksums.
  const std::string unsigned_contents = Dump(doc);
  Result<uint32_t> katalyst =
      KatalystChecksum(json::parse(unsigned_contents), options_.katalyst_layout);
  const uint64_t own = Fnv1a64(unsigned_contents);
  doc["netqos"]["checksum"] = own;
  if (katalyst.ok()) {
    doc["checksum"] = uint64_t{katalyst.value()};
  } else {
    // Never expected (netqos writes only what Go decodes); netqos itself still reads the file.
    doc["checksum"] = 0;
    spdlog::error("checkpoint: snapshot {} will not verify in Katalyst {}: {}", snapshot_path_,
                  KatalystLayoutName(options_.katalyst_layout), katalyst.status().message());
  }
  const std::string contents = Dump(doc);
  if (contents.size() > options_.max_snapshot_bytes) {
    // Load would refuse it as damaged; the journal keeps every change instead.
    return ResourceExhausted(
        "snapshot " + snapshot_path_ + " would be " + std::to_string(contents.size()) + " bytes, " +
        SizeLimitText(options_.max_snapshot_bytes) + "; not written, the journal is kept");
  }
  NETQOS_RETURN_IF_ERROR(WriteSnapshotFile(contents));
  written_snapshot_seq_ = seq;

  // The snapshot is durable: the sealed segments it covers can go.
  std::vector<Segment> covered;
  {
    std::lock_guard lock(mu_);
    auto keep = std::stable_partition(sealed_.begin(), sealed_.end(),
                                      [seq](const Segment& s) { return s.last_seq > seq; });
    covered.assign(keep, sealed_.end());
    sealed_.erase(keep, sealed_.end());
  }
  Status result;
  std::vector<Segment> failed;
  for (const Segment& s : covered) {
    if (::unlink(s.path.c_str()) != 0 && errno != ENOENT) {
      if (result.ok()) result = IoError("unlink", s.path, errno);
      failed.push_back(s);  // retried after the next snapshot
    }
  }
  if (!failed.empty()) {
    std::lock_guard lock(mu_);
    sealed_.insert(sealed_.begin(), failed.begin(), failed.end());
  }
  // Not strictly needed (a resurrected segment only holds records <= seq, which replay skips),
  // but it keeps a given-up corrupt segment from coming back after a crash.
  if (failed.size() != covered.size()) {
    Status st = FsyncDir(options_.dir);
    if (result.ok()) result = st;
  }
  return result;
}

}  // namespace netqos::checkpoint
