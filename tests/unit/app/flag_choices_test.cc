// Closed-choice flags: each takes every spelling it documents into its enum, once, and refuses
// anything else with a message naming the flag and the accepted spellings.
#include "app/flag_choices.h"

#include <catch2/catch.hpp>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "app/daemon_config.h"

namespace {

using netqos::app::DaemonConfig;
using Durability = netqos::service::AllocationService::Durability;

const std::string kTopo = "--topology-file=/dev/null";

struct Outcome {
  netqos::app::ParsedFlags parsed;
  std::string err;
};

// ParseDaemonFlags on netqosd `args`, with what it printed to stderr.
Outcome ParseCapturing(std::vector<std::string> args) {
  args.insert(args.begin(), "netqosd");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream err;
  std::streambuf* old = std::cerr.rdbuf(err.rdbuf());
  Outcome out{netqos::app::ParseDaemonFlags(static_cast<int>(argv.size()), argv.data()), ""};
  std::cerr.rdbuf(old);
  out.err = err.str();
  return out;
}

// `flag` takes each of `values` (spelling, the enum it must give, read back by `field`), and
// refuses "bogus" naming the flag and `accepted`, the spellings as the message lists them.
template <typename E>
void CheckChoiceFlag(const std::string& flag, const std::vector<std::pair<std::string, E>>& values,
                     const std::function<E(const DaemonConfig&)>& field,
                     const std::string& accepted) {
  for (const auto& [text, want] : values) {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{kTopo, flag + "=" + text}, {kTopo, flag, text}}) {
      INFO(args[1] << (args.size() > 2 ? " " + args[2] : std::string()));
      auto r = ParseCapturing(args);
      REQUIRE(r.parsed.config);
      CHECK(field(*r.parsed.config) == want);
    }
  }
  for (const std::string& bad : std::vector<std::string>{"bogus", "", values.front().first + " "}) {
    INFO(flag << "=\"" << bad << "\"");
    auto r = ParseCapturing({kTopo, flag + "=" + bad});
    CHECK_FALSE(r.parsed.config);
    CHECK(r.parsed.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(flag + " must be " + accepted + ", got \"" + bad + "\""));
  }
}

}  // namespace

TEST_CASE("enum flag --network-resource-plugin-policy: static only") {
  using netqos::app::NetworkPolicy;
  CheckChoiceFlag<NetworkPolicy>(
      "--network-resource-plugin-policy", {{"static", NetworkPolicy::kStatic}},
      [](const DaemonConfig& c) { return c.policy_name; }, "static");
}

TEST_CASE("enum flag --cgroup-type and --cgroup-driver: cgroupfs or systemd") {
  using netqos::cgroup::CgroupDriver;
  const std::vector<std::pair<std::string, CgroupDriver>> values = {
      {"cgroupfs", CgroupDriver::kCgroupfs}, {"systemd", CgroupDriver::kSystemd}};
  for (const char* flag : {"--cgroup-type", "--cgroup-driver"}) {
    CheckChoiceFlag<CgroupDriver>(
        flag, values, [](const DaemonConfig& c) { return c.cgroup_type; }, "cgroupfs or systemd");
  }
}

TEST_CASE("enum flag --nic-selection: random, first or last") {
  using netqos::app::NicSelection;
  CheckChoiceFlag<NicSelection>(
      "--nic-selection",
      {{"random", NicSelection::kRandom},
       {"first", NicSelection::kFirst},
       {"last", NicSelection::kLast}},
      [](const DaemonConfig& c) { return c.nic_selection; }, "random, first or last");
}

TEST_CASE("enum flag --log-level: spdlog's seven levels") {
  using netqos::app::LogLevel;
  CheckChoiceFlag<LogLevel>(
      "--log-level",
      {{"trace", LogLevel::kTrace},
       {"debug", LogLevel::kDebug},
       {"info", LogLevel::kInfo},
       {"warn", LogLevel::kWarn},
       {"error", LogLevel::kError},
       {"critical", LogLevel::kCritical},
       {"off", LogLevel::kOff}},
      [](const DaemonConfig& c) { return c.log_level; },
      "trace, debug, info, warn, error, critical or off");
}

TEST_CASE("enum flag --log-format: text or json") {
  using netqos::app::LogFormat;
  CheckChoiceFlag<LogFormat>(
      "--log-format", {{"text", LogFormat::kText}, {"json", LogFormat::kJson}},
      [](const DaemonConfig& c) { return c.log_format; }, "text or json");
}

TEST_CASE("enum flag --checkpoint-mode: journal or full-rewrite") {
  CheckChoiceFlag<Durability>(
      "--checkpoint-mode",
      {{"journal", Durability::kJournal}, {"full-rewrite", Durability::kFullRewrite}},
      [](const DaemonConfig& c) { return c.checkpoint_mode; }, "journal or full-rewrite");
}

TEST_CASE("enum flag --katalyst-checkpoint-layout: v0.5.3 or head") {
  using netqos::checkpoint::KatalystLayout;
  CheckChoiceFlag<KatalystLayout>(
      "--katalyst-checkpoint-layout",
      {{"v0.5.3", KatalystLayout::kV053}, {"head", KatalystLayout::kHead}},
      [](const DaemonConfig& c) { return c.katalyst_checkpoint_layout; }, "v0.5.3 or head");
}

TEST_CASE("enum flag --enforcement: bpf or none") {
  using netqos::app::Enforcement;
  CheckChoiceFlag<Enforcement>(
      "--enforcement", {{"bpf", Enforcement::kBpf}, {"none", Enforcement::kNone}},
      [](const DaemonConfig& c) { return c.enforcement; }, "bpf or none");
}

TEST_CASE("enum flag --pod-source: cri or kubelet") {
  using netqos::app::PodSourceKind;
  CheckChoiceFlag<PodSourceKind>(
      "--pod-source", {{"cri", PodSourceKind::kCri}, {"kubelet", PodSourceKind::kKubelet}},
      [](const DaemonConfig& c) { return c.pod_source; }, "cri or kubelet");
}

TEST_CASE("enum flag --shaping-mode: auto, htb or edt") {
  using netqos::shaping::ShapingMode;
  CheckChoiceFlag<ShapingMode>(
      "--shaping-mode",
      {{"auto", ShapingMode::kAuto}, {"htb", ShapingMode::kHtb}, {"edt", ShapingMode::kEdt}},
      [](const DaemonConfig& c) { return c.shaping_mode; }, "auto, htb or edt");
}

TEST_CASE("enum flag --unclassified-qos-level: the four levels, long or short") {
  using netqos::shaping::QosLevel;
  CheckChoiceFlag<QosLevel>(
      "--unclassified-qos-level",
      {{"system_cores", QosLevel::kSystem},
       {"dedicated_cores", QosLevel::kDedicated},
       {"shared_cores", QosLevel::kShared},
       {"reclaimed_cores", QosLevel::kReclaimed},
       {"system", QosLevel::kSystem},
       {"dedicated", QosLevel::kDedicated},
       {"shared", QosLevel::kShared},
       {"reclaimed", QosLevel::kReclaimed}},
      [](const DaemonConfig& c) { return c.unclassified_qos_level; },
      "system_cores, dedicated_cores, shared_cores, reclaimed_cores, system, dedicated, shared "
      "or reclaimed");
}

TEST_CASE("enum flags: the defaults are Katalyst's and netqos's documented ones") {
  const DaemonConfig c;
  using netqos::ChoiceName;
  CHECK(ChoiceName(c.policy_name, netqos::app::kPolicyChoices) == "static");
  CHECK(ChoiceName(c.cgroup_type, netqos::app::kCgroupDriverChoices) == "cgroupfs");
  CHECK(ChoiceName(c.nic_selection, netqos::app::kNicSelectionChoices) == "random");
  CHECK(ChoiceName(c.log_level, netqos::app::kLogLevelChoices) == "info");
  CHECK(ChoiceName(c.log_format, netqos::app::kLogFormatChoices) == "text");
  CHECK(ChoiceName(c.checkpoint_mode, netqos::app::kCheckpointModeChoices) == "journal");
  CHECK(ChoiceName(c.katalyst_checkpoint_layout, netqos::app::kKatalystLayoutChoices) == "v0.5.3");
  CHECK(ChoiceName(c.enforcement, netqos::app::kEnforcementChoices) == "bpf");
  CHECK(ChoiceName(c.pod_source, netqos::app::kPodSourceChoices) == "cri");
  CHECK(ChoiceName(c.shaping_mode, netqos::app::kShapingModeChoices) == "auto");
  CHECK(ChoiceName(c.unclassified_qos_level, netqos::app::kQosLevelChoices) == "shared_cores");
}

// The flag reader reads the lower layers' own tables (common/named_enum.h); what a layer prints
// for a value must be the flag's spelling of it.
TEST_CASE("enum flags: the lower layers' parsers and names read the same tables") {
  for (const auto& c : netqos::app::kShapingModeChoices) {
    INFO(c.name);
    CHECK(netqos::shaping::ShapingModeName(c.value) == c.name);
  }
  for (const auto& c : netqos::app::kKatalystLayoutChoices) {
    INFO(c.name);
    CHECK(netqos::checkpoint::KatalystLayoutFlagValue(c.value) == c.name);
  }
  for (const auto& c : netqos::app::kQosLevelChoices) {
    INFO(c.name);
    auto parsed = netqos::shaping::ParseQosLevel(std::string(c.name));
    REQUIRE(parsed.ok());
    CHECK(*parsed == c.value);
  }
  // Every enumerator has a spelling.
  for (int l = 0; l < netqos::shaping::kQosLevelCount; ++l) {
    CHECK(netqos::ChoiceName(static_cast<netqos::shaping::QosLevel>(l),
                             netqos::app::kQosLevelChoices) != "?");
  }
}

TEST_CASE("enum flags: print-config shows spellings, never numbers") {
  auto print = [](std::vector<std::string> args) {
    args.insert(args.begin(), "netqosd");
    args.push_back("--print-config");
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    std::ostringstream out;
    std::streambuf* old = std::cout.rdbuf(out.rdbuf());
    auto r = netqos::app::ParseDaemonFlags(static_cast<int>(argv.size()), argv.data());
    std::cout.rdbuf(old);
    CHECK(r.exit_code == 0);
    return "\n" + out.str();  // every line, the first too, starts after a newline
  };
  const std::string defaults = print({kTopo});
  for (const char* line :
       {"network-resource-plugin-policy=\"static\"", "cgroup-type=\"cgroupfs\"",
        "nic-selection=\"random\"", "log-level=\"info\"", "checkpoint-mode=\"journal\"",
        "katalyst-checkpoint-layout=\"v0.5.3\"", "log-format=\"text\"", "enforcement=\"bpf\"",
        "cgroup-driver=\"cgroupfs\"", "pod-source=\"cri\"", "shaping-mode=\"auto\"",
        "unclassified-qos-level=\"shared_cores\""}) {
    INFO(line);
    CHECK_THAT(defaults, Catch::Contains(std::string("\n") + line + "\n"));
  }
  const std::string set =
      print({kTopo, "--nic-selection=last", "--log-level", "debug",
             "--checkpoint-mode=full-rewrite", "--katalyst-checkpoint-layout=head",
             "--log-format=json", "--enforcement=none", "--cgroup-type=systemd",
             "--pod-source=kubelet", "--shaping-mode=edt", "--unclassified-qos-level=reclaimed"});
  for (const char* line :
       {"nic-selection=\"last\"", "log-level=\"debug\"", "checkpoint-mode=\"full-rewrite\"",
        "katalyst-checkpoint-layout=\"head\"", "log-format=\"json\"", "enforcement=\"none\"",
        "cgroup-type=\"systemd\"", "cgroup-driver=\"systemd\"", "pod-source=\"kubelet\"",
        "shaping-mode=\"edt\"", "unclassified-qos-level=\"reclaimed_cores\""}) {
    INFO(line);
    CHECK_THAT(set, Catch::Contains(std::string("\n") + line + "\n"));
  }
}
