// netqosctl's operator commands (status, classes, top, cgroup) against the real netqosd enforcing
// on this machine, set up as scripts/demo-run.sh does (the shared DaemonFixture): a veth into a
// network namespace as the only (shaped) NIC, two container cgroups under an extra kubepods root
// (--addition-cgroup-paths) listed by a file:// pod list, a private bpffs. Checked: what status,
// classes and cgroup report with the daemon up; that top's rate for a container sending through
// its 100 Mbit/s leaf is what the NIC's own byte counter saw over the interval top names (within
// 10 %) and not above the cap; and that after SIGKILL of the daemon, classes and top still work
// from the pinned maps alone. Everything is removed on scope exit, also on failure, and the end
// checks that nothing was left behind. Root only.
#include <signal.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/daemon_fixture.h"

namespace {

using namespace std::chrono_literals;
using netqos::testing::CommandResult;
using netqos::testing::DaemonFixture;
using netqos::testing::FakePod;
using netqos::testing::InodeOf;
using netqos::testing::WaitFor;
using nlohmann::json;

constexpr int kCapA = 100;  // Mbit/s
constexpr int kCapB = 300;
constexpr double kTopTolerance = 0.10;

// Runs netqosctl and parses its --json output (failing the test with the output otherwise).
json CtlJson(DaemonFixture& env, std::vector<std::string> args, int want_exit = 0) {
  args.push_back("--json");
  const CommandResult r = env.Ctl(args);
  INFO("netqosctl output: " << r.output);
  REQUIRE(r.exit_code == want_exit);
  return json::parse(r.output);
}

const json* FindCgroup(const json& containers, uint64_t id) {
  for (const auto& c : containers) {
    if (c.at("cgroup_id").get<uint64_t>() == id) return &c;
  }
  return nullptr;
}

std::vector<json> JsonLines(const std::string& text) {
  std::vector<json> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(json::parse(line));
  }
  return out;
}

// The container's tx rate in the last frame of `top --json` output, in Mbit/s.
double TopTxMbps(const std::vector<json>& frames, uint64_t id) {
  REQUIRE_FALSE(frames.empty());
  const json* c = FindCgroup(frames.back().at("containers"), id);
  REQUIRE(c != nullptr);
  return c->at("tx_bits_per_second").get<double>() / 1e6;
}

bool Near(double measured, double want) {
  return measured >= want * (1 - kTopTolerance) && measured <= want * (1 + kTopTolerance);
}

uint64_t NicTxBytes(const std::string& nic) {
  std::ifstream in("/sys/class/net/" + nic + "/statistics/tx_bytes");
  uint64_t bytes = 0;
  in >> bytes;
  return bytes;
}

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Runs `top --json` with `args` while a thread reads the NIC's tx byte counter every few
// milliseconds, and returns the frames and what the NIC sent during the last frame's interval
// (its "time" minus "interval_seconds" to its "time", interpolated between readings). A sender
// short of CPU (a loaded machine, a TCG guest) sends unevenly and below its cap; top must still
// report what it sent over the interval it names.
struct TopRun {
  std::vector<json> frames;
  double nic_mbps = 0;
};
TopRun RunTop(DaemonFixture& env, std::vector<std::string> args) {
  args.insert(args.begin(), {"top", "--json", "--iterations", "2"});
  std::vector<std::pair<double, uint64_t>> readings;  // (unix time, bytes)
  std::atomic<bool> done{false};
  std::thread sampler([&] {
    while (!done) {
      readings.emplace_back(UnixNow(), NicTxBytes(env.host()));
      std::this_thread::sleep_for(5ms);
    }
    readings.emplace_back(UnixNow(), NicTxBytes(env.host()));
  });
  const CommandResult r = env.Ctl(args);
  done = true;
  sampler.join();
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  TopRun run{JsonLines(r.output)};
  REQUIRE_FALSE(run.frames.empty());
  const double end = run.frames.back().at("time").get<double>();
  const double begin = end - run.frames.back().at("interval_seconds").get<double>();
  auto bytes_at = [&](double t) {
    for (size_t i = 1; i < readings.size(); ++i) {
      const auto& [t1, b1] = readings[i];
      if (t1 < t) continue;
      const auto& [t0, b0] = readings[i - 1];
      const double f = t1 > t0 ? (t - t0) / (t1 - t0) : 1;
      return static_cast<double>(b0) + f * static_cast<double>(b1 - b0);
    }
    return static_cast<double>(readings.back().second);
  };
  REQUIRE(readings.front().first <= begin);
  REQUIRE(readings.back().first >= end);
  run.nic_mbps = (bytes_at(end) - bytes_at(begin)) * 8 / (end - begin) / 1e6;
  return run;
}

}  // namespace

TEST_CASE("netqosctl: status, classes, top and cgroup on a live enforcing netqosd, then without it",
          "[enforcement][ctl]") {
  DaemonFixture env({.tag = "c", .subnet = 247, .pod_namespace = "ctltest"});
  const FakePod& a = env.AddPod(0xc7100, "pod-a");
  const FakePod& b = env.AddPod(0xc7101, "pod-b");
  const std::string cg_a = env.MakeCgroup(a), cg_b = env.MakeCgroup(b);
  const std::string plain = env.CgroupRoot() + "/not-a-container";
  std::filesystem::create_directory(plain);
  env.StartDaemon();
  const uint64_t id_a = InodeOf(cg_a), id_b = InodeOf(cg_b);
  env.Allocate(a, kCapA);
  env.Allocate(b, kCapB);

  // Both containers classified, named and capped.
  json classes;
  const auto classified = WaitFor(
      [&] {
        const auto r = env.Ctl({"classes", "--json"});
        if (r.exit_code != 0) return false;
        classes = json::parse(r.output);
        for (uint64_t id : {id_a, id_b}) {
          const json* c = FindCgroup(classes.at("containers"), id);
          if (c == nullptr || !c->at("in_pinned_map").get<bool>() ||
              !c->at("known_to_daemon").get<bool>() || !c->at("capped").get<bool>()) {
            return false;
          }
        }
        return true;
      },
      10000ms);
  INFO("classes: " << classes.dump(1) << "\nnetqosd log:\n" << env.Log());
  REQUIRE(classified.has_value());

  SECTION("status, classes and cgroup with the daemon up") {
    const json status = CtlJson(env, {"status"});
    INFO(status.dump(1));
    const json& d = status.at("daemon");
    CHECK(d.at("reachable") == true);
    CHECK(d.at("enforcement").at("mode") == "bpf");
    CHECK(d.at("enforcement").at("pin_dir") == env.PinDir());
    CHECK(d.at("enforcement").at("pods_known") == true);
    CHECK(d.at("enforcement").at("classified_containers").get<int>() >= 2);
    CHECK(d.at("enforcement").at("shaped_nics") == json::array({env.host()}));
    REQUIRE(d.at("nics").size() == 1);
    CHECK(d.at("nics")[0].at("nic") == env.host());
    CHECK(d.at("nics")[0].at("shaped") == true);
    CHECK(d.at("containers") == 2);
    CHECK(d.at("allocated_egress_mbps") == kCapA + kCapB);
    const json& pins = status.at("pinned");
    CHECK(pins.at("exists") == true);
    CHECK(pins.at("on_bpffs") == true);
    for (const auto& m : pins.at("maps")) {
      INFO(m.dump());
      CHECK(m.at("present") == true);
      CHECK(m.at("error") == "");
      if (m.at("name") == "netqos_cls_v1") CHECK(m.at("entries").get<int>() >= 2);
    }
    CHECK(pins.at("egress_link").at("present") == true);
    CHECK(pins.at("egress_link").at("prog_name") == "netqos_egress");
    CHECK(pins.at("egress_link").at("egress") == true);
    CHECK(pins.at("egress_link").at("cgroup_id") ==
          InodeOf(d.at("enforcement").at("cgroup_root").get<std::string>()));
    CHECK(pins.at("rx_link").at("prog_name") == "netqos_rx");
    CHECK(pins.at("rx_link").at("ingress") == true);
    CHECK(pins.at("rx_link").at("cgroup_id") == pins.at("egress_link").at("cgroup_id"));

    const auto text = env.Ctl({"status"});
    std::printf("$ netqosctl status\n%s\n", text.output.c_str());
    CHECK(text.exit_code == 0);
    CHECK_THAT(text.output, Catch::Contains("enforcement: bpf"));
    CHECK_THAT(text.output, Catch::Contains("egress link: pinned"));
    CHECK_THAT(text.output, Catch::Contains("rx link: pinned"));

    const json* ca = FindCgroup(classes.at("containers"), id_a);
    CHECK(ca->at("pod_name") == "pod-a");
    CHECK(ca->at("pod_namespace") == "ctltest");
    CHECK(ca->at("container") == "app");
    CHECK(ca->at("allocated_mbps") == kCapA);
    CHECK(ca->at("nic") == env.host());
    CHECK(ca->at("qos_level") == "shared_cores");
    const json* cb = FindCgroup(classes.at("containers"), id_b);
    CHECK(cb->at("pod_name") == "pod-b");
    CHECK(cb->at("allocated_mbps") == kCapB);
    CHECK(classes.at("daemon_reachable") == true);
    CHECK(classes.at("pinned_maps_read") == true);
    const auto table = env.Ctl({"classes"});
    std::printf("$ netqosctl classes\n%s\n", table.output.c_str());
    CHECK_THAT(table.output, Catch::Contains("ctltest/pod-a/app"));
    CHECK_THAT(table.output, Catch::Contains("ctltest/pod-b/app"));

    // A classified container, by path and by id.
    json cg = CtlJson(env, {"cgroup", cg_a});
    INFO(cg.dump(1));
    CHECK(cg.at("cgroup_id") == id_a);
    CHECK(cg.at("classified") == true);
    CHECK(cg.at("class_entry").at("qos_level") == "shared_cores");
    CHECK(cg.at("daemon").at("container").at("pod_name") == "pod-a");
    CHECK(cg.at("daemon").at("container").at("capped") == true);
    CHECK_THAT(cg.at("reasons").dump(),
               Catch::Contains("on " + env.host() +
                               ", sent/received 100M/100M bit/s, from its allocation"));
    cg = CtlJson(env, {"cgroup", std::to_string(id_b)});
    CHECK(cg.at("path") == cg_b);
    CHECK(cg.at("daemon").at("container").at("pod_name") == "pod-b");
    const auto cg_text = env.Ctl({"cgroup", cg_a});
    std::printf("$ netqosctl cgroup %s\n%s\n", cg_a.c_str(), cg_text.output.c_str());
    const auto plain_text = env.Ctl({"cgroup", plain});
    std::printf("$ netqosctl cgroup %s\n%s\n", plain.c_str(), plain_text.output.c_str());
    CHECK_THAT(cg_text.output, Catch::Contains("100 Mbps on " + env.host()));

    // An unclassified cgroup: why.
    cg = CtlJson(env, {"cgroup", plain});
    INFO(cg.dump(1));
    CHECK(cg.at("classified") == false);
    CHECK(cg.at("class_entry").is_null());
    CHECK(cg.at("looks_like_container") == false);
    CHECK_THAT(cg.at("reasons").dump(), Catch::Contains("not a container cgroup"));
  }

  SECTION("top shows the capped rate live, with and without the daemon") {
    env.Server(0, 15411);
    auto& sender = env.Client(cg_a, 0, 15411, 7);
    std::this_thread::sleep_for(1500ms);  // past slow start and HTB's initial burst
    auto run = RunTop(env, {});
    auto& frames = run.frames;
    REQUIRE(frames.size() == 2);
    CHECK(frames.back().at("names_from_daemon") == true);
    CHECK(frames.back().at("source") == "pinned maps");
    const json* row = FindCgroup(frames.back().at("containers"), id_a);
    REQUIRE(row != nullptr);
    CHECK(row->at("pod_name") == "pod-a");
    CHECK(row->at("htb_class").get<std::string>().rfind("10:", 0) == 0);
    const double live = TopTxMbps(frames, id_a);
    std::printf("top with netqosd: container A sends %.1f Mbit/s (the NIC counted %.1f; cap %d)\n",
                live, run.nic_mbps, kCapA);
    CHECK(Near(live, run.nic_mbps));
    CHECK(live <= kCapA * (1 + kTopTolerance));
    CHECK(frames.back().at("classes").size() >= 1);
    const auto table = env.Ctl({"top", "--iterations", "1"});
    std::printf("$ netqosctl top --iterations 1\n%s\n", table.output.c_str());
    CHECK(table.exit_code == 0);
    CHECK_THAT(table.output, Catch::Contains("ctltest/pod-a/app"));
    auto result = sender.Wait();
    INFO(result.output);
    CHECK(result.ok());

    // SIGKILL: the pinned maps keep classifying and counting; netqosctl reads them directly.
    REQUIRE(env.StopDaemon(SIGKILL) == 128 + SIGKILL);
    const std::string pins = "--bpf-pin-dir=" + env.PinDir();
    const json pinned = CtlJson(env, {"classes", pins});
    INFO(pinned.dump(1));
    CHECK(pinned.at("daemon_reachable") == false);
    CHECK(pinned.at("pinned_maps_read") == true);
    CHECK_THAT(pinned.at("note").get<std::string>(), Catch::Contains("names need the daemon"));
    for (uint64_t id : {id_a, id_b}) {
      const json* c = FindCgroup(pinned.at("containers"), id);
      REQUIRE(c != nullptr);
      CHECK(c->at("in_pinned_map") == true);
      CHECK(c->at("htb_class").get<std::string>().rfind("10:", 0) == 0);
      CHECK(c->at("qos_level") == "shared_cores");
    }
    CHECK(FindCgroup(pinned.at("containers"), id_a)->at("counters").at("tx_bytes").get<uint64_t>() >
          1000000);

    auto& again = env.Client(cg_a, 0, 15411, 6);
    std::this_thread::sleep_for(1500ms);
    run = RunTop(env, {pins});
    REQUIRE(frames.size() == 2);
    CHECK(frames.back().at("names_from_daemon") == false);
    CHECK_THAT(frames.back().at("note").get<std::string>(),
               Catch::Contains("names need the daemon"));
    const double headless = TopTxMbps(frames, id_a);
    std::printf(
        "top without netqosd: container A sends %.1f Mbit/s (the NIC counted %.1f; cap %d)\n",
        headless, run.nic_mbps, kCapA);
    CHECK(Near(headless, run.nic_mbps));
    CHECK(headless <= kCapA * (1 + kTopTolerance));
    (void)again.Wait();

    // status and cgroup still say what is pinned, and that the daemon is gone.
    const auto headless_table = env.Ctl({"classes", pins});
    std::printf("$ netqosctl classes %s   # netqosd killed\n%s\n", pins.c_str(),
                headless_table.output.c_str());
    const json status = CtlJson(env, {"status", pins}, 1);
    CHECK(status.at("daemon").at("reachable") == false);
    CHECK(status.at("pinned").at("egress_link").at("present") == true);
    const json cg = CtlJson(env, {"cgroup", cg_a, pins});
    CHECK(cg.at("classified") == true);
    CHECK(cg.at("daemon").at("reachable") == false);
    CHECK_THAT(cg.at("reasons").dump(), Catch::Contains("stays in force"));
  }

  CHECK(env.Leftovers().empty());
}
