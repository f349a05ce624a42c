// FileIdentity: tells "the same file" from "a new file at the same path". The inode number alone
// is not enough: a file system reuses a freed inode at once, so a socket deleted and re-created
// (a kubelet restart) often gets the same number. The change time (ns) disambiguates.
#pragma once

#include <sys/stat.h>

#include <string>

namespace netqos::grpcadapter {

struct FileIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
  long ctime_sec = 0;
  long ctime_nsec = 0;
  bool operator==(const FileIdentity&) const = default;
};

// Identity of the file at `path` itself (lstat); an all-zero identity when it does not exist.
inline FileIdentity IdentityOf(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return {};
  return {st.st_dev, st.st_ino, st.st_ctim.tv_sec, st.st_ctim.tv_nsec};
}

}  // namespace netqos::grpcadapter
