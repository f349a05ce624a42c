// Flag parsing: Katalyst's names and defaults, Go-style values, and clear rejections.
#include "app/daemon_config.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/version.h"
#include "core/state_size.h"
#include "metrics/bind_address.h"
#include "pods/kubelet/kubelet_pods_client.h"

using netqos::app::DaemonConfig;
using netqos::app::Enforcement;
using netqos::app::NicSelection;
using netqos::app::ParseDaemonFlags;
using netqos::app::PodSourceKind;
using netqos::app::ValidateDaemonConfig;
using netqos::cgroup::CgroupDriver;
using netqos::core::NicId;
using netqos::enforce::DscpDefault;
using netqos::shaping::LevelConfig;
using netqos::shaping::QosLevel;

namespace {

netqos::app::ParsedFlags Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "netqosd");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return ParseDaemonFlags(static_cast<int>(argv.size()), argv.data());
}

// Parse() that also returns what the parser printed to stderr (the rejection message).
struct Outcome {
  netqos::app::ParsedFlags parsed;
  std::string err;
};
Outcome ParseCapturing(std::vector<std::string> args) {
  std::ostringstream err;
  std::streambuf* old = std::cerr.rdbuf(err.rdbuf());
  Outcome out{Parse(std::move(args)), ""};
  std::cerr.rdbuf(old);
  out.err = err.str();
  return out;
}

// What a run that exits at once (--print-config, --help, --version) printed to stdout; it must
// exit 0 without a config to run.
std::string StdoutOf(std::vector<std::string> args) {
  std::ostringstream out;
  std::streambuf* old = std::cout.rdbuf(out.rdbuf());
  auto r = Parse(std::move(args));
  std::cout.rdbuf(old);
  CHECK_FALSE(r.config);
  CHECK(r.exit_code == 0);
  return out.str();
}

// stdout of a successful --print-config run.
std::string PrintConfig(std::vector<std::string> args) {
  args.push_back("--print-config");
  return StdoutOf(std::move(args));
}

const std::string kTopo = "--topology-file=/dev/null";

// ParseCapturing() of a command line the parser must refuse: no config, and the usage error's
// exit code.
Outcome RefusedAsGiven(std::vector<std::string> args) {
  Outcome out = ParseCapturing(std::move(args));
  CHECK_FALSE(out.parsed.config);
  CHECK(out.parsed.exit_code == 2);
  return out;
}

// RefusedAsGiven() of `args` after kTopo (no NIC discovery).
Outcome Refused(std::vector<std::string> args) {
  args.insert(args.begin(), kTopo);
  return RefusedAsGiven(std::move(args));
}

}  // namespace

TEST_CASE("defaults match Katalyst's flag defaults") {
  auto r = Parse({kTopo});
  REQUIRE(r.config);
  const DaemonConfig& c = *r.config;
  CHECK(c.qrm_socket_dirs == std::vector<std::string>{"/var/lib/kubelet/plugins_registry"});
  CHECK(c.qrm_state_dir == "/var/lib/katalyst/qrm_advisor");
  CHECK(c.EffectiveStateDir() == "/var/lib/katalyst/qrm_advisor");
  CHECK(c.policy.egress_capacity_rate == 0.94f);
  CHECK(c.policy.ingress_capacity_rate == 0.9f);
  CHECK(c.policy.reserved_bandwidth == 0);
  CHECK(c.policy.qos_class_ids.at("shared_cores") == 0);
  CHECK(c.policy.qos_class_ids.at("system_cores") == 0);
  CHECK(c.policy.pod_net_class_annotation_key == "katalyst.kubewharf.io/net_class_id");
  CHECK(c.policy.annotation_keys.ipv4 == "qrm.katalyst.kubewharf.io/inet_addr");
  CHECK(c.policy.annotation_keys.bandwidth == "qrm.katalyst.kubewharf.io/net_bandwidth");
  CHECK_FALSE(c.skip_network_state_corruption);
  CHECK(c.enforcement == Enforcement::kBpf);
  CHECK(c.nic_selection == NicSelection::kRandom);
}

TEST_CASE("Katalyst DaemonSet arguments are accepted in Go flag syntax") {
  auto r =
      Parse({kTopo, "--qrm-socket-dirs=/a,/b", "--qrm-socket-dirs", "/c",
             "--network-resource-plugin-reserved-bandwidth=4000",
             "--network-resource-plugin-egress-capacity-rate", "0.9",
             "--network-resource-plugin-ingress-capacity-rate=0.85",
             "--network-resource-plugin-class-id-shared-cores=22345",
             "--network-resource-plugin-class-id-reclaimed-cores", "22346",
             "--skip-network-state-corruption=true", "--machine-net-multi-ns=false",
             "--pod-annotation-qos-level-shared-selector=a=b,c=d",
             "--pod-annotation-qos-enhancements=katalyst.kubewharf.io/network_enhancement=x/ne",
             "--qos-enhancement-default-values=namespace_type=host_ns_preferred",
             "--qrm-extra-state-file=/x", "--cgroup-type=systemd"});
  REQUIRE(r.config);
  const DaemonConfig& c = *r.config;
  CHECK(c.qrm_socket_dirs == std::vector<std::string>{"/a", "/b", "/c"});
  CHECK(c.policy.reserved_bandwidth == 4000);
  CHECK(c.policy.egress_capacity_rate == 0.9f);
  CHECK(c.policy.ingress_capacity_rate == 0.85f);
  CHECK(c.policy.qos_class_ids.at("shared_cores") == 22345);
  CHECK(c.policy.qos_class_ids.at("reclaimed_cores") == 22346);
  CHECK(c.skip_network_state_corruption);
  CHECK_FALSE(c.machine_net_multi_ns);
  CHECK(c.policy.qos.extra_selectors.at("shared_cores") ==
        netqos::core::StringMap{{"a", "b"}, {"c", "d"}});
  CHECK(c.policy.qos.enhancement_aliases.at("katalyst.kubewharf.io/network_enhancement") == "x/ne");
  CHECK(c.policy.qos.enhancement_defaults.at("namespace_type") == "host_ns_preferred");
  CHECK(c.cgroup_type == CgroupDriver::kSystemd);
}

TEST_CASE("in-memory state moves the checkpoint directory") {
  auto r = Parse({kTopo, "--qrm-enable-in-memory-state", "--qrm-state-dir-in-memory=/dev/shm/x"});
  REQUIRE(r.config);
  CHECK(r.config->EffectiveStateDir() == "/dev/shm/x");
}

TEST_CASE("bad flags and values are rejected") {
  const std::vector<std::vector<std::string>> bad = {
      {kTopo, "--no-such-flag"},
      {kTopo, "--network-resource-plugin-reserved-bandwidth=-1"},
      {kTopo, "--network-resource-plugin-reserved-bandwidth=4294967296"},
      {kTopo, "--network-resource-plugin-reserved-bandwidth=lots"},
      {kTopo, "--network-resource-plugin-egress-capacity-rate=nan"},
      {kTopo, "--network-resource-plugin-egress-capacity-rate=-0.5"},
      {kTopo, "--network-resource-plugin-ingress-capacity-rate=0"},
      {kTopo, "--network-resource-plugin-policy=dynamic"},
      {kTopo, "--enforcement=iptables"},
      {kTopo, "--nic-selection=best"},
      {kTopo, "--cgroup-type=v3"},
      {kTopo, "--log-level=loud"},
      {kTopo, "--pod-annotation-qos-level-shared-selector=novalue"},
      {kTopo, "--qos-enhancement-default-values==x"},
      {kTopo, "--skip-network-state-corruption=maybe"},
      {kTopo, "--nic-allow=veth*"},
      {"--json"},
  };
  for (const auto& args : bad) {
    const std::string last = args.empty() ? std::string("<none>") : args.back();
    INFO(last);
    auto r = Parse(args);
    CHECK_FALSE(r.config);
    CHECK(r.exit_code == 2);  // CLI11's own codes (105, 109, ...) never leak out
  }
}

TEST_CASE("an empty --flag= value is empty, as in Go, and never takes the next argument") {
  auto r = Parse({kTopo, "--machine-net-ns-dir=", "--print-topology"});
  REQUIRE(r.config);
  CHECK(r.config->machine_net_ns_dir.empty());
  CHECK(r.config->print_topology);
  auto sockets = Parse({kTopo, "--qrm-socket-dirs=", "--print-topology"});
  CHECK_FALSE(sockets.config);  // an empty directory name, not "--print-topology"
  auto nics = Parse({kTopo, "--enforce-nics=", "--uninstall"});
  REQUIRE(nics.config);
  CHECK(nics.config->enforce_nics.empty());
  CHECK(nics.config->uninstall);
}

TEST_CASE("netqosd --version prints the build's release version, commit and date") {
  CHECK(StdoutOf({"--version"}) == "netqosd " + netqos::VersionLine() + "\n");
  CHECK(netqos::VersionLine().rfind(std::string(netqos::Version()) + " commit=", 0) == 0);
  CHECK_THAT(netqos::VersionLine(), Catch::Contains(" date="));
}

TEST_CASE("help and version exit 0 without a config") {
  for (const char* f : {"--help", "--version"}) {
    auto r = Parse({f});
    CHECK_FALSE(r.config);
    CHECK(r.exit_code == 0);
  }
}

// --- Enforcement flags (issue 4) ---

TEST_CASE("enforcement flags: defaults") {
  auto r = Parse({kTopo});
  REQUIRE(r.config);
  const DaemonConfig& c = *r.config;
  CHECK(c.enforcement == Enforcement::kBpf);
  CHECK(c.cgroup_root.empty());
  CHECK(c.cgroup_type == CgroupDriver::kCgroupfs);
  CHECK(c.kubelet_pods_url.text == "https://127.0.0.1:10250/pods");
  CHECK(c.kubelet_token_file == "/var/run/secrets/kubernetes.io/serviceaccount/token");
  CHECK_FALSE(c.kubelet_insecure_skip_tls_verify);
  CHECK(c.kubelet_ca_file.empty());  // OpenSSL's default CAs (SSL_CERT_FILE, ...)
  CHECK(c.bpf_pin_dir == "/sys/fs/bpf/netqos");
  CHECK(c.enforce_nics.empty());
  CHECK_FALSE(c.replace_root_qdisc);
  for (const auto& l : c.qos_level_shaping) CHECK_FALSE(l.has_value());
  CHECK(c.dscp_default == DscpDefault{});  // auto
  CHECK(c.unclassified_qos_level == QosLevel::kShared);
  CHECK(c.enforcement_resync_period == std::chrono::seconds(30));
  CHECK(c.enforcement_full_resync_period == std::chrono::minutes(5));
  CHECK(c.kubelet_registration_timeout == std::chrono::seconds(60));
  CHECK(c.pod_source == PodSourceKind::kCri);  // no cluster credential needed (docs/security.md)
  CHECK(c.cri_socket.Auto());
  CHECK_FALSE(c.uninstall);
  CHECK_FALSE(c.set_forward_priority_sysctl);  // opt-in: the NIC program classifies routed traffic
}

TEST_CASE("enforcement flags: the full resync period is a duration") {
  auto r = Parse({kTopo, "--enforcement-full-resync-period=1m30s"});
  REQUIRE(r.config);
  CHECK(r.config->enforcement_full_resync_period == std::chrono::seconds(90));
  r = Parse({kTopo, "--enforcement-full-resync-period", "600"});
  REQUIRE(r.config);
  CHECK(r.config->enforcement_full_resync_period == std::chrono::minutes(10));
}

TEST_CASE("enforcement flags: valid values are taken") {
  auto r = Parse({kTopo, "--enforcement=none", "--cgroup-root=/sys/fs/cgroup/unified",
                  "--cgroup-driver=systemd", "--pod-source=kubelet",
                  "--kubelet-pods-url=http://127.0.0.1:10255/pods",
                  "--kubelet-token-file=/etc/netqos/token", "--kubelet-insecure-skip-tls-verify",
                  "--bpf-pin-dir=/run/netqos/bpf/pins", "--enforce-nics=eth0,ns2/eth2",
                  "--enforce-nics", "ns3/veth9", "--replace-root-qdisc",
                  "--qos-level-shaping=reclaimed_cores=100:1000:3,system=100:1000:0",
                  "--unclassified-qos-level=reclaimed", "--enforcement-resync-period", "5",
                  "--uninstall", "--keep-forwarded-priority=false"});
  REQUIRE(r.config);
  const DaemonConfig& c = *r.config;
  CHECK(c.enforcement == Enforcement::kNone);
  CHECK(c.cgroup_root == "/sys/fs/cgroup/unified");
  CHECK(c.cgroup_type == CgroupDriver::kSystemd);
  CHECK(c.kubelet_pods_url.text == "http://127.0.0.1:10255/pods");
  CHECK(c.kubelet_token_file == "/etc/netqos/token");
  CHECK(c.kubelet_insecure_skip_tls_verify);
  CHECK(c.bpf_pin_dir == "/run/netqos/bpf/pins");
  CHECK_FALSE(c.enforce_nics.all);
  CHECK(c.enforce_nics.nics == std::vector<NicId>{{"", "eth0"}, {"ns2", "eth2"}, {"ns3", "veth9"}});
  CHECK(c.replace_root_qdisc);
  CHECK(c.qos_level_shaping[static_cast<size_t>(QosLevel::kReclaimed)] ==
        LevelConfig{100, 1000, 3});
  CHECK(c.qos_level_shaping[static_cast<size_t>(QosLevel::kSystem)] == LevelConfig{100, 1000, 0});
  CHECK_FALSE(c.qos_level_shaping[static_cast<size_t>(QosLevel::kShared)].has_value());
  CHECK(c.unclassified_qos_level == QosLevel::kReclaimed);
  CHECK(c.enforcement_resync_period == std::chrono::seconds(5));
  CHECK(c.uninstall);
  CHECK_FALSE(c.set_forward_priority_sysctl);

  auto bpf = Parse({kTopo, "--enforcement", "bpf", "--enforce-nics=all", "--pod-source=kubelet",
                    "--kubelet-pods-url=file:///var/lib/netqos/pods.json",
                    "--keep-forwarded-priority=true", "--kubelet-insecure-skip-tls-verify=false"});
  REQUIRE(bpf.config);
  CHECK(bpf.config->enforcement == Enforcement::kBpf);
  CHECK(bpf.config->enforce_nics.all);
  CHECK(bpf.config->enforce_nics.nics.empty());

  // An entirely empty value means none (templated DaemonSets render empty lists that way).
  auto none = Parse({kTopo, "--enforce-nics="});
  REQUIRE(none.config);
  CHECK(none.config->enforce_nics.empty());
  CHECK(bpf.config->kubelet_pods_url.text == "file:///var/lib/netqos/pods.json");
  CHECK(bpf.config->set_forward_priority_sysctl);
  CHECK_FALSE(bpf.config->kubelet_insecure_skip_tls_verify);
}

TEST_CASE("kubelet CA file: taken for an https pod list URL") {
  auto r = Parse({kTopo, "--pod-source=kubelet",
                  "--kubelet-ca-file=/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"});
  REQUIRE(r.config);
  CHECK(r.config->kubelet_ca_file == "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt");
  CHECK_FALSE(r.config->kubelet_insecure_skip_tls_verify);
  // The file is read per request, not at start: a path that does not exist yet is accepted.
  auto later = Parse({kTopo, "--pod-source=kubelet", "--kubelet-ca-file", "/nonexistent/ca.crt",
                      "--kubelet-pods-url=https://192.0.2.10:10250/pods"});
  REQUIRE(later.config);
  CHECK(later.config->kubelet_ca_file == "/nonexistent/ca.crt");
}

TEST_CASE("cgroup driver: --cgroup-driver and Katalyst's --cgroup-type are one setting") {
  auto type = Parse({kTopo, "--cgroup-type=systemd"});
  REQUIRE(type.config);
  CHECK(type.config->cgroup_type == CgroupDriver::kSystemd);
  auto driver = Parse({kTopo, "--cgroup-driver", "systemd"});
  REQUIRE(driver.config);
  CHECK(driver.config->cgroup_type == CgroupDriver::kSystemd);
  auto both = Parse({kTopo, "--cgroup-type=systemd", "--cgroup-driver=systemd"});
  REQUIRE(both.config);
  CHECK(both.config->cgroup_type == CgroupDriver::kSystemd);
  auto cgroupfs = Parse({kTopo, "--cgroup-driver=cgroupfs"});
  REQUIRE(cgroupfs.config);
  CHECK(cgroupfs.config->cgroup_type == CgroupDriver::kCgroupfs);

  auto conflict = Refused({"--cgroup-type=systemd", "--cgroup-driver=cgroupfs"});
  CHECK_THAT(conflict.err, Catch::Contains("--cgroup-type=systemd") &&
                               Catch::Contains("--cgroup-driver=cgroupfs"));

  auto bad = Refused({"--cgroup-driver=v2"});
  CHECK_THAT(bad.err, Catch::Contains("--cgroup-driver") && Catch::Contains("v2"));
}

TEST_CASE("enforcement flags: each rejection names its flag") {
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> mentions;  // all must appear in the message
  };
  const std::vector<Case> cases = {
      {{"--enforcement=tc"}, {"--enforcement", "tc"}},
      {{"--enforcement="}, {"--enforcement"}},
      {{"--cgroup-root=sys/fs/cgroup"}, {"--cgroup-root", "sys/fs/cgroup"}},
      {{"--cgroup-root=/"}, {"--cgroup-root"}},
      {{"--pod-source=kubelet", "--kubelet-pods-url=127.0.0.1:10250/pods"},
       {"--kubelet-pods-url", "127.0.0.1:10250"}},
      {{"--pod-source=kubelet", "--kubelet-pods-url=ftp://h/pods"},
       {"--kubelet-pods-url", "ftp://h/pods"}},
      {{"--pod-source=kubelet", "--kubelet-pods-url=file://host/pods.json"},
       {"--kubelet-pods-url", "file://host"}},
      {{"--pod-source=kubelet", "--kubelet-pods-url=file://pods.json"},
       {"--kubelet-pods-url", "file://pods.json"}},
      {{"--pod-source=kubelet", "--kubelet-token-file="}, {"--kubelet-token-file"}},
      {{"--pod-source=kubelet", "--kubelet-insecure-skip-tls-verify=perhaps"},
       {"kubelet-insecure-skip-tls-verify"}},
      {{"--pod-source=kubelet", "--kubelet-ca-file=ca.crt"},
       {"--kubelet-ca-file", "absolute", "ca.crt"}},
      {{"--pod-source=kubelet", "--kubelet-ca-file=/etc/ca.crt",
        "--kubelet-insecure-skip-tls-verify"},
       {"--kubelet-ca-file", "--kubelet-insecure-skip-tls-verify", "contradict"}},
      {{"--pod-source=kubelet", "--kubelet-ca-file=/etc/ca.crt",
        "--kubelet-pods-url=http://127.0.0.1:10255/pods"},
       {"--kubelet-ca-file", "https", "http://127.0.0.1:10255/pods"}},
      {{"--pod-source=docker"}, {"--pod-source", "docker"}},
      {{"--kubelet-pods-url=http://127.0.0.1:10255/pods"},
       {"--kubelet-pods-url", "--pod-source=kubelet only", "cri"}},
      {{"--kubelet-token-file=/t"}, {"--kubelet-token-file", "--pod-source=kubelet only"}},
      {{"--cri-socket=tcp://10.0.0.1:1"}, {"--cri-socket", "tcp://10.0.0.1:1"}},
      {{"--cri-socket=run/x.sock"}, {"--cri-socket", "run/x.sock"}},
      {{"--bpf-pin-dir=netqos"}, {"--bpf-pin-dir", "netqos"}},
      {{"--bpf-pin-dir="}, {"--bpf-pin-dir"}},
      {{"--bpf-pin-dir=/"}, {"--bpf-pin-dir"}},
      {{"--enforce-nics=eth0,,eth1"}, {"--enforce-nics", "empty"}},
      {{"--enforce-nics=eth0,"}, {"--enforce-nics", "empty"}},
      {{"--enforce-nics=averyveryverylongname0"}, {"--enforce-nics", "averyveryverylongname0"}},
      {{"--enforce-nics=all,eth0"}, {"--enforce-nics", "all"}},
      {{"--enforce-nics=a/b/eth0"}, {"--enforce-nics", "a/b/eth0"}},
      {{"--enforce-nics=eth0,eth0"}, {"--enforce-nics", "eth0", "twice"}},
      {{"--enforce-nics=ns/"}, {"--enforce-nics", "ns/"}},
      {{"--enforce-nics=/eth0"}, {"--enforce-nics", "/eth0"}},
      {{"--replace-root-qdisc=sometimes"}, {"replace-root-qdisc"}},
      {{"--qos-level-shaping=gold=1:2:3"}, {"--qos-level-shaping", "gold=1:2:3"}},
      {{"--qos-level-shaping=shared_cores=400:300:2"}, {"--qos-level-shaping", "400:300:2"}},
      {{"--qos-level-shaping=shared=400:1000"}, {"--qos-level-shaping", "shared=400:1000"}},
      {{"--qos-level-shaping=shared=400:1000:8"}, {"--qos-level-shaping", "shared=400:1000:8"}},
      {{"--qos-level-shaping=reclaimed=200:1000:3"}, {"--qos-level-shaping", "1050"}},
      {{"--qos-level-shaping=shared"},
       {"--qos-level-shaping: \"shared\": ", "expected <level>=<rate_permille>"}},
      {{"--qos-level-shaping=shared=1:1000:2,shared_cores=2:1000:2"},
       {"--qos-level-shaping: \"shared_cores=2:1000:2\": ", "already set by \"shared=1:1000:2\""}},
      {{"--qos-level-shaping=shared=a:1000:2"},
       {"--qos-level-shaping: \"shared=a:1000:2\": ", "non-negative integers"}},
      {{"--qos-level-shaping=shared=0:0:2"},
       {"--qos-level-shaping: \"shared=0:0:2\": ", "ceil must be positive"}},
      {{"--dscp-default=64"}, {"--dscp-default: \"64\": ", "out of range", "or auto or keep"}},
      {{"--dscp-default=AUTO"}, {"--dscp-default: \"AUTO\": ", "or auto or keep"}},
      {{"--dscp-default="}, {"--dscp-default: \"\": ", "empty DSCP"}},
      {{"--network-resource-plugin-nic-health-checkers=ip,link"},
       {"--network-resource-plugin-nic-health-checkers", "unknown checker \"link\""}},
      {{"--qos-level-dscp=shared=64"}, {"--qos-level-dscp", "shared=64"}},
      {{"--qos-level-dscp=gold=EF"}, {"--qos-level-dscp", "gold=EF"}},
      {{"--qos-level-dscp", "system=46,dedicated=AF44"}, {"--qos-level-dscp", "dedicated=AF44"}},
      {{"--qos-level-burst=shared=100"}, {"--qos-level-burst", "shared=100", "1600"}},
      {{"--qos-level-burst=shared=2Gi"}, {"--qos-level-burst", "shared=2Gi"}},
      {{"--qos-level-burst=gold=64Ki"}, {"--qos-level-burst", "gold=64Ki"}},
      {{"--qos-level-burst", "system=auto,shared=lots"}, {"--qos-level-burst", "shared=lots"}},
      {{"--qos-level-burst=shared=1Gi1"}, {"--qos-level-burst: \"shared=1Gi1\": "}},
      {{"--qos-level-burst=shared=-1"}, {"--qos-level-burst: \"shared=-1\": "}},
      {{"--qos-level-burst=shared"}, {"--qos-level-burst: \"shared\": ", "expected <level>="}},
      {{"--qos-level-burst=shared=1.5Gi"}, {"--qos-level-burst: \"shared=1.5Gi\": "}},
      {{"--qos-level-burst=shared=1Gi,shared_cores=auto"},
       {"--qos-level-burst: \"shared_cores=auto\": ", "already set by \"shared=1Gi\""}},
      {{"--qos-level-dscp=shared=1,shared_cores=2"},
       {"--qos-level-dscp: \"shared_cores=2\": ", "already set by \"shared=1\""}},
      {{"--unclassified-qos-level=best_effort"}, {"--unclassified-qos-level", "best_effort"}},
      {{"--enforcement-resync-period=0"}, {"--enforcement-resync-period", "0"}},
      {{"--enforcement-resync-period=-5"}, {"--enforcement-resync-period"}},
      {{"--enforcement-resync-period=30x"},
       {"--enforcement-resync-period=\"30x\"", "unknown unit \"x\""}},
      {{"--enforcement-resync-period=-30s"}, {"--enforcement-resync-period", "negative"}},
      {{"--enforcement-resync-period="}, {"--enforcement-resync-period", "duration"}},
      {{"--enforcement-full-resync-period=0"}, {"--enforcement-full-resync-period", "0"}},
      {{"--enforcement-full-resync-period=5x"},
       {"--enforcement-full-resync-period=\"5x\"", "unknown unit \"x\""}},
      {{"--pod-source=kubelet", "--kubelet-registration-timeout=0"},
       {"--kubelet-registration-timeout", "0"}},
      {{"--kubelet-registration-timeout=1.5"},
       {"--kubelet-registration-timeout=\"1.5\"", "missing unit"}},
      {{"--kubelet-registration-timeout=10us"}, {"--kubelet-registration-timeout", "too short"}},
      {{"--uninstall=yes please"}, {"uninstall"}},
      {{"--keep-forwarded-priority=off-ish"}, {"keep-forwarded-priority"}},
  };
  for (const auto& c : cases) {
    INFO(c.args.front());
    const Outcome r = Refused(c.args);
    for (const auto& m : c.mentions) CHECK_THAT(r.err, Catch::Contains(m));
  }
}

TEST_CASE("ValidateDaemonConfig checks the enforcement fields") {
  DaemonConfig ok;
  CHECK(ValidateDaemonConfig(ok).ok());

  DaemonConfig c;
  c.bpf_pin_dir = "relative/pins";
  CHECK_THAT(ValidateDaemonConfig(c).message(), Catch::Contains("--bpf-pin-dir"));
  c = DaemonConfig{};
  c.enforcement_resync_period = std::chrono::milliseconds(0);
  CHECK_THAT(ValidateDaemonConfig(c).message(), Catch::Contains("--enforcement-resync-period"));
  // (--enforce-nics and the per-level items are parsed when the flags are read; a typed value
  // built in code is still held to shaping's rules.)
  c = DaemonConfig{};
  c.qos_level_shaping[static_cast<size_t>(QosLevel::kSystem)] = LevelConfig{500, 400, 0};
  CHECK_THAT(ValidateDaemonConfig(c).message(), Catch::Contains("--qos-level-shaping"));
  c = DaemonConfig{};
  c.cgroup_root = "cgroup";
  CHECK_THAT(ValidateDaemonConfig(c).message(), Catch::Contains("--cgroup-root"));
  c = DaemonConfig{};
  c.pod_source = PodSourceKind::kKubelet;
  c.kubelet_pods_url = netqos::pods::KubeletUrl{};  // typed, but not by the parser
  CHECK_THAT(ValidateDaemonConfig(c).message(), Catch::Contains("--kubelet-pods-url"));
  // The token file only matters for https.
  c = DaemonConfig{};
  c.pod_source = PodSourceKind::kKubelet;
  c.kubelet_token_file = "";
  CHECK_FALSE(ValidateDaemonConfig(c).ok());
  c.kubelet_pods_url = *netqos::pods::ParseKubeletUrl("http://127.0.0.1:10255/pods");
  CHECK(ValidateDaemonConfig(c).ok());
  // A metrics address built in code is held to the flag's ports.
  c = DaemonConfig{};
  c.metrics_bind_address = netqos::metrics::BindAddress{"127.0.0.1", 65536};
  CHECK_THAT(ValidateDaemonConfig(c).message(),
             Catch::Contains("--metrics-bind-address") && Catch::Contains("65536"));
  c.metrics_bind_address->port = 65535;
  CHECK(ValidateDaemonConfig(c).ok());
}

TEST_CASE("print-config shows the enforcement flags with their effective values") {
  const std::string defaults = PrintConfig({kTopo});
  for (const char* line :
       {"enforcement=\"bpf\"", "cgroup-root=\"\"", "cgroup-type=\"cgroupfs\"",
        "cgroup-driver=\"cgroupfs\"", "pod-source=\"cri\"", "cri-socket=\"auto\"",
        "kubelet-pods-url=\"https://127.0.0.1:10250/pods\"",
        "kubelet-token-file=\"/var/run/secrets/kubernetes.io/serviceaccount/token\"",
        "kubelet-insecure-skip-tls-verify=false", "kubelet-ca-file=\"\"",
        "bpf-pin-dir=\"/sys/fs/bpf/netqos\"", "enforce-nics=[]", "replace-root-qdisc=false",
        "qos-level-shaping=[]", "unclassified-qos-level=\"shared_cores\"",
        "enforcement-resync-period=\"30s\"", "keep-forwarded-priority=false",
        // A default-true Katalyst flag prints as true (CLI11 does not capture flag defaults).
        "enable-network-resource-plugin-nic-allocation-reactor=true"}) {
    INFO(line);
    CHECK_THAT(defaults, Catch::Contains(std::string("\n") + line + "\n"));
  }

  const std::string set =
      PrintConfig({kTopo, "--cgroup-driver=systemd", "--enforce-nics=eth0,ns/eth1",
                   "--keep-forwarded-priority=true", "--enforcement=none"});
  for (const char* line : {"cgroup-type=\"systemd\"", "cgroup-driver=\"systemd\"",
                           "enforce-nics=[\"eth0\", \"ns/eth1\"]", "keep-forwarded-priority=true",
                           "enforcement=\"none\""}) {
    INFO(line);
    CHECK_THAT(set, Catch::Contains(line));
  }
}

TEST_CASE("per-level DSCP and burst flags are parsed once, when the flags are read") {
  auto none = Parse({kTopo});
  REQUIRE(none.config);
  for (const auto& d : none.config->qos_level_dscp) CHECK_FALSE(d.has_value());
  for (uint32_t b : none.config->qos_level_burst) CHECK(b == 0);

  const std::vector<std::string> args = {kTopo, "--qos-level-dscp=system_cores=46,dedicated=AF41",
                                         "--qos-level-burst", "shared=1M,reclaimed=auto",
                                         "--qos-level-burst=dedicated=64Ki"};
  auto set = Parse(args);
  REQUIRE(set.config);
  const auto& dscp = set.config->qos_level_dscp;
  CHECK(dscp[static_cast<size_t>(QosLevel::kSystem)] == std::optional<uint8_t>(46));
  CHECK(dscp[static_cast<size_t>(QosLevel::kDedicated)] == std::optional<uint8_t>(34));
  CHECK_FALSE(dscp[static_cast<size_t>(QosLevel::kShared)].has_value());
  const auto& burst = set.config->qos_level_burst;
  CHECK(burst[static_cast<size_t>(QosLevel::kDedicated)] == 65536);
  CHECK(burst[static_cast<size_t>(QosLevel::kShared)] == 1000000);
  CHECK(burst[static_cast<size_t>(QosLevel::kReclaimed)] == 0);

  // --print-config shows the items as given, not the parsed values.
  const std::string text = PrintConfig(args);
  CHECK_THAT(text, Catch::Contains("\nqos-level-dscp=[\"system_cores=46\", \"dedicated=AF41\"]\n"));
  CHECK_THAT(text,
             Catch::Contains(
                 "\nqos-level-burst=[\"shared=1M\", \"reclaimed=auto\", \"dedicated=64Ki\"]\n"));
  CHECK_THAT(PrintConfig({kTopo}),
             Catch::Contains("\nqos-level-dscp=[]\n") && Catch::Contains("\nqos-level-burst=[]\n"));
}

TEST_CASE(
    "the kubelet pod list URL and the metrics address are parsed once, when the flags are read") {
  // The typed default is what the flag's default text parses to.
  auto parsed_default = netqos::pods::ParseKubeletUrl(netqos::app::kDefaultKubeletPodsUrl);
  REQUIRE(parsed_default.ok());
  CHECK(DaemonConfig{}.kubelet_pods_url == *parsed_default);
  auto kubelet_default = Parse({kTopo, "--pod-source=kubelet"});
  REQUIRE(kubelet_default.config);
  CHECK(kubelet_default.config->kubelet_pods_url == *parsed_default);
  CHECK_FALSE(kubelet_default.config->metrics_bind_address.has_value());

  const std::vector<std::string> args = {kTopo, "--pod-source=kubelet",
                                         "--kubelet-pods-url=https://[fd00::1]:10250/pods",
                                         "--metrics-bind-address=[::1]:9465"};
  auto set = Parse(args);
  REQUIRE(set.config);
  const auto& url = set.config->kubelet_pods_url;
  CHECK(url.scheme == "https");
  CHECK(url.host == "fd00::1");
  CHECK(url.port == 10250);
  CHECK(url.path == "/pods");
  CHECK(url.text == "https://[fd00::1]:10250/pods");
  CHECK(set.config->metrics_bind_address == netqos::metrics::BindAddress{"::1", 9465});

  auto file = Parse({kTopo, "--pod-source=kubelet", "--kubelet-pods-url=file:///run/pods.json",
                     "--metrics-bind-address=:0"});
  REQUIRE(file.config);
  CHECK(file.config->kubelet_pods_url.scheme == "file");
  CHECK(file.config->kubelet_pods_url.path == "/run/pods.json");
  CHECK(file.config->metrics_bind_address == netqos::metrics::BindAddress{"0.0.0.0", 0});
  // An empty address is no listener, as before.
  auto off = Parse({kTopo, "--metrics-bind-address="});
  REQUIRE(off.config);
  CHECK_FALSE(off.config->metrics_bind_address.has_value());

  // --print-config shows both as given, not as parsed (no default port added, no 0.0.0.0).
  const std::string text =
      PrintConfig({kTopo, "--pod-source=kubelet", "--kubelet-pods-url=https://node-1",
                   "--metrics-bind-address=:9465"});
  CHECK_THAT(text, Catch::Contains("\nkubelet-pods-url=\"https://node-1\"\n") &&
                       Catch::Contains("\nmetrics-bind-address=\":9465\"\n"));
  CHECK_THAT(PrintConfig({kTopo}), Catch::Contains("\nmetrics-bind-address=\"\"\n"));

  // A bad value: exit 2, and the whole message names the flag and the value.
  struct Bad {
    std::vector<std::string> args;
    std::string message;
  };
  for (const auto& b : std::vector<Bad>{
           {{"--pod-source=kubelet", "--kubelet-pods-url=ftp://h/pods"},
            "netqosd: --kubelet-pods-url: kubelet URL ftp://h/pods: scheme must be http, https or "
            "file\n"},
           {{"--pod-source=kubelet", "--kubelet-pods-url=http://h:70000/"},
            "netqosd: --kubelet-pods-url: kubelet URL http://h:70000/: bad port\n"},
           {{"--metrics-bind-address=127.0.0.1"},
            "netqosd: --metrics-bind-address \"127.0.0.1\": no port (expected HOST:PORT, "
            "[IPV6]:PORT or :PORT, e.g. 127.0.0.1:9465)\n"},
           {{"--metrics-bind-address=::1:9465"},
            "netqosd: --metrics-bind-address \"::1:9465\": an IPv6 address needs brackets "
            "(expected HOST:PORT, [IPV6]:PORT or :PORT, e.g. 127.0.0.1:9465)\n"}}) {
    INFO(b.args.back());
    CHECK(Refused(b.args).err == b.message);
  }
}

TEST_CASE(
    "shaping items, --dscp-default, --enforce-nics, --cri-socket are parsed once, when read") {
  struct Case {
    std::vector<std::string> args;
    DscpDefault dscp_default;
  };
  for (const auto& c : std::vector<Case>{
           {{}, {}},
           {{"--dscp-default=auto"}, {}},
           {{"--dscp-default=keep"}, {DscpDefault::Kind::kKeep, 0}},
           {{"--dscp-default=CS1"}, {DscpDefault::Kind::kDscp, 8}},
           {{"--dscp-default", "af41"}, {DscpDefault::Kind::kDscp, 34}},
           {{"--dscp-default=0"}, {DscpDefault::Kind::kDscp, 0}},
           {{"--dscp-default=63"}, {DscpDefault::Kind::kDscp, 63}},
       }) {
    std::vector<std::string> args = c.args;
    args.insert(args.begin(), kTopo);
    INFO(args.back());
    auto r = Parse(args);
    REQUIRE(r.config);
    CHECK(r.config->dscp_default == c.dscp_default);
  }

  const std::vector<std::string> args = {kTopo,
                                         "--qos-level-shaping=dedicated_cores=300:900:4",
                                         "--qos-level-shaping",
                                         "reclaimed=0:500:7",
                                         "--enforce-nics=ns1/eth1,eth0",
                                         "--dscp-default=keep"};
  auto set = Parse(args);
  REQUIRE(set.config);
  const auto& shaping = set.config->qos_level_shaping;
  CHECK(shaping[static_cast<size_t>(QosLevel::kDedicated)] == LevelConfig{300, 900, 4});
  CHECK(shaping[static_cast<size_t>(QosLevel::kReclaimed)] == LevelConfig{0, 500, 7});
  CHECK_FALSE(shaping[static_cast<size_t>(QosLevel::kSystem)].has_value());
  CHECK(set.config->enforce_nics.nics == std::vector<NicId>{{"ns1", "eth1"}, {"", "eth0"}});
  CHECK(set.config->enforce_nics.Items() == std::vector<std::string>{"ns1/eth1", "eth0"});

  // --cri-socket: read with the CRI source only (the kubelet's never looks at it).
  auto cri = Parse({kTopo, "--cri-socket=/run/x.sock"});
  REQUIRE(cri.config);
  CHECK(cri.config->cri_socket.endpoint == "unix:///run/x.sock");
  CHECK_THAT(PrintConfig({kTopo, "--cri-socket=/run/x.sock"}),
             Catch::Contains("\ncri-socket=\"/run/x.sock\"\n"));
  auto kubelet = Parse({kTopo, "--pod-source=kubelet", "--cri-socket=tcp://x"});
  REQUIRE(kubelet.config);
  CHECK(kubelet.config->cri_socket.Auto());

  // --print-config shows the values as given.
  const std::string text = PrintConfig(args);
  CHECK_THAT(text, Catch::Contains("\nqos-level-shaping=[\"dedicated_cores=300:900:4\", "
                                   "\"reclaimed=0:500:7\"]\n"));
  CHECK_THAT(text, Catch::Contains("\nenforce-nics=[\"ns1/eth1\", \"eth0\"]\n"));
  CHECK_THAT(text, Catch::Contains("\ndscp-default=\"keep\"\n"));
  const std::string defaults = PrintConfig({kTopo});
  CHECK_THAT(defaults, Catch::Contains("\ndscp-default=\"auto\"\n"));
  CHECK_THAT(defaults, Catch::Contains("\nnetwork-resource-plugin-nic-health-checkers=[\"*\"]\n"));
}

TEST_CASE("pod annotation kept keys: the flag adds to Katalyst HEAD's two defaults") {
  const std::vector<std::string> defaults = {"pod.kubernetes.io/pod-aggregated-requests",
                                             "pod.kubernetes.io/inplace-update-resizing"};
  auto none = Parse({kTopo});
  REQUIRE(none.config);
  CHECK(none.config->policy.qos.annotation_kept_keys == defaults);
  auto some = Parse({kTopo, "--pod-annotation-kept-keys=a,b", "--pod-annotation-kept-keys", "c"});
  REQUIRE(some.config);
  std::vector<std::string> want = defaults;
  want.insert(want.end(), {"a", "b", "c"});
  CHECK(some.config->policy.qos.annotation_kept_keys == want);
  auto labels = Parse({kTopo, "--pod-label-kept-keys=app"});
  REQUIRE(labels.config);
  CHECK(labels.config->policy.qos.label_kept_keys == std::vector<std::string>{"app"});
}

TEST_CASE("low-priority group flags: taken, and a floor over 100 percent refused") {
  auto off = Parse({kTopo});
  REQUIRE(off.config);
  CHECK_FALSE(off.config->low_priority_groups);
  CHECK(off.config->low_priority_group_floor_percent == 5);
  auto on = Parse({kTopo, "--low-priority-groups", "--low-priority-group-floor-percent=7"});
  REQUIRE(on.config);
  CHECK(on.config->low_priority_groups);
  CHECK(on.config->low_priority_group_floor_percent == 7);
  auto bad = Refused({"--low-priority-groups", "--low-priority-group-floor-percent=150"});
  CHECK_THAT(bad.err, Catch::Contains("--low-priority-group-floor-percent must be 0..100"));
}

TEST_CASE("duration flags take Go durations, and plain seconds as before") {
  auto go =
      Parse({kTopo, "--enforcement-resync-period=1m30s", "--kubelet-registration-timeout", "1.5m"});
  REQUIRE(go.config);
  CHECK(go.config->enforcement_resync_period == std::chrono::seconds(90));
  CHECK(go.config->kubelet_registration_timeout == std::chrono::seconds(90));
  auto plain = Parse({kTopo, "--enforcement-resync-period=45", "--kubelet-registration-timeout=2"});
  REQUIRE(plain.config);
  CHECK(plain.config->enforcement_resync_period == std::chrono::seconds(45));
  CHECK(plain.config->kubelet_registration_timeout == std::chrono::seconds(2));
  auto fine = Parse({kTopo, "--enforcement-resync-period=2500ms"});
  REQUIRE(fine.config);
  CHECK(fine.config->enforcement_resync_period == std::chrono::milliseconds(2500));
  // --print-config shows the resolved value in Go's form, the defaults too.
  CHECK_THAT(PrintConfig({kTopo, "--enforcement-resync-period=1m30s"}),
             Catch::Contains("enforcement-resync-period=\"1m30s\"") &&
                 Catch::Contains("kubelet-registration-timeout=\"1m0s\""));
}

TEST_CASE("a flag given twice takes its last value, as in Go, and lists still collect") {
  // No --topology-file here: --nic-speed-override applies to kernel discovery only.
  auto r = Parse({"--network-resource-plugin-reserved-bandwidth=1000",
                  "--network-resource-plugin-reserved-bandwidth=2000", "--nic-selection=first",
                  "--nic-selection", "last", "--enforcement-resync-period=10s",
                  "--enforcement-resync-period=20", "--qrm-state-dir=/a", "--qrm-state-dir=/b",
                  "--skip-network-state-corruption=true", "--skip-network-state-corruption=false",
                  "--qrm-socket-dirs=/s1", "--qrm-socket-dirs=/s2,/s3", "--nic-speed-override=a=1",
                  "--nic-speed-override=b=2", "--metrics-bind-address=127.0.0.1:1",
                  "--metrics-bind-address=127.0.0.1:2"});
  REQUIRE(r.config);
  const DaemonConfig& c = *r.config;
  CHECK(c.policy.reserved_bandwidth == 2000);
  CHECK(c.nic_selection == NicSelection::kLast);
  CHECK(c.enforcement_resync_period == std::chrono::seconds(20));
  CHECK(c.qrm_state_dir == "/b");
  CHECK_FALSE(c.skip_network_state_corruption);
  CHECK(c.metrics_bind_address == netqos::metrics::BindAddress{"127.0.0.1", 2});
  CHECK(c.qrm_socket_dirs == std::vector<std::string>{"/s1", "/s2", "/s3"});
  CHECK(c.nic_filter.speed_override == std::map<std::string, int64_t>{{"a", 1}, {"b", 2}});
  // The last value is the one checked: an earlier bad one is overridden, a later one is not.
  CHECK(Parse({kTopo, "--nic-selection=best", "--nic-selection=first"}).config);
  auto bad = Refused({"--nic-selection=first", "--nic-selection=best"});
  CHECK_THAT(bad.err, Catch::Contains("--nic-selection") && Catch::Contains("best"));
  CHECK_THAT(PrintConfig({kTopo, "--qrm-state-dir=/a", "--qrm-state-dir=/b"}),
             Catch::Contains("qrm-state-dir=\"/b\""));
}

// Without --topology-file, which these flags cannot be combined with: kernel discovery reads them.
TEST_CASE("NIC filter flags are parsed once, when read, and --print-config shows them as given") {
  const std::vector<std::string> args = {"--nic-allow=veth*,eth1", "--nic-deny", "eth1",
                                         "--nic-speed-override=veth0=1000",
                                         "--nic-speed-override= veth1 = 25000"};
  auto r = Parse(args);
  REQUIRE(r.config);
  const netqos::topology::NicSelection& filter = r.config->nic_filter;
  CHECK(filter.allow == std::vector<std::string>{"veth*", "eth1"});
  CHECK(filter.deny == std::vector<std::string>{"eth1"});
  CHECK(filter.speed_override == std::map<std::string, int64_t>{{"veth0", 1000}, {"veth1", 25000}});
  CHECK_THAT(PrintConfig(args),
             Catch::Contains("\nnic-allow=[\"veth*\", \"eth1\"]\n") &&
                 Catch::Contains("\nnic-deny=[\"eth1\"]\n") &&
                 Catch::Contains("\nnic-speed-override=[\"veth0=1000\", \" veth1 = 25000\"]\n"));
  auto none = Parse({});
  REQUIRE(none.config);
  CHECK(none.config->nic_filter.allow.empty());
  CHECK(none.config->nic_filter.deny.empty());
  CHECK(none.config->nic_filter.speed_override.empty());
}

TEST_CASE("NIC filter flags: a bad value is a usage error naming the flag and the value") {
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--nic-allow=veth*,eth[0"},
            "netqosd: --nic-allow: glob 'eth[0' has an unbalanced '['\n"},
           {{"--nic-deny", "br[x"}, "netqosd: --nic-deny: glob 'br[x' has an unbalanced '['\n"},
           {{"--nic-speed-override=eth0=fast"},
            "netqosd: --nic-speed-override: 'eth0=fast': speed 'fast' is not an integer number of "
            "Mbps\n"},
           {{"--nic-speed-override=eth0"},
            "netqosd: --nic-speed-override: 'eth0': expected NAME=MBPS\n"},
           {{"--nic-speed-override=eth0=0"},
            "netqosd: --nic-speed-override: 'eth0=0': speed must be in (0, 10000000] Mbps\n"},
       }) {
    INFO(args.back());
    CHECK(RefusedAsGiven(args).err == message);
  }
}

TEST_CASE("help ends with the exit codes") {
  CHECK_THAT(StdoutOf({"--help"}),
             Catch::Contains("Exit codes: 0 success") && Catch::Contains("2 a usage error"));
}

TEST_CASE("help lists the flags in groups, Katalyst's apart, without netqos: prefixes") {
  const std::string help = StdoutOf({"--help"});
  CHECK_THAT(help, !Catch::Contains("netqos:"));
  // Each flag under its group: between the group's heading and the next one.
  const std::vector<std::pair<std::string, std::string>> in_group = {
      {"Katalyst network plugin", "--network-resource-plugin-egress-capacity-rate"},
      {"Katalyst QRM state and socket", "--qrm-state-dir"},
      {"Katalyst machine info", "--cgroup-type"},
      {"Katalyst QoS annotations", "--pod-annotation-qos-enhancements"},
      {"Checkpoint", "--katalyst-checkpoint-layout"},
      {"Pods and cgroups", "--cri-socket"},
      {"Enforcement", "--shaping-mode"},
      {"Tenant policy", "--tenant-policy-file"},
      {"Metrics and logs", "--log-level"},
      {"Modes and the config file (command line only)", "--uninstall"},
      {"Modes and the config file (command line only)", "-h,--help"},
  };
  for (const auto& [group, flag] : in_group) {
    INFO(group << " " << flag);
    const size_t heading = help.find("\n" + group + ":\n");
    REQUIRE(heading != std::string::npos);
    const size_t next = help.find("\n\n", heading + 1);  // the group's end
    const size_t at = help.find(" " + flag + " ", heading);
    const size_t at_eq = help.find(" " + flag + "=", heading);
    const size_t found = std::min(at, at_eq);
    CHECK(found != std::string::npos);
    CHECK((next == std::string::npos || found < next));
  }
  // The exit codes stay last.
  CHECK(help.rfind("Exit codes:") > help.find("  --version "));
}

TEST_CASE("checkpoint bounds on pod metadata: taken, each out-of-range value refused by name") {
  auto defaults = Parse({kTopo});
  REQUIRE(defaults.config);
  CHECK(defaults.config->policy.max_pod_metadata_bytes == netqos::core::kDefaultPodMetadataBytes);
  CHECK(defaults.config->policy.max_state_bytes == netqos::core::kMaxStateBytes);
  auto set = Parse(
      {kTopo, "--checkpoint-pod-metadata-bytes=4096", "--checkpoint-max-state-bytes=2097152"});
  REQUIRE(set.config);
  CHECK(set.config->policy.max_pod_metadata_bytes == 4096);
  CHECK(set.config->policy.max_state_bytes == 2097152);

  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--checkpoint-pod-metadata-bytes=1023"},
       "--checkpoint-pod-metadata-bytes must be from 1024 to 1048576, got 1023"},
      {{"--checkpoint-pod-metadata-bytes=1048577"}, "got 1048577"},
      {{"--checkpoint-max-state-bytes=1048575"},
       "--checkpoint-max-state-bytes must be from 1048576 to 100663296, got 1048575"},
      {{"--checkpoint-max-state-bytes=100663297"}, "got 100663297"},
      // 8 entries of 2 x (1 MiB + 512) do not fit in 16 MiB.
      {{"--checkpoint-pod-metadata-bytes=1048576", "--checkpoint-max-state-bytes=16777216"},
       "--checkpoint-max-state-bytes (16777216) leaves room for fewer than 8 entries at "
       "--checkpoint-pod-metadata-bytes (1048576)"},
  };
  for (const auto& [flags, message] : bad) {
    INFO(flags.back());
    CHECK_THAT(Refused(flags).err, Catch::Contains(message));
  }
}
