#include "bpf/bpffs.h"

#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "common/errno_status.h"

namespace netqos::bpf {
namespace {

// "/a/b/c/" -> "/a/b"; "/a" -> "/".
std::string ParentOf(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const auto slash = path.rfind('/');
  if (slash == 0 || slash == std::string::npos) return "/";
  path.resize(slash);
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

}  // namespace

Result<bool> IsBpffs(const std::string& path) {
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return ErrnoStatus("statfs(" + path + ")", errno);
  return static_cast<unsigned long>(fs.f_type) == static_cast<unsigned long>(BPF_FS_MAGIC);
}

Result<bool> EnsureBpffs(const std::string& pin_dir) {
  if (pin_dir.empty() || pin_dir[0] != '/' || pin_dir.find_first_not_of('/') == std::string::npos) {
    return InvalidArgument("bpf pin dir \"" + pin_dir + "\" must be an absolute path below /");
  }
  // A pin dir that already is (or is inside) a bpffs needs nothing, whatever its parent is.
  if (auto here = IsBpffs(pin_dir); here.ok() && *here) return false;
  const std::string parent = ParentOf(pin_dir);

  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  if (ec) return ErrnoStatus("mkdir -p " + parent, ec.value());
  struct stat st {};
  if (::stat(parent.c_str(), &st) != 0) return ErrnoStatus("stat(" + parent + ")", errno);
  if (!S_ISDIR(st.st_mode)) return FailedPrecondition(parent + " is not a directory");

  NETQOS_ASSIGN_OR_RETURN(bool on_bpffs, IsBpffs(parent));
  if (on_bpffs) return false;

  if (parent == "/") return FailedPrecondition("refusing to mount a bpffs on /");
  std::filesystem::directory_iterator it(parent, ec);
  if (ec) return ErrnoStatus("opendir(" + parent + ")", ec.value());
  if (it != std::filesystem::directory_iterator()) {
    return FailedPrecondition("bpf pin dir " + pin_dir + ": " + parent +
                              " is not a bpffs and not empty; mount one there (mount -t bpf bpf " +
                              parent + ") or choose another --bpf-pin-dir");
  }
  if (::mount("bpf", parent.c_str(), "bpf", 0, "mode=0700") != 0) {
    return ErrnoStatus("mount(bpf, " + parent + ", bpf, mode=0700)", errno);
  }
  return true;
}

}  // namespace netqos::bpf
