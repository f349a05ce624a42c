#include "topology/sysfs_nic.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "topology/sysfs_attr.h"

namespace netqos::topology {
namespace {

constexpr const char kBondingMasters[] = "bonding_masters";

template <typename T>
std::optional<T> ParseNumber(const std::optional<std::string>& s) {
  if (!s) return std::nullopt;
  T v{};
  const char* end = s->data() + s->size();
  auto [p, ec] = std::from_chars(s->data(), end, v);
  if (ec != std::errc() || p != end) return std::nullopt;
  return v;
}

std::string RealPath(const std::string& path) {
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (!resolved) return "";
  std::string out = resolved;
  std::free(resolved);
  return out;
}

std::string Basename(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string Dirname(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos || slash == 0 ? "" : path.substr(0, slash);
}

}  // namespace

Result<std::vector<std::string>> ListNetDevices(const std::string& sysfs_root) {
  const std::string dir = sysfs_root + "/class/net";
  DIR* d = ::opendir(dir.c_str());
  if (!d) {
    int err = errno;
    std::string msg = "opendir(" + dir + "): " + std::strerror(err);
    return err == ENOENT ? NotFound(msg) : Unavailable(msg);
  }
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == ".." || name == kBondingMasters) continue;
    names.push_back(std::move(name));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

std::set<std::string> ReadBondingMasters(const std::string& sysfs_root) {
  std::set<std::string> out;
  auto text = ReadSysfsAttr(sysfs_root + "/class/net/" + kBondingMasters);
  if (!text) return out;
  std::istringstream words(*text);
  for (std::string w; words >> w;) out.insert(w);
  return out;
}

Result<SysfsNic> ReadSysfsNic(const std::string& sysfs_root, const std::string& name,
                              const std::set<std::string>& bonding_masters) {
  const std::string dev = sysfs_root + "/class/net/" + name;
  struct stat st {};
  if (name.empty() || name.find('/') != std::string::npos || ::lstat(dev.c_str(), &st) != 0) {
    return NotFound(dev + ": no such network device");
  }

  SysfsNic nic;
  nic.name = name;
  nic.device_path = RealPath(dev);
  nic.pci = nic.device_path.find("/devices/pci") != std::string::npos;
  nic.bond = bonding_masters.count(name) > 0;

  if (auto speed = ParseNumber<int64_t>(ReadSysfsAttr(dev + "/speed")); speed && *speed >= 0) {
    nic.speed_mbps = *speed;
  }
  if (auto numa = ParseNumber<int>(ReadSysfsAttr(dev + "/device/numa_node")); numa && *numa >= 0) {
    nic.numa_node = *numa;
  }

  // As upstream: once the enable file exists it decides alone; unreadable or not "1" is false.
  const std::string enable_path = dev + "/device/enable";
  if (::stat(enable_path.c_str(), &st) == 0) {
    auto enable = ParseNumber<int>(ReadSysfsAttr(enable_path));
    nic.pci_enable = enable && *enable == 1;
  }

  if (auto oper = ReadSysfsAttr(dev + "/operstate")) {
    nic.operstate = oper->substr(0, oper->find('\n'));
  }

  nic.driver = Basename(RealPath(dev + "/device/driver"));
  const std::string device = RealPath(dev + "/device");
  if (!device.empty()) {
    // virtio-net's "device" is the virtio bus device (.../0000:00:05.0/virtio1); the PCI function
    // is its parent.
    nic.pci_address = nic.driver == "virtio_net" ? Basename(Dirname(device)) : Basename(device);
  }
  return nic;
}

bool SysfsEnabled(const SysfsNic& nic) {
  if (nic.pci_enable.has_value()) return *nic.pci_enable;
  return nic.operstate == "up";
}

}  // namespace netqos::topology
