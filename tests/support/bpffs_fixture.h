// PrivateBpffs: a bpffs instance of one test's own, mounted on a fresh directory under /tmp. Each
// bpffs mount is a separate namespace of pins, so tests never see each other's (or a daemon's)
// maps and links. The destructor unmounts it, which releases every pin left in it.
#pragma once

#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace netqos::testing {

class PrivateBpffs {
 public:
  PrivateBpffs() {
    char tmpl[] = "/tmp/nq-bpffs.XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    if (::mount("bpf", dir_.c_str(), "bpf", 0, "mode=0700") != 0) {
      const std::string err = std::strerror(errno);
      ::rmdir(dir_.c_str());
      throw std::runtime_error("mount bpffs at " + dir_ + ": " + err);
    }
  }
  ~PrivateBpffs() {
    ::umount2(dir_.c_str(), MNT_DETACH);
    ::rmdir(dir_.c_str());
  }
  PrivateBpffs(const PrivateBpffs&) = delete;
  PrivateBpffs& operator=(const PrivateBpffs&) = delete;

  // The mount point.
  const std::string& Root() const { return dir_; }
  // A pin directory inside it ("<root>/netqos"), not created.
  std::string PinDir() const { return dir_ + "/netqos"; }

 private:
  std::string dir_;
};

}  // namespace netqos::testing
