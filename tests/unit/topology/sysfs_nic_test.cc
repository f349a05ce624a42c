// Per-link sysfs attributes from fixture trees laid out like the kernel's (class/net symlinks into
// devices/, device and driver symlinks), and once from this machine's /sys.
#include "topology/sysfs_nic.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "support/files.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using netqos::StatusCode;
using netqos::testing::TempDir;
using netqos::testing::WriteFile;
using netqos::topology::ListNetDevices;
using netqos::topology::ReadBondingMasters;
using netqos::topology::ReadSysfsNic;
using netqos::topology::SysfsEnabled;
using netqos::topology::SysfsNic;

namespace {

void Put(const std::string& root, const std::string& rel, const std::string& contents) {
  fs::path p = fs::path(root) / rel;
  fs::create_directories(p.parent_path());
  WriteFile(p.string(), contents);
}

void Link(const std::string& root, const std::string& rel, const std::string& target) {
  fs::path p = fs::path(root) / rel;
  fs::create_directories(p.parent_path());
  fs::create_directory_symlink(target, p);
}

constexpr const char kPciFn[] = "devices/pci0000:00/0000:00:03.0";
constexpr const char kEth0[] = "devices/pci0000:00/0000:00:03.0/net/eth0";

// A PCI NIC eth0 as the kernel shows it; `files` picks which attribute files exist.
struct PciNicFiles {
  const char* numa_node = nullptr;
  const char* enable = nullptr;
  const char* operstate = nullptr;
  const char* speed = nullptr;
};

void AddPciNic(const std::string& root, const PciNicFiles& f) {
  const std::string fn = kPciFn;
  const std::string dev = kEth0;
  fs::create_directories(fs::path(root) / dev);
  fs::create_directories(fs::path(root) / "bus/pci/drivers/ixgbe");
  Link(root, fn + "/driver", "../../../bus/pci/drivers/ixgbe");
  Link(root, dev + "/device", "../../../0000:00:03.0");
  Link(root, "class/net/eth0", "../../devices/pci0000:00/0000:00:03.0/net/eth0");
  if (f.numa_node) Put(root, fn + "/numa_node", f.numa_node);
  if (f.enable) Put(root, fn + "/enable", f.enable);
  if (f.operstate) Put(root, dev + "/operstate", f.operstate);
  if (f.speed) Put(root, dev + "/speed", f.speed);
}

// A virtio-net NIC: the net device hangs off the virtio bus device below the PCI function.
void AddVirtioNic(const std::string& root) {
  const std::string fn = "devices/pci0000:00/0000:00:05.0";
  const std::string dev = fn + "/virtio1/net/ens5";
  fs::create_directories(fs::path(root) / dev);
  fs::create_directories(fs::path(root) / "bus/virtio/drivers/virtio_net");
  fs::create_directories(fs::path(root) / "bus/pci/drivers/virtio-pci");
  Link(root, fn + "/driver", "../../../bus/pci/drivers/virtio-pci");
  Link(root, fn + "/virtio1/driver", "../../../../bus/virtio/drivers/virtio_net");
  Link(root, dev + "/device", "../../../virtio1");
  Link(root, "class/net/ens5", "../../" + dev);
  Put(root, fn + "/numa_node", "0\n");
  Put(root, fn + "/enable", "1\n");
  Put(root, dev + "/operstate", "up\n");
  Put(root, dev + "/speed", "-1\n");  // virtio reports SPEED_UNKNOWN
}

void AddVirtual(const std::string& root, const std::string& name, const std::string& operstate,
                const char* speed) {
  const std::string dev = "devices/virtual/net/" + name;
  fs::create_directories(fs::path(root) / dev);
  Link(root, "class/net/" + name, "../../" + dev);
  Put(root, dev + "/operstate", operstate + "\n");
  if (speed) Put(root, dev + "/speed", speed);
}

SysfsNic MustRead(const std::string& root, const std::string& name,
                  const std::set<std::string>& bonds = {}) {
  auto nic = ReadSysfsNic(root, name, bonds);
  REQUIRE(nic.ok());
  return *nic;
}

}  // namespace

// Katalyst's Test_getInterfaceAttr (machine package): (numa_node, enabled, speed) for eth0.
TEST_CASE("sysfs nic: getInterfaceAttr cases") {
  struct Case {
    const char* what;
    PciNicFiles files;
    int numa;
    bool enabled;
    int64_t speed;
  };
  const std::vector<Case> cases = {
      {"all files present", {"1\n", "1\n", "up\n", "10000\n"}, 1, true, 10000},
      {"no enable file, operstate up", {"0\n", nullptr, "up\n", "25000\n"}, 0, true, 25000},
      {"no enable file, operstate down", {"1\n", nullptr, "down\n", "40000\n"}, 1, false, 40000},
      {"every read failing", {}, -1, false, -1},
      {"numa node -1", {"-1\n", "1\n", "up\n", "10000\n"}, -1, true, 10000},
      {"enable 0", {"1\n", "0\n", "up\n", "10000\n"}, 1, false, 10000},
      {"no enable file, operstate unknown",
       {"0\n", nullptr, "unknown\n", "1000\n"},
       0,
       false,
       1000},
      {"speed -1 (SPEED_UNKNOWN)", {"0\n", "1\n", "up\n", "-1\n"}, 0, true, -1},
      {"speed garbage", {"0\n", "1\n", "up\n", "Invalid argument\n"}, 0, true, -1},
      {"speed empty", {"0\n", "1\n", "up\n", ""}, 0, true, -1},
      {"enable garbage is not enabled", {"0\n", "yes\n", "up\n", "100\n"}, 0, false, 100},
      {"numa garbage", {"x\n", "1\n", "up\n", "100\n"}, -1, true, 100},
  };
  for (const auto& c : cases) {
    SECTION(c.what) {
      TempDir root;
      AddPciNic(root.path(), c.files);
      SysfsNic nic = MustRead(root.path(), "eth0");
      CHECK(nic.numa_node == c.numa);
      CHECK(SysfsEnabled(nic) == c.enabled);
      CHECK(nic.speed_mbps == c.speed);
      CHECK(nic.pci);
      CHECK(nic.pci_address == "0000:00:03.0");
    }
  }
}

TEST_CASE("sysfs nic: reads that fail (not just missing files) give the defaults") {
  TempDir root;
  AddPciNic(root.path(), {});
  // A directory where a file is expected: open works, read fails (EISDIR), like EINVAL on the
  // speed of a link that is down.
  for (const char* rel : {"devices/pci0000:00/0000:00:03.0/numa_node",
                          "devices/pci0000:00/0000:00:03.0/net/eth0/operstate",
                          "devices/pci0000:00/0000:00:03.0/net/eth0/speed"}) {
    fs::create_directories(root.file(rel));
  }
  SECTION("enable unreadable but present: false, as upstream") {
    fs::create_directories(root.file("devices/pci0000:00/0000:00:03.0/enable"));
    SysfsNic nic = MustRead(root.path(), "eth0");
    CHECK(nic.numa_node == -1);
    CHECK(nic.speed_mbps == -1);
    CHECK(nic.operstate.empty());
    REQUIRE(nic.pci_enable.has_value());
    CHECK_FALSE(*nic.pci_enable);
    CHECK_FALSE(SysfsEnabled(nic));
  }
  SECTION("no enable file, operstate unreadable: disabled") {
    SysfsNic nic = MustRead(root.path(), "eth0");
    CHECK_FALSE(nic.pci_enable.has_value());
    CHECK_FALSE(SysfsEnabled(nic));
  }
}

TEST_CASE("sysfs nic: a PCI NIC's identity fields") {
  TempDir root;
  AddPciNic(root.path(), {"1\n", "1\n", "up\n", "10000\n"});
  SysfsNic nic = MustRead(root.path(), "eth0");
  CHECK(nic.name == "eth0");
  CHECK(nic.device_path == fs::canonical(root.file(kEth0)).string());
  CHECK(nic.pci);
  CHECK_FALSE(nic.bond);
  CHECK(nic.driver == "ixgbe");
  CHECK(nic.pci_address == "0000:00:03.0");
  CHECK(nic.operstate == "up");
  REQUIRE(nic.pci_enable.has_value());
  CHECK(*nic.pci_enable);
}

TEST_CASE("sysfs nic: virtio-net takes the PCI address of the parent function") {
  TempDir root;
  AddVirtioNic(root.path());
  SysfsNic nic = MustRead(root.path(), "ens5");
  CHECK(nic.pci);
  CHECK(nic.driver == "virtio_net");
  CHECK(nic.pci_address == "0000:00:05.0");
  CHECK(nic.speed_mbps == -1);
  // numa_node and enable are read from <dev>/device (the virtio device), which has neither:
  // upstream reads the same path, so the NUMA node is unknown and operstate decides.
  CHECK(nic.numa_node == -1);
  CHECK_FALSE(nic.pci_enable.has_value());
  CHECK(SysfsEnabled(nic));
}

TEST_CASE("sysfs nic: virtual links, bonds and loopback") {
  TempDir root;
  AddPciNic(root.path(), {"0\n", "1\n", "up\n", "1000\n"});
  AddVirtual(root.path(), "veth0", "up", "10000\n");
  AddVirtual(root.path(), "bond0", "up", "20000\n");
  AddVirtual(root.path(), "lo", "unknown", nullptr);
  Put(root.path(), "class/net/bonding_masters", "bond0\n");

  auto bonds = ReadBondingMasters(root.path());
  CHECK(bonds == std::set<std::string>{"bond0"});

  SysfsNic veth = MustRead(root.path(), "veth0", bonds);
  CHECK_FALSE(veth.pci);
  CHECK_FALSE(veth.bond);
  CHECK(veth.speed_mbps == 10000);
  CHECK(veth.pci_address.empty());
  CHECK(veth.driver.empty());
  CHECK(veth.numa_node == -1);
  CHECK(SysfsEnabled(veth));

  SysfsNic bond = MustRead(root.path(), "bond0", bonds);
  CHECK_FALSE(bond.pci);
  CHECK(bond.bond);
  CHECK(bond.speed_mbps == 20000);

  SysfsNic lo = MustRead(root.path(), "lo", bonds);
  CHECK_FALSE(lo.pci);
  CHECK_FALSE(lo.bond);
  CHECK(lo.speed_mbps == -1);
  CHECK(lo.operstate == "unknown");
  CHECK_FALSE(SysfsEnabled(lo));

  auto names = ListNetDevices(root.path());
  REQUIRE(names.ok());
  CHECK(*names == std::vector<std::string>{"bond0", "eth0", "lo", "veth0"});
}

TEST_CASE("sysfs nic: bonding_masters") {
  TempDir root;
  SECTION("absent: no bonds") { CHECK(ReadBondingMasters(root.path()).empty()); }
  SECTION("several, whitespace separated") {
    Put(root.path(), "class/net/bonding_masters", "bond0 bond1\tbond2\n");
    CHECK(ReadBondingMasters(root.path()) == std::set<std::string>{"bond0", "bond1", "bond2"});
  }
  SECTION("empty file") {
    Put(root.path(), "class/net/bonding_masters", "\n");
    CHECK(ReadBondingMasters(root.path()).empty());
    auto names = ListNetDevices(root.path());
    REQUIRE(names.ok());
    CHECK(names->empty());
  }
}

TEST_CASE("sysfs nic: links that are gone") {
  TempDir root;
  AddVirtual(root.path(), "veth0", "up", nullptr);
  SECTION("a name with no class/net entry is NotFound naming the path") {
    auto nic = ReadSysfsNic(root.path(), "veth9", {});
    REQUIRE_FALSE(nic.ok());
    CHECK(nic.status().code() == StatusCode::kNotFound);
    CHECK_THAT(nic.status().message(), Catch::Contains(root.path() + "/class/net/veth9"));
  }
  SECTION("names that are not a single path component are NotFound") {
    CHECK(ReadSysfsNic(root.path(), "", {}).status().code() == StatusCode::kNotFound);
    CHECK(ReadSysfsNic(root.path(), "../net/veth0", {}).status().code() == StatusCode::kNotFound);
  }
  SECTION("a class/net entry whose device disappeared keeps the defaults") {
    fs::remove_all(root.file("devices/virtual/net/veth0"));
    SysfsNic nic = MustRead(root.path(), "veth0");
    CHECK(nic.device_path.empty());
    CHECK_FALSE(nic.pci);
    CHECK(nic.speed_mbps == -1);
    CHECK(nic.operstate.empty());
  }
  SECTION("no class/net directory at all") {
    fs::remove_all(root.file("class"));
    auto names = ListNetDevices(root.path());
    REQUIRE_FALSE(names.ok());
    CHECK(names.status().code() == StatusCode::kNotFound);
    CHECK_THAT(names.status().message(), Catch::Contains("/class/net"));
  }
}

TEST_CASE("sysfs nic: this machine's /sys") {
  auto names = ListNetDevices("/sys");
  REQUIRE(names.ok());
  CHECK(std::find(names->begin(), names->end(), "lo") != names->end());
  CHECK(std::find(names->begin(), names->end(), "bonding_masters") == names->end());
  auto bonds = ReadBondingMasters("/sys");
  SysfsNic lo = MustRead("/sys", "lo", bonds);
  CHECK_FALSE(lo.pci);
  CHECK_FALSE(lo.bond);
  CHECK(lo.pci_address.empty());
  // Every listed link reads without error (barring one vanishing in between).
  for (const auto& name : *names) {
    auto nic = ReadSysfsNic("/sys", name, bonds);
    if (!nic.ok()) CHECK(nic.status().code() == StatusCode::kNotFound);
  }
}
