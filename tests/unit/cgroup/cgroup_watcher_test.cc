// The watcher on plain directories in a TempDir: inotify behaves the same for them as for
// cgroup directories, so no privilege is needed.
#include "cgroup/fs/cgroup_watcher.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "support/temp_dir.h"

namespace {

using netqos::cgroup::CgroupWatcher;
using netqos::cgroup::CgroupWatcherCallbacks;
using netqos::cgroup::CgroupWatcherOptions;
using netqos::testing::TempDir;
namespace fs = std::filesystem;

// Collects callbacks and lets the test wait for them.
class Recorder {
 public:
  CgroupWatcherCallbacks Callbacks() {
    CgroupWatcherCallbacks cb;
    cb.on_created = [this](const std::string& p) { Add(&created_, p); };
    cb.on_removed = [this](const std::string& p) { Add(&removed_, p); };
    cb.on_error = [this](const netqos::Status& s) { Add(&errors_, s.message()); };
    return cb;
  }

  // Waits up to 2 s until every path in `want` was created (resp. removed).
  bool WaitCreated(const std::set<std::string>& want) { return WaitFor(created_, want); }
  bool WaitRemoved(const std::set<std::string>& want) { return WaitFor(removed_, want); }

  std::vector<std::string> Created() { return Get(created_); }
  std::vector<std::string> Removed() { return Get(removed_); }
  std::vector<std::string> Errors() { return Get(errors_); }

 private:
  // What one callback reported, in order, and as a set: a wait looks paths up in the set, so
  // that a test reporting thousands of directories does not rebuild one at each report (that
  // made a waiting test slow the watcher down, and more so on an idle machine).
  struct Log {
    std::vector<std::string> order;
    std::set<std::string> seen;
  };

  void Add(Log* log, const std::string& p) {
    std::lock_guard<std::mutex> l(mu_);
    log->order.push_back(p);
    log->seen.insert(p);
    cv_.notify_all();
  }
  std::vector<std::string> Get(const Log& log) {
    std::lock_guard<std::mutex> l(mu_);
    return log.order;
  }
  bool WaitFor(const Log& log, const std::set<std::string>& want) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, std::chrono::seconds(2), [&] {
      for (const auto& w : want) {
        if (log.seen.count(w) == 0) return false;
      }
      return true;
    });
  }

  std::mutex mu_;
  std::condition_variable cv_;
  Log created_, removed_, errors_;
};

std::set<std::string> Under(const std::string& root, const std::vector<std::string>& rel) {
  std::set<std::string> out;
  for (const auto& r : rel) out.insert(root + "/" + r);
  return out;
}

// Holds the watcher thread inside on_created of one path until released, so that the test can
// change the tree while the kernel queues the events unread. The hold gives up after a minute, so
// a failed test cannot leave the watcher's Stop() waiting forever.
class Gate {
 public:
  explicit Gate(std::string path) : path_(std::move(path)) {}
  ~Gate() { Release(); }

  CgroupWatcherCallbacks Wrap(CgroupWatcherCallbacks cb) {
    auto inner = cb.on_created;
    cb.on_created = [this, inner](const std::string& p) {
      if (p == path_) Hold();
      if (inner) inner(p);
    };
    return cb;
  }
  bool WaitHeld() {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, std::chrono::seconds(2), [&] { return held_; });
  }
  void Release() {
    std::lock_guard<std::mutex> l(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  void Hold() {
    std::unique_lock<std::mutex> l(mu_);
    held_ = true;
    cv_.notify_all();
    cv_.wait_for(l, std::chrono::minutes(1), [&] { return released_; });
  }

  std::string path_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false, released_ = false;
};

// Each path is checked for being after all the paths under it: how the watcher orders removals.
void CheckChildrenFirst(const std::vector<std::string>& removed) {
  for (size_t i = 0; i < removed.size(); ++i) {
    for (size_t j = i + 1; j < removed.size(); ++j) {
      INFO(removed[i] + " reported before " + removed[j]);
      CHECK_FALSE(removed[j].rfind(removed[i] + "/", 0) == 0);
    }
  }
}

// After `marker` is reported created, every event queued before its creation has been handled.
void Sync(Recorder& rec, const std::string& marker) {
  std::filesystem::create_directory(marker);
  REQUIRE(rec.WaitCreated({marker}));
}

// The watches this process's inotify instances hold: one "inotify wd:" line each in fdinfo. They
// count against fs.inotify.max_user_watches, so a directory that left the tree must give its up.
int InotifyWatches() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fdinfo")) {
    std::ifstream in(e.path());
    std::string line;
    while (std::getline(in, line)) n += line.rfind("inotify wd:", 0) == 0 ? 1 : 0;
  }
  return n;
}

std::set<std::string> AsSet(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }

TEST_CASE("CgroupWatcher reports every directory of a nested mkdir -p exactly once") {
  TempDir tmp;
  const std::string root = tmp.file("kubepods");
  fs::create_directories(root + "/existing");
  Recorder rec;
  auto w = CgroupWatcher::Start(root, rec.Callbacks());
  REQUIRE(w.ok());

  fs::create_directories(root + "/a/b/c/d");
  fs::create_directories(root + "/x/y");
  fs::create_directories(root + "/existing/z");
  const auto want = Under(root, {"a", "a/b", "a/b/c", "a/b/c/d", "x", "x/y", "existing/z"});
  REQUIRE(rec.WaitCreated(want));
  (*w)->Stop();
  const auto created = rec.Created();
  CHECK(std::set<std::string>(created.begin(), created.end()) == want);
  CHECK(created.size() == want.size());  // no duplicates
  // Parents before children.
  for (size_t i = 0; i < created.size(); ++i) {
    for (size_t j = i + 1; j < created.size(); ++j) {
      CHECK_FALSE(created[i].rfind(created[j] + "/", 0) == 0);
    }
  }
  CHECK(rec.Errors().empty());
}

TEST_CASE("CgroupWatcher reports removals, children before parents") {
  TempDir tmp;
  const std::string root = tmp.path();
  fs::create_directories(root + "/p/c1");
  fs::create_directories(root + "/p/c2");
  Recorder rec;
  auto w = CgroupWatcher::Start(root, rec.Callbacks());
  REQUIRE(w.ok());

  fs::remove(root + "/p/c1");
  REQUIRE(rec.WaitRemoved(Under(root, {"p/c1"})));
  fs::remove_all(root + "/p");
  REQUIRE(rec.WaitRemoved(Under(root, {"p/c1", "p/c2", "p"})));
  (*w)->Stop();
  const auto removed = rec.Removed();
  REQUIRE(removed.size() == 3);
  CHECK(removed.back() == root + "/p");
  CHECK(rec.Created().empty());
}

TEST_CASE("CgroupWatcher can report what exists at start") {
  TempDir tmp;
  fs::create_directories(tmp.path() + "/a/b");
  Recorder rec;
  CgroupWatcherOptions opts;
  opts.report_existing = true;
  auto w = CgroupWatcher::Start(tmp.path(), rec.Callbacks(), opts);
  REQUIRE(w.ok());
  // Reported synchronously by Start.
  CHECK(rec.Created() == std::vector<std::string>{tmp.path() + "/a", tmp.path() + "/a/b"});
}

TEST_CASE("CgroupWatcher waits for a missing root through its parent") {
  TempDir tmp;
  const std::string root = tmp.path() + "/later/kubepods.slice";
  Recorder rec;
  auto w = CgroupWatcher::Start(root, rec.Callbacks());
  REQUIRE(w.ok());

  fs::create_directories(root + "/pod1/ctr");
  REQUIRE(rec.WaitCreated(Under(root, {"pod1", "pod1/ctr"})));
  CHECK(rec.Created().size() == 2);  // the root itself and its ancestors are not reported

  // The root goes away and comes back: watched again.
  fs::remove_all(tmp.path() + "/later");
  REQUIRE(rec.WaitRemoved(Under(root, {"pod1", "pod1/ctr"})));
  fs::create_directories(root + "/pod2");
  REQUIRE(rec.WaitCreated(Under(root, {"pod2"})));
  fs::create_directories(root + "/pod2/ctr2");
  REQUIRE(rec.WaitCreated(Under(root, {"pod2/ctr2"})));
  CHECK(rec.Errors().empty());
}

TEST_CASE("CgroupWatcher: renames are a removal and a creation") {
  TempDir tmp;
  fs::create_directories(tmp.path() + "/old/sub");
  Recorder rec;
  auto w = CgroupWatcher::Start(tmp.path(), rec.Callbacks());
  REQUIRE(w.ok());
  fs::rename(tmp.path() + "/old", tmp.path() + "/new");
  REQUIRE(rec.WaitRemoved(Under(tmp.path(), {"old", "old/sub"})));
  REQUIRE(rec.WaitCreated(Under(tmp.path(), {"new", "new/sub"})));
  fs::create_directories(tmp.path() + "/new/sub/deeper");
  REQUIRE(rec.WaitCreated(Under(tmp.path(), {"new/sub/deeper"})));
}

TEST_CASE("CgroupWatcher: a tree moved away is reported whole, and its look-alike siblings stay") {
  TempDir tmp;
  const std::string root = tmp.file("root");
  // "p-x", "p.y" and "p0" sort next to "p" and "p/...": only the moved tree may be reported.
  for (const char* d : {"p/c1/c2", "p-x", "p.y", "p0", "pa"})
    fs::create_directories(root + "/" + d);
  Recorder rec;
  auto w = CgroupWatcher::Start(root, rec.Callbacks());
  REQUIRE(w.ok());
  fs::rename(root + "/p", tmp.file("elsewhere"));
  REQUIRE(rec.WaitRemoved(Under(root, {"p", "p/c1", "p/c1/c2"})));
  // The siblings are still watched: a removal under each is seen.
  fs::create_directories(root + "/p-x/late");
  REQUIRE(rec.WaitCreated(Under(root, {"p-x/late"})));
  fs::remove(root + "/p-x/late");
  REQUIRE(rec.WaitRemoved(Under(root, {"p-x/late"})));
  (*w)->Stop();
  CHECK(rec.Removed() == std::vector<std::string>{root + "/p/c1/c2", root + "/p/c1", root + "/p",
                                                  root + "/p-x/late"});
}

TEST_CASE("CgroupWatcher reports a deep tree's removal deepest first, and only that tree") {
  TempDir tmp;
  const std::string root = tmp.file("root");
  for (const char* d : {"a/b/c/d/e", "a/b2", "a-x", "a0", "ab/c"}) {
    fs::create_directories(root + "/" + d);
  }
  Recorder rec;
  auto w = CgroupWatcher::Start(root, rec.Callbacks());
  REQUIRE(w.ok());
  fs::remove_all(root + "/a");
  const auto tree = Under(root, {"a", "a/b", "a/b/c", "a/b/c/d", "a/b/c/d/e", "a/b2"});
  REQUIRE(rec.WaitRemoved(tree));
  Sync(rec, root + "/sync");
  CHECK(AsSet(rec.Removed()) == tree);
  CHECK(rec.Removed().size() == tree.size());
  CheckChildrenFirst(rec.Removed());
  // The look-alike siblings are still watched, at their paths.
  fs::create_directory(root + "/ab/c/late");
  REQUIRE(rec.WaitCreated(Under(root, {"ab/c/late"})));
  CHECK(rec.Errors().empty());
}

TEST_CASE("CgroupWatcher: a deep tree moved away is unwatched, and watched again when back") {
  TempDir tmp;
  const std::string root = tmp.file("root");
  for (const char* d : {"a/b/c/d", "a/b2", "a-x", "ab/c"}) fs::create_directories(root + "/" + d);
  Recorder rec;
  auto w = CgroupWatcher::Start(root, rec.Callbacks());
  REQUIRE(w.ok());
  const auto tree = Under(root, {"a", "a/b", "a/b/c", "a/b/c/d", "a/b2"});
  CHECK(InotifyWatches() == 9);  // the root and the 8 directories under it

  fs::rename(root + "/a", tmp.file("away"));
  REQUIRE(rec.WaitRemoved(tree));
  // Changes in the moved tree are not reported: its watches went with it.
  fs::create_directory(tmp.file("away/b/c/d/new"));
  fs::remove(tmp.file("away/b2"));
  Sync(rec, root + "/sync");
  CHECK(AsSet(rec.Created()) == Under(root, {"sync"}));
  CHECK(AsSet(rec.Removed()) == tree);
  CHECK(rec.Removed().size() == tree.size());
  CheckChildrenFirst(rec.Removed());
  CHECK(InotifyWatches() == 9 - 5 + 1);  // the moved tree's released, sync's added

  fs::rename(tmp.file("away"), root + "/a");
  const auto back = Under(root, {"a", "a/b", "a/b/c", "a/b/c/d", "a/b/c/d/new"});
  REQUIRE(rec.WaitCreated(back));
  fs::create_directory(root + "/a/b/c/d/new/deeper");
  REQUIRE(rec.WaitCreated(Under(root, {"a/b/c/d/new/deeper"})));
  CHECK(rec.Created().size() == back.size() + 2);  // sync and deeper: nothing twice
  CHECK(InotifyWatches() == 5 + 6);
  CHECK(rec.Errors().empty());
}

TEST_CASE("CgroupWatcher: a directory named as a prefix of a sibling is its own directory") {
  TempDir tmp;
  const std::string root = tmp.file("root");
  fs::create_directories(root + "/ab/x");
  fs::create_directories(root + "/a-b");
  Recorder rec;
  auto w = CgroupWatcher::Start(root, rec.Callbacks());
  REQUIRE(w.ok());
  fs::create_directories(root + "/a/x");
  REQUIRE(rec.WaitCreated(Under(root, {"a", "a/x"})));
  fs::remove_all(root + "/a");
  REQUIRE(rec.WaitRemoved(Under(root, {"a", "a/x"})));
  Sync(rec, root + "/sync");
  CHECK(rec.Removed() == std::vector<std::string>{root + "/a/x", root + "/a"});
  // "ab" and "a-b" are still watched, under their own names.
  fs::remove(root + "/ab/x");
  fs::create_directory(root + "/a-b/y");
  REQUIRE(rec.WaitRemoved(Under(root, {"ab/x"})));
  REQUIRE(rec.WaitCreated(Under(root, {"a-b/y"})));
  CHECK(rec.Errors().empty());
}

TEST_CASE(
    "CgroupWatcher: a directory moved in before its move is read is watched at its new path") {
  // inotify gives a directory that is watched already its existing descriptor. Here the watcher
  // lists "new" (announced by IN_CREATE) and finds "sub" there while the tree still has it
  // under "old": its IN_MOVED_FROM is queued behind.
  TempDir tmp;
  const std::string root = tmp.file("root");
  fs::create_directories(root + "/old/sub/deep");
  Recorder rec;
  Gate gate(root + "/gate");
  auto w = CgroupWatcher::Start(root, gate.Wrap(rec.Callbacks()));
  REQUIRE(w.ok());
  fs::create_directory(root + "/gate");
  REQUIRE(gate.WaitHeld());
  fs::create_directory(root + "/new");
  fs::rename(root + "/old/sub", root + "/new/sub");
  gate.Release();

  REQUIRE(rec.WaitCreated(Under(root, {"gate", "new", "new/sub", "new/sub/deep"})));
  REQUIRE(rec.WaitRemoved(Under(root, {"old/sub", "old/sub/deep"})));
  // Still watched, under the new path only.
  fs::create_directory(root + "/new/sub/deep/deeper");
  REQUIRE(rec.WaitCreated(Under(root, {"new/sub/deep/deeper"})));
  fs::remove(root + "/new/sub/deep/deeper");
  REQUIRE(rec.WaitRemoved(Under(root, {"new/sub/deep/deeper"})));
  fs::create_directory(root + "/old/again");
  REQUIRE(rec.WaitCreated(Under(root, {"old/again"})));
  (*w)->Stop();
  CHECK(rec.Created().size() == 6);  // nothing twice
  CHECK(rec.Removed().size() == 3);
  CHECK(rec.Errors().empty());
}

// A private directory on tmpfs when there is one: the next case makes some 16,000 directories.
class ScratchDir {
 public:
  ScratchDir() {
    char tmpl[] = "/dev/shm/nq.XXXXXX";
    if (::mkdtemp(tmpl) != nullptr) path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string path(const TempDir& fallback) const {
    return path_.empty() ? fallback.path() : path_;
  }

 private:
  std::string path_;
};

TEST_CASE("CgroupWatcher: after a lost event queue the rescan reports each change once") {
  long queue = 0;
  std::ifstream("/proc/sys/fs/inotify/max_queued_events") >> queue;
  if (queue <= 0 || queue > 100000) {
    WARN("fs.inotify.max_queued_events=" << queue << ": too large to overflow here, not run");
    return;
  }
  TempDir tmp;
  ScratchDir scratch;
  const std::string root = scratch.path(tmp) + "/root";
  for (const char* d : {"keep/k1", "gone/g1", "swap/s1"}) fs::create_directories(root + "/" + d);
  Recorder rec;
  Gate gate(root + "/gate");
  auto w = CgroupWatcher::Start(root, gate.Wrap(rec.Callbacks()));
  REQUIRE(w.ok());
  fs::create_directory(root + "/gate");
  REQUIRE(gate.WaitHeld());
  // More creations than the kernel queues: it drops the rest and says so (IN_Q_OVERFLOW).
  std::set<std::string> made = Under(root, {"gate"});
  for (long i = 0; i < queue + 64; ++i) {
    const std::string d = root + "/d" + std::to_string(i);
    fs::create_directory(d);
    made.insert(d);
  }
  // Lost with the queue: a removal, and a directory replaced under the same name.
  fs::remove_all(root + "/gone");
  fs::remove_all(root + "/swap");
  fs::create_directories(root + "/swap/s2");
  gate.Release();

  // Some 16,000 creations and a rescan to get through: allow up to 30 s on a busy machine.
  fs::create_directory(root + "/sync");
  bool synced = false;
  for (int i = 0; i < 15 && !synced; ++i) synced = rec.WaitCreated(Under(root, {"sync"}));
  REQUIRE(synced);
  made.insert(root + "/sync");
  for (const char* d : {"swap", "swap/s2"}) made.insert(root + "/" + d);
  const auto created = rec.Created();
  CHECK(created.size() == made.size());  // nothing twice
  CHECK(AsSet(created) == made);
  const auto removed = rec.Removed();
  CHECK(AsSet(removed) == Under(root, {"gone", "gone/g1", "swap", "swap/s1"}));
  CHECK(removed.size() == 4);
  CheckChildrenFirst(removed);
  // The new "swap" is the one watched, and "keep" still is.
  fs::create_directory(root + "/swap/s2/after");
  fs::create_directory(root + "/keep/k1/after");
  REQUIRE(rec.WaitCreated(Under(root, {"swap/s2/after", "keep/k1/after"})));
  CHECK(rec.Errors().empty());
}

TEST_CASE("CgroupWatcher stops promptly and can be stopped twice") {
  TempDir tmp;
  Recorder rec;
  auto w = CgroupWatcher::Start(tmp.path(), rec.Callbacks());
  REQUIRE(w.ok());
  const auto t0 = std::chrono::steady_clock::now();
  (*w)->Stop();
  (*w)->Stop();
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1));
  fs::create_directories(tmp.path() + "/after");
  CHECK(rec.Created().empty());
}

}  // namespace
