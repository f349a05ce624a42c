// The rollback guard on the pin directory (userspace/bpf/format_pin.h, common/format_stamp.h),
// against real pins in a private bpffs and the real netqosd: the dataplane's pin directory
// carries a format stamp; a netqosd older than the stamp allows refuses to start and to
// uninstall, and leaves every pin and link as it found them; --uninstall of a netqosd that may
// read it removes the stamp last. The "newer netqosd" is played by its stamp (generation + 1,
// readable from generation + 1). Root only.
#include <bpf/bpf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <set>
#include <string>

#include "bpf/dataplane.h"
#include "bpf/format_pin.h"
#include "common/format_stamp.h"
#include "common/version.h"
#include "support/bpffs_fixture.h"
#include "support/cgroup_fixture.h"
#include "support/netqosd_launcher.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace {

using netqos::FormatStamp;
using netqos::kFormatGeneration;
using netqos::bpf::Dataplane;
using netqos::bpf::ReadFormatPin;
using netqos::bpf::WriteFormatPin;
using netqos::testing::PrivateBpffs;
using netqos::testing::RunCommand;
using netqos::testing::TempDir;
using netqos::testing::TestCgroup;

std::set<std::string> Pins(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    out.insert(e.path().filename().string());
  }
  return out;
}

// The id of the program a pinned link runs: unchanged means nothing was swapped or re-attached.
uint32_t LinkProgram(const std::string& path) {
  const int fd = bpf_obj_get(path.c_str());
  if (fd < 0) return 0;
  bpf_link_info info{};
  uint32_t len = sizeof(info);
  const int err = bpf_obj_get_info_by_fd(fd, &info, &len);
  ::close(fd);
  return err == 0 ? info.prog_id : 0;
}

FormatStamp Newer() {
  FormatStamp s;
  s.generation = kFormatGeneration + 1;
  s.min_reader = kFormatGeneration + 1;
  s.release = "9.9.9+future";
  return s;
}

}  // namespace

TEST_CASE(
    "rollback guard: pins a newer netqosd stamped are refused by netqosd and its --uninstall, "
    "which touch no pin or link, and a readable stamp is removed last by --uninstall",
    "[bpf]") {
  PrivateBpffs bpffs;
  TestCgroup root{"netqos-guard-" + std::to_string(::getpid())};
  TempDir dir;
  REQUIRE(::mkdir(bpffs.PinDir().c_str(), 0700) == 0);
  const std::string pin_dir = bpffs.PinDir();

  // No stamp yet: nothing stamped this directory.
  auto none = ReadFormatPin(pin_dir);
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  // A pin directory that does not exist has none either.
  auto missing = ReadFormatPin(pin_dir + "/nope");
  REQUIRE(missing.ok());
  CHECK_FALSE(missing->has_value());

  // The dataplane as netqosd leaves it: maps, links attached to a cgroup, and a stamp.
  {
    Dataplane::Options o;
    o.pin_dir = pin_dir;
    o.cgroup_path = root.Path();
    auto dp = Dataplane::Open(o);
    REQUIRE(dp.ok());
  }
  REQUIRE(WriteFormatPin(pin_dir, netqos::OwnFormatStamp()).ok());
  auto own = ReadFormatPin(pin_dir);
  REQUIRE(own.ok());
  REQUIRE(own->has_value());
  CHECK((*own)->generation == kFormatGeneration);
  CHECK((*own)->release == netqos::ReleaseName());

  // A newer netqosd's stamp (written in place over the same pin).
  REQUIRE(WriteFormatPin(pin_dir, Newer()).ok());
  const auto pins_before = Pins(pin_dir);
  const uint32_t egress_prog = LinkProgram(pin_dir + "/link_cgroup_egress");
  REQUIRE(egress_prog != 0);
  std::vector<std::string> common =
      netqos::testing::NetqosdDirs{dir.file("sock"), dir.file("state"), dir.file("shm")}.Flags();
  common.push_back("--bpf-pin-dir=" + pin_dir);

  std::vector<std::string> daemon = {NETQOSD_PATH, "--enforcement=bpf"};
  daemon.insert(daemon.end(), common.begin(), common.end());
  auto refused = RunCommand(daemon, dir.file("daemon.log"));
  INFO(refused.output);
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.output, Catch::Contains("the pin directory " + pin_dir +
                                             " was written by netqosd 9.9.9+future"));
  CHECK_THAT(refused.output, Catch::Contains("netqosd --uninstall"));
  CHECK(Pins(pin_dir) == pins_before);
  CHECK(LinkProgram(pin_dir + "/link_cgroup_egress") == egress_prog);

  std::vector<std::string> uninstall = {NETQOSD_PATH, "--uninstall"};
  uninstall.insert(uninstall.end(), common.begin(), common.end());
  auto kept = RunCommand(uninstall, dir.file("uninstall-refused.log"));
  INFO(kept.output);
  CHECK(kept.exit_code == 1);
  CHECK_THAT(kept.output, Catch::Contains("uninstall refused"));
  CHECK(Pins(pin_dir) == pins_before);
  CHECK(LinkProgram(pin_dir + "/link_cgroup_egress") == egress_prog);

  // A newer netqosd whose pins this one still handles: its --uninstall removes everything, the
  // stamp included, and the directory.
  FormatStamp readable = Newer();
  readable.min_reader = kFormatGeneration;
  REQUIRE(WriteFormatPin(pin_dir, readable).ok());
  auto removed = RunCommand(uninstall, dir.file("uninstall.log"));
  INFO(removed.output);
  CHECK(removed.exit_code == 0);
  CHECK_FALSE(std::filesystem::exists(pin_dir));
}

TEST_CASE("rollback guard: a pin at the stamp's name that is not a stamp is refused, naming it",
          "[bpf]") {
  PrivateBpffs bpffs;
  REQUIRE(::mkdir(bpffs.PinDir().c_str(), 0700) == 0);
  const std::string path = bpffs.PinDir() + "/netqos_format";
  const int fd = bpf_map_create(BPF_MAP_TYPE_HASH, "netqos_format", 4, 8, 16, nullptr);
  REQUIRE(fd >= 0);
  REQUIRE(bpf_obj_pin(fd, path.c_str()) == 0);
  ::close(fd);
  auto read = ReadFormatPin(bpffs.PinDir());
  REQUIRE_FALSE(read.ok());
  CHECK_THAT(read.status().message(), Catch::Contains(path + " is not a netqos format stamp"));
  CHECK_FALSE(WriteFormatPin(bpffs.PinDir(), netqos::OwnFormatStamp()).ok());
}
