// bpf::PinnedMaps and InspectPinDir (what netqosctl reads) against maps and a link pinned by the
// real Dataplane in a private bpffs: the same entries and counters the daemon side sees, entry
// counts, the egress link, and the errors for a missing pin dir and a map of another layout.
// Root only; everything is removed at the end.
#include "bpf/pinned_maps.h"

#include <bpf/bpf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "bpf/dataplane.h"
#include "support/bpffs_fixture.h"
#include "support/cgroup_fixture.h"
#include "support/shared_class_entry.h"

namespace {

using netqos::StatusCode;
using netqos::bpf::Dataplane;
using netqos::bpf::PinnedMaps;
using netqos::testing::PrivateBpffs;
using netqos::testing::SharedClassEntry;
using netqos::testing::TestCgroup;

}  // namespace

TEST_CASE("pinned maps: read-only view of what the dataplane pinned", "[bpf][ctl]") {
  PrivateBpffs bpffs;
  TestCgroup root("netqos-pinned-" + std::to_string(::getpid()));
  TestCgroup a(root, "a");
  TestCgroup b(root, "b");

  SECTION("a missing pin dir") {
    auto maps = PinnedMaps::Open(bpffs.PinDir());
    REQUIRE_FALSE(maps.ok());
    CHECK(maps.status().code() == StatusCode::kNotFound);
    CHECK(maps.status().message() == "pin dir " + bpffs.PinDir() + " not found");
    const auto state = netqos::bpf::InspectPinDir(bpffs.PinDir());
    CHECK_FALSE(state.exists);
    CHECK(state.error.empty());
    CHECK(state.maps.empty());
  }

  SECTION("entries, counters, link") {
    auto dp = Dataplane::Open({.pin_dir = bpffs.PinDir(), .cgroup_path = root.Path()});
    INFO(dp.status().message());
    REQUIRE(dp.ok());
    REQUIRE((*dp)->SetClass(a.Id(), SharedClassEntry(0x100100, 7)).ok());
    REQUIRE((*dp)->SetClass(b.Id(), SharedClassEntry(0x100031, 8)).ok());

    auto maps = PinnedMaps::Open(bpffs.PinDir());
    INFO(maps.status().message());
    REQUIRE(maps.ok());
    auto classes = (*maps)->Classes();
    REQUIRE(classes.ok());
    REQUIRE(classes->size() == 2);
    auto want = (*dp)->ListClasses();
    REQUIRE(want.ok());
    for (const auto& [id, cls] : *want) {
      auto got = (*maps)->Class(id);
      REQUIRE(got.ok());
      REQUIRE(got->has_value());
      CHECK((*got)->priority == cls.priority);
      CHECK((*got)->net_class_id == cls.net_class_id);
      CHECK((*got)->qos_level == NETQOS_QOS_SHARED);
    }
    auto none = (*maps)->Class(1234567890123ull);
    REQUIRE(none.ok());
    CHECK_FALSE(none->has_value());

    // Counters: nothing sent yet; both sides agree on zeros and on "no entries".
    auto counters = (*maps)->AllContainerCounters();
    REQUIRE(counters.ok());
    auto dp_counters = (*dp)->ContainerCounters(a.Id());
    REQUIRE(dp_counters.ok());
    for (const auto& [id, c] : *counters) {
      if (id == a.Id()) CHECK(c.tx_bytes == dp_counters->tx_bytes);
    }
    auto mine = (*maps)->ContainerCounters(a.Id());
    REQUIRE(mine.ok());
    CHECK(mine->tx_bytes == dp_counters->tx_bytes);
    REQUIRE((*maps)->AllClassCounters().ok());

    const auto state = netqos::bpf::InspectPinDir(bpffs.PinDir());
    CHECK(state.exists);
    CHECK(state.on_bpffs);
    CHECK(state.error.empty());
    REQUIRE(state.maps.size() == 8);
    CHECK(state.maps[0].name == netqos::bpf::kClassMapName);
    CHECK(state.maps[0].present);
    CHECK(state.maps[0].counted);
    CHECK(state.maps[0].entries == 2);
    CHECK(state.maps[0].max_entries == NETQOS_MAX_ENTRIES);
    CHECK(state.maps[0].id > 0);
    CHECK(state.maps[3].name == netqos::bpf::kSockTagMapName);
    CHECK(state.maps[3].present);
    CHECK_FALSE(state.maps[3].counted);
    CHECK(state.maps[4].name == netqos::bpf::kPodAddrMapName);
    CHECK(state.maps[4].present);
    CHECK(state.maps[5].name == netqos::bpf::kFragMapName);
    CHECK(state.maps[5].present);
    CHECK(state.maps[7].name == netqos::bpf::kAggregateMapName);
    CHECK(state.maps[7].present);
    for (const auto& m : state.maps) CHECK(m.error.empty());
    CHECK(state.egress_link.present);
    CHECK(state.egress_link.error.empty());
    CHECK(state.egress_link.egress);
    CHECK(state.egress_link.cgroup_id == root.Id());
    CHECK(state.egress_link.prog_name == "netqos_egress");
    CHECK(state.rx_link.present);
    CHECK(state.rx_link.error.empty());
    CHECK(state.rx_link.ingress);
    CHECK_FALSE(state.rx_link.egress);
    CHECK(state.rx_link.cgroup_id == root.Id());
    CHECK(state.rx_link.prog_name == "netqos_rx");
    CHECK(state.sockopt_link.present);
    CHECK(state.sockopt_link.setsockopt);
    CHECK(state.sockopt_link.cgroup_id == root.Id());
    CHECK(state.other_versions.empty());

    dp->reset();
    REQUIRE(Dataplane::Uninstall(bpffs.PinDir()).ok());
  }

  SECTION("a map of another layout under the current name is refused, naming it") {
    REQUIRE(::mkdir(bpffs.PinDir().c_str(), 0700) == 0);
    const int fd = bpf_map_create(BPF_MAP_TYPE_HASH, netqos::bpf::kClassMapName, sizeof(uint64_t),
                                  8, 16, nullptr);
    REQUIRE(fd >= 0);
    const std::string pin = bpffs.PinDir() + "/" + netqos::bpf::kClassMapName;
    REQUIRE(bpf_obj_pin(fd, pin.c_str()) == 0);
    ::close(fd);
    auto maps = PinnedMaps::Open(bpffs.PinDir());
    REQUIRE_FALSE(maps.ok());
    CHECK(maps.status().code() == StatusCode::kFailedPrecondition);
    CHECK_THAT(maps.status().message(), Catch::Contains(pin));
    CHECK_THAT(maps.status().message(), Catch::Contains("different versions"));
    const auto state = netqos::bpf::InspectPinDir(bpffs.PinDir());
    REQUIRE_FALSE(state.maps.empty());
    CHECK(state.maps[0].present);
    CHECK_THAT(state.maps[0].error, Catch::Contains("this build expects"));
    CHECK_FALSE(state.maps[1].present);
    CHECK_FALSE(state.egress_link.present);
    CHECK_FALSE(state.rx_link.present);
    ::unlink(pin.c_str());
  }
}
