// Container -> cgroup resolution on the real cgroup2 hierarchy: a fake kubepods tree for both
// cgroup drivers under a private test root (<mount>/netqos-test-<pid>), its cgroup ids checked
// against the inode and the name_to_handle_at handle, and the watcher on real cgroup dirs.
// Root only. Every cgroup made here is rmdir'ed, deepest first, even when a check fails.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cgroup/cgroup_paths.h"
#include "cgroup/fs/cgroup_dirs.h"
#include "cgroup/fs/cgroup_watcher.h"
#include "cgroup/fs/mount_detect.h"

namespace {

using netqos::cgroup::CgroupDriver;
using netqos::cgroup::CgroupId;
using netqos::cgroup::CgroupLayout;
using netqos::cgroup::CgroupWatcher;
using netqos::cgroup::CgroupWatcherCallbacks;
using netqos::cgroup::ContainerCgroupCandidates;
using netqos::cgroup::DetectCgroup2Mount;
using netqos::cgroup::PodCgroupCandidates;
using netqos::cgroup::PodQosClass;
using netqos::cgroup::ResolveCgroupDir;
namespace fs = std::filesystem;

// A private directory in the cgroup2 hierarchy. Cgroup dirs hold kernel interface files that
// cannot be unlinked, so cleanup is rmdir of every directory, deepest first.
class TestCgroupRoot {
 public:
  explicit TestCgroupRoot(const std::string& mount)
      : path_(mount + "/netqos-test-" + std::to_string(::getpid())) {
    RmdirTree(path_);  // a leftover of an earlier crashed run with the same pid
    if (::mkdir(path_.c_str(), 0755) != 0) {
      FAIL("mkdir " << path_ << ": " << std::strerror(errno));
    }
  }
  ~TestCgroupRoot() { RmdirTree(path_); }
  TestCgroupRoot(const TestCgroupRoot&) = delete;
  TestCgroupRoot& operator=(const TestCgroupRoot&) = delete;

  const std::string& path() const { return path_; }

  // mkdir -p of a path relative to the root.
  void Make(const std::string& rel) const {
    std::string cur = path_;
    size_t pos = 0;
    while (pos <= rel.size()) {
      const size_t slash = std::min(rel.find('/', pos), rel.size());
      cur += "/" + rel.substr(pos, slash - pos);
      if (::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) {
        FAIL("mkdir " << cur << ": " << std::strerror(errno));
      }
      pos = slash + 1;
    }
  }

  static void RmdirTree(const std::string& top) {
    std::error_code ec;
    if (!fs::is_directory(top, ec)) return;
    std::vector<std::string> dirs{top};
    for (auto it = fs::recursive_directory_iterator(top, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory(ec)) dirs.push_back(it->path().string());
    }
    std::sort(dirs.begin(), dirs.end(), [](const std::string& a, const std::string& b) {
      return std::count(a.begin(), a.end(), '/') > std::count(b.begin(), b.end(), '/');
    });
    for (const auto& d : dirs) ::rmdir(d.c_str());
  }

 private:
  std::string path_;
};

uint64_t Inode(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return static_cast<uint64_t>(st.st_ino);
}

// The cgroup id as Katalyst and the kernel see it: the 8-byte name_to_handle_at handle.
uint64_t HandleId(const std::string& path) {
  struct {
    file_handle fh;
    unsigned char bytes[64];
  } h{};
  h.fh.handle_bytes = sizeof(h.bytes);
  int mount_id = 0;
  REQUIRE(::name_to_handle_at(AT_FDCWD, path.c_str(), &h.fh, &mount_id, 0) == 0);
  REQUIRE(h.fh.handle_bytes == 8);
  uint64_t id = 0;
  std::memcpy(&id, h.fh.f_handle, sizeof(id));
  return id;
}

const std::string kUid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

TEST_CASE("cgroup: the cgroup2 mount is detected", "[cgroup]") {
  auto mount = DetectCgroup2Mount();
  REQUIRE(mount.ok());
  INFO("mount=" << *mount);
  CHECK(fs::exists(*mount + "/cgroup.controllers"));
  auto root_id = CgroupId(*mount);
  REQUIRE(root_id.ok());
  CHECK(*root_id == Inode(*mount));
}

TEST_CASE("cgroup: container cgroups resolve for both drivers, ids are inode and handle",
          "[cgroup]") {
  auto mount = DetectCgroup2Mount();
  REQUIRE(mount.ok());
  TestCgroupRoot root(*mount);

  struct Case {
    CgroupDriver driver;
    PodQosClass qos;
    std::string runtime;
  };
  for (const auto& c : {Case{CgroupDriver::kCgroupfs, PodQosClass::kBurstable, "containerd"},
                        Case{CgroupDriver::kCgroupfs, PodQosClass::kGuaranteed, "docker"},
                        Case{CgroupDriver::kSystemd, PodQosClass::kBestEffort, "containerd"},
                        Case{CgroupDriver::kSystemd, PodQosClass::kGuaranteed, "cri-o"}}) {
    const CgroupLayout layout{c.driver, {}};
    const std::string cid = "c0ffee" + c.runtime;
    const auto candidates = ContainerCgroupCandidates(layout, c.qos, kUid, c.runtime, cid);
    REQUIRE(candidates.size() == 1);
    INFO("container cgroup " << candidates[0]);
    root.Make(candidates[0]);

    // Resolution with the QoS class unknown still finds it.
    auto dir = ResolveCgroupDir(
        root.path(),
        ContainerCgroupCandidates(layout, PodQosClass::kUnknown, kUid, c.runtime, cid));
    REQUIRE(dir.ok());
    CHECK(*dir == root.path() + "/" + candidates[0]);
    auto pod_dir =
        ResolveCgroupDir(root.path(), PodCgroupCandidates(layout, PodQosClass::kUnknown, kUid));
    REQUIRE(pod_dir.ok());
    CHECK(fs::path(*dir).parent_path() == fs::path(*pod_dir));

    auto id = CgroupId(*dir);
    REQUIRE(id.ok());
    CHECK(*id == Inode(*dir));
    CHECK(*id == HandleId(*dir));
    auto again = CgroupId(*dir);
    REQUIRE(again.ok());
    CHECK(*again == *id);  // stable
    auto pod_id = CgroupId(*pod_dir);
    REQUIRE(pod_id.ok());
    CHECK(*pod_id != *id);
  }

  auto missing = ResolveCgroupDir(
      root.path(), ContainerCgroupCandidates(CgroupLayout{CgroupDriver::kSystemd, {}},
                                             PodQosClass::kBurstable, kUid, "containerd", "nope"));
  CHECK_FALSE(missing.ok());
}

TEST_CASE("cgroup: the watcher sees a container cgroup within 1 s, and its removal", "[cgroup]") {
  auto mount = DetectCgroup2Mount();
  REQUIRE(mount.ok());
  TestCgroupRoot root(*mount);
  const std::string watched = root.path() + "/kubepods.slice";  // does not exist yet

  std::mutex mu;
  std::condition_variable cv;
  std::set<std::string> created, removed;
  CgroupWatcherCallbacks cb;
  cb.on_created = [&](const std::string& p) {
    std::lock_guard<std::mutex> l(mu);
    created.insert(p);
    cv.notify_all();
  };
  cb.on_removed = [&](const std::string& p) {
    std::lock_guard<std::mutex> l(mu);
    removed.insert(p);
    cv.notify_all();
  };
  auto w = CgroupWatcher::Start(watched, cb);
  REQUIRE(w.ok());

  const CgroupLayout layout{CgroupDriver::kSystemd, {}};
  const std::string ctr =
      ContainerCgroupCandidates(layout, PodQosClass::kBurstable, kUid, "containerd", "abc")[0];
  const auto t0 = std::chrono::steady_clock::now();
  root.Make(ctr);
  const std::string ctr_abs = root.path() + "/" + ctr;
  {
    std::unique_lock<std::mutex> l(mu);
    REQUIRE(cv.wait_for(l, std::chrono::seconds(1), [&] { return created.count(ctr_abs) != 0; }));
  }
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1));
  CHECK(created.count(fs::path(ctr_abs).parent_path().string()) == 1);  // the pod slice too

  REQUIRE(::rmdir(ctr_abs.c_str()) == 0);
  {
    std::unique_lock<std::mutex> l(mu);
    REQUIRE(cv.wait_for(l, std::chrono::seconds(1), [&] { return removed.count(ctr_abs) != 0; }));
  }
  (*w)->Stop();
}

}  // namespace
