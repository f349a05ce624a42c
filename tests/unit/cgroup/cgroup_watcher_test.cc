// The watcher on plain directories in a TempDir: inotify behaves the same for them as for
// cgroup directories, so no privilege is needed.
#include "cgroup/fs/cgroup_watcher.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <filesystem>
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
  void Add(std::vector<std::string>* v, const std::string& p) {
    std::lock_guard<std::mutex> l(mu_);
    v->push_back(p);
    cv_.notify_all();
  }
  std::vector<std::string> Get(const std::vector<std::string>& v) {
    std::lock_guard<std::mutex> l(mu_);
    return v;
  }
  bool WaitFor(const std::vector<std::string>& v, const std::set<std::string>& want) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, std::chrono::seconds(2), [&] {
      std::set<std::string> have(v.begin(), v.end());
      for (const auto& w : want) {
        if (have.count(w) == 0) return false;
      }
      return true;
    });
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> created_, removed_, errors_;
};

std::set<std::string> Under(const std::string& root, const std::vector<std::string>& rel) {
  std::set<std::string> out;
  for (const auto& r : rel) out.insert(root + "/" + r);
  return out;
}

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
