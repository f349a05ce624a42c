// Per-link attributes read from sysfs (<root>/class/net/<name>): what Katalyst's getInterfaceAttr
// reads (NUMA node, PCI enable, operstate, speed, PCI address) plus the facts the NIC classifier
// needs (PCI-backed or not, bond or not). Missing files are defaults, not errors.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"

namespace netqos::topology {

struct SysfsNic {
  std::string name;
  std::string device_path;  // realpath of <root>/class/net/<name> ("" if unresolvable)
  bool pci = false;         // device_path contains "/devices/pci"
  bool bond = false;        // listed in <root>/class/net/bonding_masters
  int64_t speed_mbps = -1;  // <dev>/speed; -1 when unreadable (link down gives EINVAL) or negative
  int numa_node = -1;       // <dev>/device/numa_node; -1 when absent or -1
  std::optional<bool> pci_enable;  // <dev>/device/enable ("1" → true) when the file exists
  std::string operstate;           // first line of <dev>/operstate ("up", "down", "unknown", ...)
  std::string pci_address;         // basename of realpath(<dev>/device); for virtio-net (driver
                                   // basename "virtio_net") the parent directory's basename
  std::string driver;              // basename of realpath(<dev>/device/driver), "" if none
};

// Names under <root>/class/net (sorted), excluding the bonding_masters file.
Result<std::vector<std::string>> ListNetDevices(const std::string& sysfs_root);

// Names in <root>/class/net/bonding_masters (whitespace separated); empty when the file is absent.
std::set<std::string> ReadBondingMasters(const std::string& sysfs_root);

// Never fails for a missing attribute (fields keep their defaults); fails (NotFound, naming the
// path) only when <root>/class/net/<name> does not exist (a link that vanished mid-read).
Result<SysfsNic> ReadSysfsNic(const std::string& sysfs_root, const std::string& name,
                              const std::set<std::string>& bonding_masters);

// Katalyst's "enabled": the PCI enable file when present, else operstate == "up".
bool SysfsEnabled(const SysfsNic& nic);

}  // namespace netqos::topology
