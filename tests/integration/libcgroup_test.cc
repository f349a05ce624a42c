// libcgroup on the real hierarchy: its mount table gives the cgroup2 mount netqos uses (escaped
// mount paths decoded), its tree walk and the plain fallback visit the same directories, and the
// two calls netqos cannot take from it on cgroup v2 (creating a cgroup without controllers,
// moving a task into one) are shown failing, which is why cgroups are made with mkdir(2) and
// tasks moved through cgroup.procs (cgroup/fs/cgroup_library.h). Root only.
#include <libcgroup.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cgroup/fs/cgroup_library.h"
#include "cgroup/fs/mount_detect.h"
#include "support/cgroup_fixture.h"

namespace {

using netqos::cgroup::DetectCgroup2Mount;
using netqos::cgroup::FindCgroup2Mount;
using netqos::cgroup::ListLibcgroupCgroup2Mounts;
using netqos::cgroup::WalkCgroupDirs;
using netqos::testing::TestCgroup;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> Walk(const std::string& root, size_t max_dirs,
                              const std::string& stop_at = "") {
  std::vector<std::string> seen;
  auto st = WalkCgroupDirs(root, max_dirs, [&](const std::string& dir) {
    seen.push_back(dir);
    return dir != stop_at;
  });
  INFO(st.message());
  REQUIRE(st.ok());
  return seen;
}

TEST_CASE("libcgroup: its mount table names the cgroup2 mount that mountinfo names",
          "[cgroup][libcgroup]") {
  auto listed = ListLibcgroupCgroup2Mounts();
  REQUIRE(listed.ok());
  // libcgroup sees a v2 hierarchy through its controllers; this host and production have some.
  REQUIRE_FALSE(listed->empty());
  auto from_mountinfo = FindCgroup2Mount(ReadAll("/proc/self/mountinfo"));
  REQUIRE(from_mountinfo.ok());
  auto detected = DetectCgroup2Mount();
  REQUIRE(detected.ok());
  CHECK(*detected == *from_mountinfo);
  const bool listed_there = std::any_of(listed->begin(), listed->end(), [&](const auto& m) {
    return m.path == *detected && !m.controller.empty();
  });
  CHECK(listed_there);
}

TEST_CASE("libcgroup: a cgroup2 mount at a path with a space is listed decoded",
          "[cgroup][libcgroup]") {
  const std::string dir = "/tmp/netqos libcgroup " + std::to_string(::getpid());
  ::rmdir(dir.c_str());  // a leftover of a crashed run with the same pid
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  // The extra mount lives in a child's private mount namespace and ends with it.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
    std::string report = "setup failed";
    if (::unshare(CLONE_NEWNS) == 0 &&
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
        ::mount("none", dir.c_str(), "cgroup2", 0, nullptr) == 0) {
      auto listed = ListLibcgroupCgroup2Mounts();
      report.clear();
      if (!listed.ok()) report = "error " + listed.status().message();
      for (const auto& m : listed.ok() ? *listed : std::vector<netqos::cgroup::LibcgroupMount>{}) {
        report += m.path + "\n";
      }
    } else {
      report += std::string(": ") + std::strerror(errno);
    }
    (void)!::write(pipe_fds[1], report.data(), report.size());
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string report;
  char buf[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof(buf))) > 0;) report.append(buf, n);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  ::rmdir(dir.c_str());
  INFO("listed in the child:\n" << report);
  CHECK(report.find(dir + "\n") != std::string::npos);
}

TEST_CASE("libcgroup: the tree walk visits parents first, stops when asked, and is bounded",
          "[cgroup][libcgroup]") {
  TestCgroup top("netqos-walk-" + std::to_string(::getpid()));
  TestCgroup a(top, "a");
  TestCgroup ab(a, "b");
  TestCgroup abc(ab, "c");
  TestCgroup d(top, "d");

  auto all = Walk(top.Path() + "/", 1000);  // a trailing '/' is the same root
  REQUIRE(all.size() == 5);
  CHECK(all.front() == top.Path());
  auto pos = [&](const std::string& p) {
    return std::find(all.begin(), all.end(), p) - all.begin();
  };
  CHECK(pos(a.Path()) < pos(ab.Path()));
  CHECK(pos(ab.Path()) < pos(abc.Path()));
  CHECK(pos(d.Path()) < 5);

  auto stopped = Walk(top.Path(), 1000, ab.Path());
  CHECK(stopped.back() == ab.Path());
  CHECK(std::find(stopped.begin(), stopped.end(), abc.Path()) == stopped.end());

  CHECK(Walk(top.Path(), 2).size() == 2);
  CHECK(Walk(abc.Path(), 1000) == std::vector<std::string>{abc.Path()});
}

TEST_CASE("libcgroup: a tree libcgroup does not know is walked the same way without it",
          "[cgroup][libcgroup]") {
  const std::string root = "/tmp/netqos-plainwalk-" + std::to_string(::getpid());
  std::filesystem::create_directories(root + "/a/b/c");
  std::filesystem::create_directories(root + "/d");
  std::ofstream(root + "/a/file") << "x";
  std::filesystem::create_directory_symlink(root + "/d", root + "/a/link");
  auto all = Walk(root, 1000);
  std::filesystem::remove_all(root);
  REQUIRE(all.size() == 5);  // the file and the symlink are not cgroups
  CHECK(all.front() == root);
  auto pos = [&](const std::string& p) {
    return std::find(all.begin(), all.end(), root + p) - all.begin();
  };
  CHECK(pos("/a") < pos("/a/b"));
  CHECK(pos("/a/b") < pos("/a/b/c"));
  CHECK(pos("/d") < 5);

  auto missing = WalkCgroupDirs(root, 10, [](const std::string&) { return true; });
  CHECK(missing.code() == netqos::StatusCode::kNotFound);
}

// The mount point of every hierarchy in libcgroup's table (v1 and v2), each once.
const std::vector<std::string>& AllHierarchies() {
  static const std::vector<std::string> roots = [] {
    std::vector<std::string> out;
    void* handle = nullptr;
    cgroup_mount_point info{};
    for (int rc = cgroup_get_controller_begin(&handle, &info); rc == 0;
         rc = cgroup_get_controller_next(&handle, &info)) {
      if (std::find(out.begin(), out.end(), info.path) == out.end()) out.push_back(info.path);
    }
    cgroup_get_controller_end(&handle);
    return out;
  }();
  return roots;
}

// If this starts failing, libcgroup learned to make controller-less v2 cgroups: create the test
// and demo cgroups with it (tests/support/cgroup_fixture.h) instead of mkdir(2).
TEST_CASE(
    "libcgroup: on cgroup v2 it cannot create a cgroup without controllers or move a task "
    "into one",
    "[cgroup][libcgroup]") {
  REQUIRE(cgroup_init() == 0);
  const std::string mount = TestCgroup::Cgroup2Mount();
  const std::string name = "netqos-libcgroup-" + std::to_string(::getpid());
  struct cgroup* cg = cgroup_new_cgroup(name.c_str());
  REQUIRE(cg != nullptr);
  const int created = cgroup_create_cgroup(cg, 0);
  // Where it could have made one: every hierarchy libcgroup knows, v1 ones included (with
  // controllers added it creates in each of theirs). Whatever appeared is removed again.
  std::vector<std::string> made_where;
  for (const std::string& root : AllHierarchies()) {
    const std::string dir = root + "/" + name;
    struct stat st {};
    if (::stat(dir.c_str(), &st) == 0) {
      made_where.push_back(dir);
      ::rmdir(dir.c_str());
    }
  }
  INFO("cgroup_create_cgroup returned " << created << " (" << cgroup_strerror(created) << ")");
  CHECK(made_where.empty());  // "success" or not, nothing was made
  CHECK(std::find(AllHierarchies().begin(), AllHierarchies().end(), mount) !=
        AllHierarchies().end());

  TestCgroup made(name);  // made the way netqos makes them
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  const int attached = cgroup_attach_task_pid(cg, child);
  const std::vector<pid_t> in_it = made.Pids();
  INFO("cgroup_attach_task_pid returned " << attached << " (" << cgroup_strerror(attached) << ")");
  CHECK(std::find(in_it.begin(), in_it.end(), child) == in_it.end());
  made.AddProcess(child);  // the cgroup.procs write works
  const std::vector<pid_t> after = made.Pids();
  CHECK(std::find(after.begin(), after.end(), child) != after.end());
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  cgroup_free(&cg);
}

}  // namespace
