// JournalWriter::Sync, the waiting side of group commit, with a flush the test holds or fails:
// who sleeps on which flush and how often they are woken, and what a failed flush fails.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "checkpoint/journal_lines.h"
#include "checkpoint/journal_record.h"
#include "checkpoint/journal_writer.h"
#include "support/checkpoint_store.h"
#include "support/files.h"
#include "support/temp_dir.h"

namespace netqos::checkpoint {
namespace {

using Catch::Contains;
using netqos::testing::TempDir;
using testing::SetFor;
using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

// The journal's fdatasync, driven by the test: held until released, or failed with EIO.
class FlushGate {
 public:
  std::function<int(int)> Hook() {
    return [this](int fd) { return Call(fd); };
  }
  void Hold() {
    std::lock_guard lk(mu_);
    held_ = true;
  }
  void Release() {
    std::lock_guard lk(mu_);
    held_ = false;
    cv_.notify_all();
  }
  void FailNext() {
    std::lock_guard lk(mu_);
    fail_ = true;
  }
  // Returns once `n` calls have begun (a held one waits inside).
  void AwaitCalls(int n) {
    std::unique_lock lk(mu_);
    REQUIRE(cv_.wait_for(lk, 10s, [&] { return calls_ >= n; }));
  }
  int calls() {
    std::lock_guard lk(mu_);
    return calls_;
  }

 private:
  int Call(int fd) {
    std::unique_lock lk(mu_);
    ++calls_;
    cv_.notify_all();
    cv_.wait(lk, [&] { return !held_; });
    const bool fail = std::exchange(fail_, false);
    lk.unlock();
    if (fail) {
      errno = EIO;
      return -1;
    }
    return ::fdatasync(fd);
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;
  bool fail_ = false;
  int calls_ = 0;
};

JournalWriter::Options Opts(const std::string& dir, FlushGate& gate) {
  JournalWriter::Options options;
  options.dir = dir;
  options.max_line_bytes = size_t{1} << 20;
  options.datasync = gate.Hook();
  return options;
}

uint64_t Written(JournalWriter& journal, const std::string& uid) {
  auto seq = journal.Write(SetFor(uid, "c"));
  REQUIRE(seq.ok());
  return *seq;
}

// Waits (up to 10 s) until `n` callers sleep in Sync.
void AwaitSleepers(const JournalWriter& journal, size_t n) {
  const auto end = SteadyClock::now() + 10s;
  while (journal.SyncSleepers() < n) {
    REQUIRE(SteadyClock::now() < end);
    std::this_thread::sleep_for(1ms);
  }
}

// The sequence numbers of the records in `dir`'s segments.
std::vector<uint64_t> RecordsOnDisk(const std::string& dir) {
  std::vector<uint64_t> out;
  for (const std::string& name : netqos::testing::ListDir(dir)) {
    uint64_t first = 0;
    if (!ParseSegmentName(name, &first)) continue;
    auto lines = JournalLines::Open(dir + "/" + name, size_t{1} << 20);
    REQUIRE(lines.ok());
    JournalLines::Line l;
    while (true) {
      auto more = lines->Next(&l);
      REQUIRE(more.ok());
      if (!*more || l.length == 0 || l.zero_end) break;
      auto rec = DecodeRecord(nlohmann::json::parse(l.text));
      REQUIRE(rec.ok());
      out.push_back(rec->seq);
    }
  }
  return out;
}

TEST_CASE("journal sync: records written during a flush share the next one, each caller woken once",
          "[journal_sync]") {
  TempDir tmp;
  FlushGate gate;
  JournalWriter journal(Opts(tmp.path(), gate), JournalResume{});
  const uint64_t r1 = Written(journal, "a");
  const uint64_t r2 = Written(journal, "b");
  gate.Hold();
  std::vector<std::thread> callers;
  std::vector<Status> results(4);
  callers.emplace_back([&] { results[0] = journal.Sync(r2); });  // leads the flush of r1, r2
  gate.AwaitCalls(1);
  callers.emplace_back([&] { results[1] = journal.Sync(r1); });  // covered by it
  AwaitSleepers(journal, 1);
  // Too late for the flush in flight: one will lead the next, the other sleeps until it ends.
  const uint64_t r3 = Written(journal, "c");
  const uint64_t r4 = Written(journal, "d");
  callers.emplace_back([&] { results[2] = journal.Sync(r3); });
  AwaitSleepers(journal, 2);
  callers.emplace_back([&] { results[3] = journal.Sync(r4); });
  AwaitSleepers(journal, 3);
  gate.Release();
  for (auto& t : callers) t.join();
  for (const Status& st : results) CHECK(st.ok());

  CHECK(gate.calls() == 2);
  const core::FlushStats stats = journal.Flushes();
  CHECK(stats.records.count() == 2);
  CHECK(stats.records.sum == 4);
  // The end of the first flush wakes the caller it made durable and the next leader, not the
  // caller waiting for the next flush: three sleepers, three wake-ups.
  CHECK(journal.SyncWakeups() == 3);
  CHECK(journal.SyncSleepers() == 0);
}

TEST_CASE("journal sync: a failed flush fails the records it carried and keeps those made durable",
          "[journal_sync]") {
  TempDir tmp;
  FlushGate gate;
  JournalWriter journal(Opts(tmp.path(), gate), JournalResume{});
  const uint64_t r1 = Written(journal, "a");
  REQUIRE(journal.Sync(r1).ok());

  const uint64_t r2 = Written(journal, "b");
  gate.Hold();
  gate.FailNext();
  Status carried;
  std::thread leader([&] { carried = journal.Sync(r2); });
  gate.AwaitCalls(2);
  // Written while the failing flush is in flight, so not carried by it.
  const uint64_t r3 = Written(journal, "c");
  Status after;
  std::thread next([&] { after = journal.Sync(r3); });
  AwaitSleepers(journal, 1);
  gate.Release();
  leader.join();
  next.join();

  REQUIRE_FALSE(carried.ok());
  CHECK_THAT(carried.message(), Contains("journal record 2 is not durable, its flush failed"));
  CHECK_THAT(carried.message(), Contains("fdatasync"));
  CHECK_THAT(carried.message(), Contains(std::strerror(EIO)));
  REQUIRE_FALSE(after.ok());
  CHECK_THAT(after.message(),
             Contains("journal record 3 was not flushed: the journal stopped at a failed flush "
                      "of records up to 2"));
  CHECK(journal.Sync(r1).ok());  // acknowledged before the failure: still durable
  CHECK_FALSE(journal.Write(SetFor("d", "c")).ok());
  CHECK(gate.calls() == 2);  // the record after the failure is never flushed
  const std::vector<uint64_t> on_disk = RecordsOnDisk(tmp.path());
  REQUIRE_FALSE(on_disk.empty());
  CHECK(on_disk.front() == r1);

  // A Cut after the failure flushes the segment again, and that fdatasync succeeds (the test's
  // failure went to the first one only): the records not durable before must still fail.
  auto cut = journal.Cut();
  REQUIRE_FALSE(cut.ok());
  CHECK_THAT(cut.status().message(), Contains(std::strerror(EIO)));
  CHECK_THAT(journal.Sync(r2).message(), Contains("journal record 2 is not durable"));
  CHECK_THAT(journal.Sync(r3).message(), Contains("journal record 3 was not flushed"));
  CHECK(journal.Sync(r1).ok());
}

}  // namespace
}  // namespace netqos::checkpoint
