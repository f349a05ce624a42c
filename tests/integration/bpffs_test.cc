// bpf::EnsureBpffs / IsBpffs against the real kernel, inside a private mount namespace on a
// dedicated thread: every mount the test makes dies with that thread, so the host's mounts
// (including whatever /sys/fs/bpf is) are never touched. Root only.
#include "bpf/bpffs.h"

#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "support/temp_dir.h"

namespace {

using netqos::StatusCode;
using netqos::bpf::EnsureBpffs;
using netqos::bpf::IsBpffs;

// Runs fn on a new thread that has its own mount namespace with "/" recursively private. Returns
// "" on success, else what failed (fn's own result, or the namespace setup error). Catch2
// assertions are not thread-safe, so fn reports through its return value.
std::string InPrivateMountNs(const std::function<std::string()>& fn) {
  std::string result;
  std::thread t([&] {
    if (::unshare(CLONE_FS | CLONE_NEWNS) != 0) {
      result = std::string("unshare(CLONE_FS|CLONE_NEWNS): ") + std::strerror(errno);
      return;
    }
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      result = std::string("mount --make-rprivate /: ") + std::strerror(errno);
      return;
    }
    try {
      result = fn();
    } catch (const std::exception& e) {
      result = std::string("exception: ") + e.what();
    }
  });
  t.join();
  return result;
}

// "" when r is ok and equals want, else a description.
std::string Expect(const netqos::Result<bool>& r, bool want, const std::string& what) {
  if (!r.ok()) return what + ": " + r.status().message();
  if (*r != want) return what + ": got " + (*r ? "true" : "false");
  return "";
}

TEST_CASE("EnsureBpffs mounts a bpffs on the pin dir's missing parent, once") {
  netqos::testing::TempDir tmp;
  const std::string parent = tmp.file("fs/bpf");  // missing: EnsureBpffs creates it
  const std::string pin_dir = parent + "/netqos";
  std::string err = InPrivateMountNs([&]() -> std::string {
    if (auto e = Expect(IsBpffs(tmp.path()), false, "IsBpffs(tmp)"); !e.empty()) return e;
    if (auto e = Expect(EnsureBpffs(pin_dir), true, "first EnsureBpffs"); !e.empty()) return e;
    if (auto e = Expect(IsBpffs(parent), true, "IsBpffs(parent)"); !e.empty()) return e;
    // The pin dir itself is the caller's to create; on a bpffs mkdir works.
    if (std::filesystem::exists(pin_dir)) return "EnsureBpffs created the pin dir";
    if (::mkdir(pin_dir.c_str(), 0700) != 0)
      return "mkdir pin dir: " + std::string(std::strerror(errno));
    if (auto e = Expect(IsBpffs(pin_dir), true, "IsBpffs(pin_dir)"); !e.empty()) return e;
    if (auto e = Expect(EnsureBpffs(pin_dir), false, "second EnsureBpffs"); !e.empty()) return e;
    // A pin dir nested deeper in the bpffs: its parent is created there, nothing is mounted.
    if (auto e = Expect(EnsureBpffs(pin_dir + "/sub/pins/"), false, "nested EnsureBpffs");
        !e.empty())
      return e;
    if (auto e = Expect(IsBpffs(pin_dir + "/sub"), true, "IsBpffs(nested)"); !e.empty()) return e;
    struct stat st {};
    if (::stat(parent.c_str(), &st) != 0) return "stat parent failed";
    if ((st.st_mode & 0777) != 0700) return "bpffs mode is not 0700";
    return "";
  });
  INFO(err);
  CHECK(err.empty());
  // The mount died with the thread's namespace: the host sees a plain directory.
  auto host = IsBpffs(parent);
  REQUIRE(host.ok());
  CHECK_FALSE(*host);
}

TEST_CASE("EnsureBpffs on /sys/fs/bpf in a private mount namespace") {
  // Whatever the host has at /sys/fs/bpf (a bpffs, or plain sysfs on some machines), after
  // EnsureBpffs it is a bpffs in this namespace, and the host's state is unchanged afterwards.
  auto before = IsBpffs("/sys/fs/bpf");
  REQUIRE(before.ok());
  std::string err = InPrivateMountNs([&]() -> std::string {
    auto mounted = EnsureBpffs("/sys/fs/bpf/netqos-bpffs-test");
    if (!mounted.ok()) return "EnsureBpffs: " + mounted.status().message();
    if (*mounted == *before) return "mounted should be the opposite of 'was a bpffs before'";
    return Expect(IsBpffs("/sys/fs/bpf"), true, "IsBpffs(/sys/fs/bpf)");
  });
  INFO(err);
  CHECK(err.empty());
  auto after = IsBpffs("/sys/fs/bpf");
  REQUIRE(after.ok());
  CHECK(*after == *before);
  CHECK_FALSE(std::filesystem::exists("/sys/fs/bpf/netqos-bpffs-test"));
}

TEST_CASE("EnsureBpffs refuses to hide files, and rejects bad pin dirs") {
  netqos::testing::TempDir tmp;
  std::ofstream(tmp.file("keep-me")) << "x";
  std::string err = InPrivateMountNs([&]() -> std::string {
    auto r = EnsureBpffs(tmp.file("netqos"));  // parent = tmp, which has a file in it
    if (r.ok()) return "mounted over a non-empty directory";
    if (r.status().code() != StatusCode::kFailedPrecondition)
      return "wrong code: " + r.status().message();
    if (r.status().message().find(tmp.path()) == std::string::npos)
      return "message does not name the directory: " + r.status().message();
    if (!std::filesystem::exists(tmp.file("keep-me"))) return "file hidden";
    return "";
  });
  INFO(err);
  CHECK(err.empty());

  for (const char* bad : {"", "relative/pins", "/", "//"}) {
    INFO(bad);
    auto r = EnsureBpffs(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
  }
  // The parent path runs through a regular file.
  auto through_file = EnsureBpffs(tmp.file("keep-me") + "/bpf/netqos");
  REQUIRE_FALSE(through_file.ok());
  CHECK_THAT(through_file.status().message(), Catch::Contains(tmp.file("keep-me")));
}

TEST_CASE("IsBpffs names a missing path") {
  netqos::testing::TempDir tmp;
  auto r = IsBpffs(tmp.file("absent"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kNotFound);
  CHECK_THAT(r.status().message(), Catch::Contains(tmp.file("absent")));
}

}  // namespace
