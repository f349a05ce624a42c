// TestCgroup: a cgroup v2 directory for one test, under the detected cgroup2 mount (or under
// another TestCgroup). The destructor kills whatever still runs in it and in its descendants,
// then removes them all, also when the test failed; it never throws. Made with mkdir(2) and
// cgroup.procs writes: libcgroup cannot do either on v2 (tests/integration/libcgroup_test.cc).
#pragma once

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cgroup/fs/mount_detect.h"

namespace netqos::testing {

class TestCgroup {
 public:
  // <cgroup2 mount>/<name>; an existing directory is adopted (and removed at the end).
  explicit TestCgroup(const std::string& name) : TestCgroup(Cgroup2Mount() + "/" + name, 0) {}
  // <parent>/<name>; destroy children before their parent (declare them after it).
  TestCgroup(const TestCgroup& parent, const std::string& name)
      : TestCgroup(parent.Path() + "/" + name, 0) {}

  ~TestCgroup() {
    try {
      Destroy(path_);
    } catch (...) {  // a destructor must not throw; leftovers show in the cleanup checks
    }
  }
  TestCgroup(const TestCgroup&) = delete;
  TestCgroup& operator=(const TestCgroup&) = delete;

  const std::string& Path() const { return path_; }
  // The cgroup id: the directory's inode, which is what bpf_skb_cgroup_id reports.
  uint64_t Id() const {
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0) throw std::runtime_error("stat " + path_);
    return static_cast<uint64_t>(st.st_ino);
  }
  // Moves a process (all its threads) into this cgroup.
  void AddProcess(pid_t pid) const {
    std::ofstream out(path_ + "/cgroup.procs");
    out << pid << std::flush;
    if (!out) throw std::runtime_error("cannot move pid " + std::to_string(pid) + " to " + path_);
  }
  std::vector<pid_t> Pids() const { return ReadPids(path_); }

  // The cgroup2 mount point (e.g. /sys/fs/cgroup/unified on hybrid hosts); throws if none.
  static std::string Cgroup2Mount() {
    auto mount = netqos::cgroup::DetectCgroup2Mount();
    if (!mount.ok()) throw std::runtime_error("no cgroup2 mount: " + mount.status().message());
    return *mount;
  }

 private:
  TestCgroup(std::string path, int /*tag*/) : path_(std::move(path)) {
    if (::mkdir(path_.c_str(), 0755) != 0 && errno != EEXIST) {
      throw std::runtime_error("mkdir " + path_ + ": " + std::strerror(errno));
    }
  }

  static std::vector<pid_t> ReadPids(const std::string& dir) {
    std::vector<pid_t> pids;
    std::ifstream in(dir + "/cgroup.procs");
    pid_t pid = 0;
    while (in >> pid) pids.push_back(pid);
    return pids;
  }

  static std::vector<std::string> SubDirs(const std::string& dir) {
    std::vector<std::string> out;
    if (DIR* d = ::opendir(dir.c_str()); d != nullptr) {
      while (dirent* e = ::readdir(d)) {
        if (e->d_type == DT_DIR && std::strcmp(e->d_name, ".") != 0 &&
            std::strcmp(e->d_name, "..") != 0) {
          out.push_back(dir + "/" + e->d_name);
        }
      }
      ::closedir(d);
    }
    return out;
  }

  // Kills everything in dir's subtree, then removes it bottom-up. Bounded: gives up after ~3 s
  // per cgroup (the leftover is then visible to the suite's cleanup checks).
  static void Destroy(const std::string& dir) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return;
    for (const std::string& sub : SubDirs(dir)) Destroy(sub);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    // cgroup.kill (5.14+) SIGKILLs the whole subtree, including processes forking meanwhile.
    if (std::ofstream kill(dir + "/cgroup.kill"); kill) kill << "1" << std::flush;
    while (std::chrono::steady_clock::now() < deadline) {
      const std::vector<pid_t> pids = ReadPids(dir);
      if (pids.empty()) break;
      for (pid_t pid : pids) ::kill(pid, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    // An exiting task leaves its cgroup asynchronously: rmdir may see EBUSY for a moment.
    while (::rmdir(dir.c_str()) != 0 && errno != ENOENT &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  std::string path_;
};

}  // namespace netqos::testing
