#include "cgroup/fs/mount_detect.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "cgroup/fs/cgroup_library.h"

namespace netqos::cgroup {
namespace {

bool IsOctal(char c) { return c >= '0' && c <= '7'; }

struct MountEntry {
  std::string mount_point;
  std::string fstype;
};

// One mountinfo line: "id parent maj:min root mount_point options [optional...] - fstype src opts".
bool ParseLine(const std::string& line, MountEntry* out) {
  std::istringstream in(line);
  std::vector<std::string> fields;
  std::string f;
  while (in >> f) fields.push_back(f);
  if (fields.size() < 7) return false;
  size_t sep = 6;
  while (sep < fields.size() && fields[sep] != "-") ++sep;
  if (sep + 1 >= fields.size()) return false;
  out->mount_point = UnescapeMountinfoPath(fields[4]);
  out->fstype = fields[sep + 1];
  return true;
}

}  // namespace

std::string UnescapeMountinfoPath(const std::string& field) {
  std::string out;
  out.reserve(field.size());
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() && IsOctal(field[i + 1]) &&
        IsOctal(field[i + 2]) && IsOctal(field[i + 3])) {
      out.push_back(static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 +
                                      (field[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(field[i]);
    }
  }
  return out;
}

Result<std::string> FindCgroup2Mount(const std::string& mountinfo_text) {
  std::vector<std::string> found;
  std::istringstream in(mountinfo_text);
  std::string line;
  while (std::getline(in, line)) {
    MountEntry e;
    if (ParseLine(line, &e) && e.fstype == "cgroup2") found.push_back(e.mount_point);
  }
  return PreferredCgroup2Mount(found, "mountinfo");
}

Result<std::string> PreferredCgroup2Mount(const std::vector<std::string>& mounts,
                                          const std::string& source) {
  if (mounts.empty()) return NotFound("no cgroup2 filesystem is mounted (none in " + source + ")");
  for (const char* preferred : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
    for (const auto& m : mounts) {
      if (m == preferred) return m;
    }
  }
  return mounts.front();
}

Result<std::string> DetectCgroup2Mount() {
  auto listed = ListLibcgroupCgroup2Mounts();
  if (listed.ok() && !listed->empty()) {
    std::vector<std::string> paths;
    for (const auto& m : *listed) paths.push_back(m.path);
    return PreferredCgroup2Mount(paths, "libcgroup's mount table");
  }
  const std::string path = "/proc/self/mountinfo";
  std::ifstream in(path);
  if (!in) return Unavailable("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto mount = FindCgroup2Mount(ss.str());
  if (!mount.ok()) return mount.status().Wrap(path);
  return mount;
}

}  // namespace netqos::cgroup
