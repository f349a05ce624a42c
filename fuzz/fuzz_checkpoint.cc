// libFuzzer target: the checkpoint reader (FileStateStore::Load: the Katalyst-layout snapshot
// plus netqos's journal segments), on the files a crash, a disk error or another writer may leave.
// Input: the snapshot file's bytes, optionally followed by journal segments, each introduced by
// a line "--journal--" (an empty snapshot part means no snapshot file).
//
// Invariants:
// - no crash, no exception escaping, no Internal error (every bad input is a named DataLoss,
//   FailedPrecondition or InvalidArgument);
// - a checkpoint that loads strictly loads the same with --skip-network-state-corruption, and
//   reports no skipped corruption;
// - whatever loads survives a round trip: written back as a snapshot, or as journal records,
//   and loaded again, it gives exactly the same pod entries.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/file_state_store.h"
#include "core/constants.h"
#include "fuzz_check.h"

namespace {

using namespace netqos;
namespace fs = std::filesystem;

constexpr std::string_view kJournalMarker = "\n--journal--\n";

constexpr char kScratchPrefix[] = "netqos-fuzz-checkpoint.";

// A private scratch directory on tmpfs when there is one (the store fsyncs every write), named
// after this process. libFuzzer ends without running atexit handlers, so each run removes the
// directories of earlier runs whose process is gone.
const fs::path& Scratch() {
  static const fs::path dir = [] {
    const fs::path base = fs::is_directory("/dev/shm") ? "/dev/shm" : fs::temp_directory_path();
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(base, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind(kScratchPrefix, 0) != 0) continue;
      const long pid = std::strtol(name.c_str() + sizeof(kScratchPrefix) - 1, nullptr, 10);
      if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
        fs::remove_all(entry.path(), ec);
      }
    }
    fs::path mine = base / (kScratchPrefix + std::to_string(::getpid()));
    fs::remove_all(mine, ec);
    FUZZ_CHECK(fs::create_directories(mine, ec), "scratch directory created");
    return mine;
  }();
  return dir;
}

fs::path FreshDir(const std::string& name) {
  fs::path dir = Scratch() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::unique_ptr<checkpoint::FileStateStore> Store(const fs::path& dir, bool skip) {
  checkpoint::FileStateStore::Options options;
  options.dir = dir.string();
  options.skip_corruption = skip;
  auto store = checkpoint::FileStateStore::Create(options);
  FUZZ_CHECK(store.ok(), "the store opens its directory");
  return std::move(store).value();
}

void WriteFile(const fs::path& path, std::string_view contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  FUZZ_CHECK(out.good(), "scratch file written");
}

// Lays the input out as checkpoint files in a fresh `name` directory.
fs::path LayOut(const std::string& name, std::string_view input) {
  fs::path dir = FreshDir(name);
  auto store = Store(dir, false);  // only for SegmentPath
  std::vector<std::string_view> parts;
  size_t pos = 0;
  while (true) {
    size_t next = input.find(kJournalMarker, pos);
    parts.push_back(input.substr(pos, next == std::string_view::npos ? next : next - pos));
    if (next == std::string_view::npos) break;
    pos = next + kJournalMarker.size();
  }
  if (!parts[0].empty()) WriteFile(dir / core::kCheckpointFileName, parts[0]);
  for (size_t i = 1; i < parts.size(); ++i) {
    WriteFile(store->SegmentPath(1 + 1000 * (i - 1)), parts[i]);
  }
  return dir;
}

Result<core::LoadedState> Load(const fs::path& dir, bool skip) {
  auto loaded = Store(dir, skip)->Load();
  if (!loaded.ok()) {
    FUZZ_CHECK(loaded.status().code() != StatusCode::kInternal,
               "a bad checkpoint is a named error, not an internal one");
    FUZZ_CHECK(!loaded.status().message().empty(), "errors say what failed");
  }
  return loaded;
}

void CheckRoundTrip(const core::PodEntries& entries) {
  // As a snapshot.
  {
    fs::path dir = FreshDir("snapshot");
    auto store = Store(dir, false);
    FUZZ_CHECK(store->Load().ok(), "an empty directory loads");
    auto seq = store->BeginSnapshot();
    FUZZ_CHECK(seq.ok(), "a snapshot can begin");
    core::Snapshot snap;
    snap.pod_entries = entries;
    FUZZ_CHECK(store->FinishSnapshot(*seq, snap).ok(), "the snapshot is written");
    store.reset();  // one store per directory: the next one is refused while this one holds it
    auto again = Load(dir, false);
    FUZZ_CHECK(again.ok(), "a written snapshot loads strictly");
    FUZZ_CHECK(!again->corruption_skipped, "a written snapshot is not corrupt");
    FUZZ_CHECK(again->pod_entries == entries, "pod entries survive a snapshot");
  }
  // As journal records.
  {
    fs::path dir = FreshDir("journal");
    auto store = Store(dir, false);
    FUZZ_CHECK(store->Load().ok(), "an empty directory loads");
    for (const auto& [uid, containers] : entries) {
      for (const auto& [name, info] : containers) {
        // The journal keys a record by the fields it carries, the snapshot by its map keys.
        if (info.pod_uid != uid || info.container_name != name) return;
        FUZZ_CHECK(store->Append(core::SetAllocation{info}).ok(), "a record is journaled");
      }
    }
    store.reset();
    auto again = Load(dir, false);
    FUZZ_CHECK(again.ok(), "a written journal loads strictly");
    FUZZ_CHECK(again->pod_entries == entries, "pod entries survive the journal");
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);  // Load warns on every skipped corruption
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  auto strict = Load(LayOut("input", input), false);
  // Load may truncate a torn journal tail: lay the input out afresh for the second reading.
  auto skipped = Load(LayOut("input", input), true);
  // NETQOS_FUZZ_VERBOSE=1 says how an input loaded (to check what a seed reaches).
  if (std::getenv("NETQOS_FUZZ_VERBOSE") != nullptr) {
    for (const auto* r : {&strict, &skipped}) {
      std::fprintf(stderr, "%s: %s\n", r == &strict ? "strict" : "skip",
                   r->ok() ? ("ok, pods=" + std::to_string(r->value().pod_entries.size()) +
                              (r->value().corruption_skipped ? ", corruption skipped" : ""))
                                 .c_str()
                           : r->status().message().c_str());
    }
  }
  if (strict.ok()) {
    FUZZ_CHECK(skipped.ok(), "what loads strictly loads with the skip flag");
    FUZZ_CHECK(!skipped->corruption_skipped, "nothing is skipped in a sound checkpoint");
    FUZZ_CHECK(skipped->pod_entries == strict->pod_entries, "the skip flag changes nothing");
    FUZZ_CHECK(skipped->found == strict->found, "both readings find the same files");
  }
  if (skipped.ok()) CheckRoundTrip(skipped->pod_entries);
  return 0;
}
