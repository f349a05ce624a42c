// `netqosctl status`'s format stamps (docs/upgrades.md) as rendered from GetStatus: a stamped, an
// unstamped and an unreadable directory; a daemon too old to report stamps (null, no section);
// and the pin directory's stamp read directly while the daemon is down.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "ctl/status_view.h"

namespace admin = ::netqos::admin::v1;
using netqos::ctl::PrintStatus;
using netqos::ctl::StatusInput;
using netqos::ctl::StatusJson;

namespace {

admin::GetStatusResponse WithStamps() {
  admin::GetStatusResponse s;
  s.set_version("0.2.0");
  s.mutable_enforcement()->set_mode("bpf");
  auto* own = s.mutable_own_format();
  own->set_present(true);
  own->set_generation(2);
  own->set_min_reader(1);
  own->set_release("0.2.0+bbbbbbb");
  auto* pins = s.add_format_stamps();
  pins->set_kind("pin_dir");
  pins->set_path("/sys/fs/bpf/netqos/netqos_format");
  pins->set_present(true);
  pins->set_generation(1);
  pins->set_min_reader(1);
  pins->set_release("0.1.0+aaaaaaa");
  auto* state = s.add_format_stamps();
  state->set_kind("state_dir");
  state->set_path("/var/lib/katalyst/qrm_advisor/netqos_format.json");
  auto* shm = s.add_format_stamps();
  shm->set_kind("state_dir");
  shm->set_path("/dev/shm/qrm/state/netqos_format.json");
  shm->set_error("not JSON");
  return s;
}

std::string Table(const StatusInput& in) {
  std::ostringstream out;
  PrintStatus(in, out);
  return out.str();
}

}  // namespace

TEST_CASE("status shows each format stamp: its writer, generation and oldest reader") {
  StatusInput in;
  in.daemon = WithStamps();
  const std::string table = Table(in);
  CHECK_THAT(table,
             Catch::Contains("format:      writes generation 2, readable by generation 1 on"));
  CHECK_THAT(table, Catch::Contains("format stamps:\n"
                                    "  DIRECTORY  WRITTEN BY            GENERATION  MIN READER\n"
                                    "  pins       0.1.0+aaaaaaa         1           1\n"
                                    "  state      - (unstamped)         -           -\n"
                                    "  state      UNREADABLE: not JSON  -           -\n"));
  CHECK(table.find("netqos_format.json") == std::string::npos);
  in.wide = true;
  CHECK_THAT(Table(in), Catch::Contains("/dev/shm/qrm/state/netqos_format.json"));

  const nlohmann::json j = StatusJson(in);
  const auto& d = j["daemon"];
  CHECK(d["own_format"] ==
        nlohmann::json{{"generation", 2}, {"min_reader", 1}, {"release", "0.2.0+bbbbbbb"}});
  REQUIRE(d["format_stamps"].size() == 3);
  CHECK(d["format_stamps"][0]["release"] == "0.1.0+aaaaaaa");
  CHECK(d["format_stamps"][0]["error"].is_null());
  CHECK(d["format_stamps"][1]["present"] == false);
  CHECK(d["format_stamps"][1]["generation"].is_null());
  CHECK(d["format_stamps"][1]["release"].is_null());
  CHECK(d["format_stamps"][2]["error"] == "not JSON");
}

TEST_CASE("status of a daemon that reports no stamps says nothing of them, and null in JSON") {
  StatusInput in;
  in.daemon = admin::GetStatusResponse{};
  in.daemon->mutable_enforcement()->set_mode("none");
  const std::string table = Table(in);
  CHECK(table.find("format") == std::string::npos);
  const nlohmann::json j = StatusJson(in);
  CHECK(j["daemon"]["own_format"].is_null());
  CHECK(j["daemon"]["format_stamps"].is_null());
  CHECK(j["pinned"]["format_stamp"].is_null());
}

TEST_CASE("status with the daemon down shows the pin directory's stamp read directly") {
  StatusInput in;
  in.daemon_error = "daemon socket not found";
  netqos::FormatStamp stamp;
  stamp.generation = 1;
  stamp.min_reader = 1;
  stamp.release = "0.1.0+aaaaaaa";
  in.pin_stamp = netqos::FormatStampReading{"pin_dir", "/pins/netqos_format", stamp, ""};
  CHECK_THAT(Table(in), Catch::Contains("  pins       0.1.0+aaaaaaa  1           1\n"));
  const nlohmann::json j = StatusJson(in);
  CHECK(j["pinned"]["format_stamp"]["generation"] == 1);
  CHECK(j["pinned"]["format_stamp"]["path"] == "/pins/netqos_format");
}
