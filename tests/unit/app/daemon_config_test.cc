// Flag parsing: Katalyst's names and defaults, Go-style values, and clear rejections.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "app/daemon_config.h"

using netqos::app::DaemonConfig;
using netqos::app::ParseDaemonFlags;

namespace {

netqos::app::ParsedFlags Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "netqosd");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return ParseDaemonFlags(static_cast<int>(argv.size()), argv.data());
}

const std::string kTopo = "--topology-file=/dev/null";

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
  CHECK(c.enforcement == "none");
  CHECK(c.nic_selection == "random");
}

TEST_CASE("Katalyst DaemonSet arguments are accepted in Go flag syntax") {
  auto r = Parse({kTopo, "--qrm-socket-dirs=/a,/b", "--qrm-socket-dirs", "/c",
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
  CHECK(c.policy.qos.enhancement_aliases.at("katalyst.kubewharf.io/network_enhancement") ==
        "x/ne");
  CHECK(c.policy.qos.enhancement_defaults.at("namespace_type") == "host_ns_preferred");
  CHECK(c.cgroup_type == "systemd");
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
    CHECK(r.exit_code != 0);
  }
}

TEST_CASE("help and version exit 0 without a config") {
  for (const char* f : {"--help", "--version"}) {
    auto r = Parse({f});
    CHECK_FALSE(r.config);
    CHECK(r.exit_code == 0);
  }
}
