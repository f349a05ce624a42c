// netqosd --config FILE: the format --print-config writes, read back to the same settings; the
// command line over the file; and the file's errors, each naming the file and the key.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "app/daemon_config.h"
#include "support/temp_dir.h"

using netqos::app::DaemonConfig;
using netqos::app::NicSelection;
using netqos::app::ParseDaemonFlags;
using netqos::testing::TempDir;

namespace {

struct Run {
  netqos::app::ParsedFlags parsed;
  std::string out;
  std::string err;
};

// netqosd's flag parsing on `args`, with what it printed.
Run Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "netqosd");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out;
  std::ostringstream err;
  std::streambuf* old_out = std::cout.rdbuf(out.rdbuf());
  std::streambuf* old_err = std::cerr.rdbuf(err.rdbuf());
  Run r{ParseDaemonFlags(static_cast<int>(argv.size()), argv.data()), "", ""};
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

// stdout of a successful --print-config run.
std::string PrintConfig(std::vector<std::string> args) {
  args.push_back("--print-config");
  Run r = Parse(std::move(args));
  INFO(r.err);
  CHECK(r.parsed.exit_code == 0);
  CHECK_FALSE(r.parsed.config);
  return r.out;
}

std::string Write(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.file(name);
  std::ofstream(path) << text;
  return path;
}

// The config netqosd would run with, given `args`.
DaemonConfig Config(std::vector<std::string> args) {
  Run r = Parse(std::move(args));
  INFO(r.err);
  REQUIRE(r.parsed.config);
  return *r.parsed.config;
}

// A rejected run: exit code 2 and its message.
std::string Rejection(std::vector<std::string> args) {
  Run r = Parse(std::move(args));
  CHECK_FALSE(r.parsed.config);
  CHECK(r.parsed.exit_code == 2);
  return r.err;
}

const std::string kTopo = "--topology-file=/dev/null";

}  // namespace

TEST_CASE("print-config output read back with --config prints the same again") {
  TempDir dir;
  const std::vector<std::vector<std::string>> command_lines = {
      {kTopo},
      {kTopo, "--machine-net-multi-ns=yes", "--enforce-nics=eth0,ns1/eth1",
       "--qrm-socket-dirs=/a,/b", "--qrm-socket-dirs=/c", "--enforcement-resync-period=1.5m",
       "--kubelet-registration-timeout=2500ms", "--unclassified-qos-level=reclaimed",
       "--network-resource-plugin-egress-capacity-rate=0.5", "--cgroup-type=systemd",
       "--qos-level-shaping=reclaimed=100:1000:3", "--pod-annotation-kept-keys=a,b",
       "--pod-annotation-qos-level-shared-selector=k=v,x=y", "--dscp-default=keep",
       "--network-resource-plugin-nic-health-checkers=-ip",
       "--machine-net-ns-dir=", "--network-resource-plugin-net-class-annotation-key=say \"hi\""},
  };
  for (const auto& args : command_lines) {
    const std::string first = PrintConfig(args);
    const std::string file = Write(dir, "printed.conf", first);
    const std::string again = PrintConfig({"--config=" + file});
    INFO(first);
    CHECK(again == first);
    // And the daemon runs with the same settings either way.
    const DaemonConfig a = Config(args);
    const DaemonConfig b = Config({"--config=" + file});
    CHECK(a.enforce_nics == b.enforce_nics);
    CHECK(a.qrm_socket_dirs == b.qrm_socket_dirs);
    CHECK(a.enforcement_resync_period == b.enforcement_resync_period);
    CHECK(a.kubelet_registration_timeout == b.kubelet_registration_timeout);
    CHECK(a.machine_net_multi_ns == b.machine_net_multi_ns);
    CHECK(a.unclassified_qos_level == b.unclassified_qos_level);
    CHECK(a.cgroup_type == b.cgroup_type);
    CHECK(a.policy.egress_capacity_rate == b.policy.egress_capacity_rate);
    CHECK(a.policy.qos.annotation_kept_keys == b.policy.qos.annotation_kept_keys);
    CHECK(a.policy.qos.extra_selectors == b.policy.qos.extra_selectors);
    CHECK(a.policy.pod_net_class_annotation_key == b.policy.pod_net_class_annotation_key);
    CHECK(a.policy.require_ip_address == b.policy.require_ip_address);
    CHECK(a.qos_level_shaping == b.qos_level_shaping);
    CHECK(a.dscp_default == b.dscp_default);
  }
}

TEST_CASE("print-config prints resolved values, every setting once, and no modes") {
  const std::string printed =
      "\n" + PrintConfig({kTopo, "--machine-net-multi-ns=yes", "--enforcement-resync-period=90",
                          "--kubelet-registration-timeout=1.5m", "--nic-selection=last",
                          "--unclassified-qos-level=system", "--enforce-nics=eth0,eth1"});
  for (const char* line :
       {"machine-net-multi-ns=true", "enforcement-resync-period=\"1m30s\"",
        "kubelet-registration-timeout=\"1m30s\"", "nic-selection=\"last\"",
        "unclassified-qos-level=\"system_cores\"", "enforce-nics=[\"eth0\", \"eth1\"]",
        "qos-level-shaping=[]", "topology-file=\"/dev/null\"",
        "network-resource-plugin-egress-capacity-rate=0.94",
        "qrm-socket-dirs=[\"/var/lib/kubelet/plugins_registry\"]",
        // Katalyst's flags, by their names.
        "network-resource-plugin-reserved-bandwidth=0", "cgroup-type=\"cgroupfs\""}) {
    INFO(line);
    CHECK_THAT(printed, Catch::Contains(std::string("\n") + line + "\n"));
  }
  for (const char* mode : {"print-config", "uninstall", "config", "help", "version",
                           "print-topology", "json", "check-tenant-policy"}) {
    INFO(mode);
    CHECK_THAT(printed, !Catch::Contains(std::string("\n") + mode + "="));
  }
  // Every line is a comment or one key, and no key comes twice.
  std::istringstream lines(printed);
  std::vector<std::string> keys;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    const std::string key = line.substr(0, line.find('='));
    INFO(line);
    CHECK(std::find(keys.begin(), keys.end(), key) == keys.end());
    keys.push_back(key);
  }
  CHECK(keys.size() > 70);
}

TEST_CASE("config file: settings taken, and the command line wins over them") {
  TempDir dir;
  const std::string file = Write(dir, "netqosd.conf",
                                 "# comments and blank lines are skipped\n\n"
                                 "qrm-state-dir = \"/from/file\"\n"
                                 "enforce-nics = [\"eth0\", \"eth1\"]\n"
                                 "nic-selection = \"first\"\n"
                                 "network-resource-plugin-reserved-bandwidth = 4000\n"
                                 "skip-network-state-corruption = true\n"
                                 "enforcement-resync-period = \"2m\"\n"
                                 "machine-net-allocatable-ns = []\n"
                                 "topology-file = \"/dev/null\"\n");
  const DaemonConfig from_file = Config({"--config=" + file});
  CHECK(from_file.qrm_state_dir == "/from/file");
  CHECK(from_file.enforce_nics.Items() == std::vector<std::string>{"eth0", "eth1"});
  CHECK(from_file.nic_selection == NicSelection::kFirst);
  CHECK(from_file.policy.reserved_bandwidth == 4000);
  CHECK(from_file.skip_network_state_corruption);
  CHECK(from_file.enforcement_resync_period == std::chrono::minutes(2));
  CHECK(from_file.machine_net_allocatable_ns.empty());  // "[]" empties the default ["*"]
  CHECK(from_file.qrm_socket_dirs ==
        std::vector<std::string>{"/var/lib/kubelet/plugins_registry"});  // not in the file

  // Before or after --config: the command line wins, and its list replaces the file's.
  for (bool config_first : {true, false}) {
    std::vector<std::string> args = {"--qrm-state-dir=/from/flag", "--enforce-nics=eth9",
                                     "--skip-network-state-corruption=false"};
    args.insert(config_first ? args.begin() : args.end(), "--config=" + file);
    const DaemonConfig c = Config(args);
    CHECK(c.qrm_state_dir == "/from/flag");
    CHECK(c.enforce_nics.Items() == std::vector<std::string>{"eth9"});
    CHECK_FALSE(c.skip_network_state_corruption);
    CHECK(c.nic_selection == NicSelection::kFirst);  // still the file's
  }
}

TEST_CASE("config file: a repeated key or --config takes the last, as a repeated flag does") {
  TempDir dir;
  const std::string first = Write(dir, "first.conf",
                                  "topology-file = \"/dev/null\"\n"
                                  "qrm-state-dir = \"/first\"\n");
  const std::string second = Write(dir, "second.conf",
                                   "topology-file = \"/dev/null\"\n"
                                   "qrm-state-dir = \"/second\"\n"
                                   "nic-selection = \"first\"\n"
                                   "qrm-socket-dirs = [\"/s1\"]\n"
                                   "nic-selection = \"last\"\n"
                                   "qrm-socket-dirs = [\"/s2\", \"/s3\"]\n");
  const DaemonConfig c = Config({"--config=" + first, "--config=" + second});
  CHECK(c.qrm_state_dir == "/second");
  CHECK(c.nic_selection == NicSelection::kLast);
  CHECK(c.qrm_socket_dirs == std::vector<std::string>{"/s1", "/s2", "/s3"});  // lists collect
}

TEST_CASE("config file: an unknown key, a mode, a section or a list for one value is refused") {
  TempDir dir;
  const std::string unknown = Write(dir, "unknown.conf", "enforce-nic = [\"eth0\"]\n");
  CHECK_THAT(Rejection({kTopo, "--config=" + unknown}),
             Catch::Contains(unknown) && Catch::Contains("unknown key \"enforce-nic\""));
  const std::string dashes = Write(dir, "dashes.conf", "--enforce-nics = [\"eth0\"]\n");
  CHECK_THAT(Rejection({kTopo, "--config=" + dashes}),
             Catch::Contains(dashes) && Catch::Contains("without the leading --"));
  for (const char* mode : {"uninstall = true", "print-config = true", "config = \"x\"",
                           "check-tenant-policy = \"/p.json\"", "help = true"}) {
    INFO(mode);
    const std::string file = Write(dir, "mode.conf", std::string(mode) + "\n");
    const std::string key = std::string(mode).substr(0, std::string(mode).find(' '));
    CHECK_THAT(Rejection({kTopo, "--config=" + file}),
               Catch::Contains(file) && Catch::Contains("\"" + key + "\" is a command-line mode"));
  }
  const std::string section = Write(dir, "section.conf", "[netqosd]\nenforce-nics = []\n");
  CHECK_THAT(Rejection({kTopo, "--config=" + section}),
             Catch::Contains(section) && Catch::Contains("section [netqosd]"));
  const std::string list = Write(dir, "list.conf", "qrm-state-dir = [\"/a\", \"/b\"]\n");
  CHECK_THAT(Rejection({kTopo, "--config=" + list}),
             Catch::Contains(list) && Catch::Contains("\"qrm-state-dir\" takes one value"));
}

TEST_CASE("config file: a bad value is refused, naming the key and the file") {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"network-resource-plugin-reserved-bandwidth = \"lots\"",
       "\"network-resource-plugin-reserved-bandwidth\": \"lots\" is not a UINT"},
      {"skip-network-state-corruption = maybe", "\"maybe\" is not true or false"},
      {"nic-selection = \"best\"", "--nic-selection must be random, first or last"},
      {"enforcement-resync-period = \"-30s\"", "must not be negative"},
      {"network-resource-plugin-egress-capacity-rate = 5", "must be a fraction"},
      {"qos-level-shaping = [\"reclaimed=1\"]", "--qos-level-shaping"},
  };
  for (const auto& [line, message] : bad) {
    INFO(line);
    const std::string file = Write(dir, "bad.conf", line + "\n");
    const std::string key = line.substr(0, line.find(' '));
    const std::string err = Rejection({kTopo, "--config=" + file});
    CHECK_THAT(err, Catch::Contains(message) && Catch::Contains(file) && Catch::Contains(key));
  }
  // The same bad value on the command line names no file.
  CHECK_THAT(Rejection({kTopo, "--nic-selection=best"}), !Catch::Contains("--config"));
  // A bad value in the file that the command line overrides is never read.
  const std::string file = Write(dir, "overridden.conf", "nic-selection = \"best\"\n");
  CHECK(Config({kTopo, "--config=" + file, "--nic-selection=first"}).nic_selection ==
        NicSelection::kFirst);
}

TEST_CASE("config file: an unreadable file is refused, naming it") {
  TempDir dir;
  const std::string missing = dir.file("missing.conf");
  CHECK_THAT(Rejection({kTopo, "--config=" + missing}),
             Catch::Contains(missing) && Catch::Contains("cannot read"));
  CHECK_THAT(Rejection({kTopo, "--config=" + dir.path()}),
             Catch::Contains(dir.path()) && Catch::Contains("is a directory"));
}

TEST_CASE("capacity rates are fractions of the NIC's speed, at most 1") {
  CHECK(Config({kTopo, "--network-resource-plugin-egress-capacity-rate=1"})
            .policy.egress_capacity_rate == 1.0f);
  for (const char* flag : {"--network-resource-plugin-egress-capacity-rate",
                           "--network-resource-plugin-ingress-capacity-rate"}) {
    INFO(flag);
    const std::string err = Rejection({kTopo, std::string(flag) + "=5"});
    CHECK_THAT(err, Catch::Contains(flag) && Catch::Contains("fraction") &&
                        Catch::Contains("0.9 for 90 %") && Catch::Contains("got 5"));
    CHECK_THAT(Rejection({kTopo, std::string(flag) + "=1.01"}), Catch::Contains("got 1.01"));
  }
}

TEST_CASE("config file: --cgroup-type and --cgroup-driver, one setting, the command line wins") {
  TempDir dir;
  // A --print-config file names the driver twice.
  const std::string both = Write(dir, "both.conf",
                                 "topology-file = \"/dev/null\"\n"
                                 "cgroup-type = \"cgroupfs\"\n"
                                 "cgroup-driver = \"cgroupfs\"\n");
  using netqos::cgroup::CgroupDriver;
  CHECK(Config({"--config=" + both}).cgroup_type == CgroupDriver::kCgroupfs);
  CHECK(Config({"--config=" + both, "--cgroup-driver=systemd"}).cgroup_type ==
        CgroupDriver::kSystemd);
  CHECK(Config({"--config=" + both, "--cgroup-type=systemd"}).cgroup_type ==
        CgroupDriver::kSystemd);
  CHECK_THAT(PrintConfig({"--config=" + both, "--cgroup-type=systemd"}),
             Catch::Contains("cgroup-driver=\"systemd\""));
  // Within the file, as on the command line, they must agree.
  const std::string disagree = Write(dir, "disagree.conf",
                                     "topology-file = \"/dev/null\"\n"
                                     "cgroup-type = \"systemd\"\n"
                                     "cgroup-driver = \"cgroupfs\"\n");
  CHECK_THAT(Rejection({"--config=" + disagree}),
             Catch::Contains("disagree") && Catch::Contains(disagree));
}
