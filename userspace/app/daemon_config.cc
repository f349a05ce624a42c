#include "app/daemon_config.h"

#include <CLI/CLI.hpp>

#include <cmath>
#include <iostream>

#include "core/constants.h"

namespace netqos::app {
namespace {

// "k=v" items (Katalyst's selector and map flags) into a map; an item without '=' is an error.
Status ParsePairs(const std::vector<std::string>& items, const std::string& flag,
                  core::StringMap* out) {
  for (const auto& item : items) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      return InvalidArgument("--" + flag + ": expected key=value, got \"" + item + "\"");
    (*out)[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return Status::Ok();
}

struct RawFlags {
  std::vector<std::string> selectors[4];
  std::vector<std::string> enhancements;
  std::vector<std::string> enhancement_defaults;
};

const char* const kLevels[4] = {core::kReclaimedCores, core::kSharedCores, core::kDedicatedCores,
                                core::kSystemCores};
const char* const kLevelFlagNames[4] = {"reclaimed", "shared", "dedicated", "system"};

}  // namespace

ParsedFlags ParseDaemonFlags(int argc, const char* const* argv) {
  DaemonConfig c;
  RawFlags raw;
  CLI::App app{
      "netqosd: Kubernetes network QoS daemon. Serves the kubelet's QoS Resource Manager as\n"
      "Katalyst's network plugin (resource resource.katalyst.kubewharf.io/net_bandwidth)."};
  app.set_version_flag("--version", std::string("netqosd 0.1.0"));
  app.option_defaults()->always_capture_default();
  auto& p = c.policy;

  // Katalyst: network plugin (spec section 10.1).
  app.add_option("--network-resource-plugin-policy", c.policy_name,
                 "Policy of the network plugin (only \"static\")");
  uint32_t* class_ids[4] = {&p.qos_class_ids[core::kReclaimedCores],
                            &p.qos_class_ids[core::kSharedCores],
                            &p.qos_class_ids[core::kDedicatedCores],
                            &p.qos_class_ids[core::kSystemCores]};
  for (int i = 0; i < 4; ++i) {
    app.add_option(std::string("--network-resource-plugin-class-id-") + kLevelFlagNames[i] +
                       "-cores",
                   *class_ids[i], std::string("Net class id of ") + kLevels[i] + " containers");
  }
  app.add_option("--network-resource-plugin-reserved-bandwidth", p.reserved_bandwidth,
                 "Mbps reserved on the first NIC (both directions)");
  app.add_option("--network-resource-plugin-egress-capacity-rate", p.egress_capacity_rate,
                 "Egress capacity = NIC speed x this rate");
  app.add_option("--network-resource-plugin-ingress-capacity-rate", p.ingress_capacity_rate,
                 "Ingress capacity = NIC speed x this rate");
  app.add_flag("--skip-network-state-corruption", c.skip_network_state_corruption,
               "Load a checkpoint whose checksum does not match (never a malformed one)");
  app.add_option("--network-resource-plugin-net-class-annotation-key",
                 p.pod_net_class_annotation_key, "Pod annotation overriding the net class id");
  app.add_option("--network-resource-plugin-net-attributes-keys", c.net_attributes_keys,
                 "Pod annotations copied into a container's net class attributes")
      ->delimiter(',');
  auto& k = p.annotation_keys;
  app.add_option("--network-resource-plugin-ipv4-allocation-anno-key", k.ipv4,
                 "Allocation annotation: NIC IPv4 addresses");
  app.add_option("--network-resource-plugin-ipv6-allocation-anno-key", k.ipv6,
                 "Allocation annotation: NIC IPv6 addresses");
  app.add_option("--network-resource-plugin-ns-path-allocation-anno-key", k.netns_path,
                 "Allocation annotation: NIC network namespace path");
  app.add_option("--network-resource-plugin-nic-name-allocation-anno-key", k.nic_name,
                 "Allocation annotation: NIC name");
  app.add_option("--network-resource-plugin-class-id-allocation-anno-key", k.net_class_id,
                 "Allocation annotation: net class id");
  app.add_option("--network-resource-plugin-bandwidth-allocation-anno-key", k.bandwidth,
                 "Allocation annotation: allocated Mbps");
  app.add_flag("--enable-network-resource-plugin-nic-allocation-reactor",
               c.enable_nic_allocation_reactor,
               "Accepted for compatibility (netqos does not patch pods)");
  app.add_option("--network-resource-plugin-nic-health-checkers", c.nic_health_checkers,
                 "NIC health checkers (\"ip\", \"-ip\", \"*\")")
      ->delimiter(',');

  // Katalyst: generic QRM (10.2).
  app.add_option("--qrm-socket-dirs", c.qrm_socket_dirs,
                 "Directories the plugin socket is served in (comma-separated)")
      ->delimiter(',');
  app.add_option("--qrm-state-dir", c.qrm_state_dir, "Checkpoint directory");
  app.add_option("--qrm-state-dir-in-memory", c.qrm_state_dir_in_memory,
                 "Checkpoint directory when --qrm-enable-in-memory-state is set");
  app.add_flag("--qrm-enable-in-memory-state", c.qrm_enable_in_memory_state,
               "Keep the checkpoint in --qrm-state-dir-in-memory");
  app.add_option("--pod-annotation-kept-keys", p.qos.annotation_kept_keys,
                 "Pod annotations passed through to the state and responses")
      ->delimiter(',');
  app.add_option("--pod-label-kept-keys", p.qos.label_kept_keys,
                 "Pod labels passed through to the state and responses")
      ->delimiter(',');
  std::string unused_str;
  std::vector<std::string> unused_list;
  bool unused_bool = false;
  app.add_option("--qrm-extra-state-file", unused_str, "Accepted for compatibility; unused");
  app.add_option("--qrm-pod-debug-anno-keys", unused_list, "Accepted for compatibility; unused")
      ->delimiter(',');
  app.add_flag("--use-kubelet-reserved-config", unused_bool, "Accepted for compatibility; unused");

  // Katalyst: machine info (10.3).
  app.add_flag("--machine-net-multi-ns", c.machine_net_multi_ns,
               "Also discover NICs in the namespaces under --machine-net-ns-dir");
  app.add_option("--machine-net-ns-dir", c.machine_net_ns_dir,
                 "Directory of named network namespaces (default /var/run/netns)");
  app.add_option("--machine-net-allocatable-ns", c.machine_net_allocatable_ns,
                 "Namespaces whose NICs are allocatable (name, -name, *)")
      ->delimiter(',');
  app.add_option("--cgroup-type", c.cgroup_type, "cgroup driver: cgroupfs or systemd");
  app.add_option("--addition-cgroup-paths", c.addition_cgroup_paths,
                 "Extra cgroup roots to search for containers")
      ->delimiter(',');

  // Katalyst: QoS (10.4).
  for (int i = 0; i < 4; ++i) {
    app.add_option(std::string("--pod-annotation-qos-level-") + kLevelFlagNames[i] + "-selector",
                   raw.selectors[i],
                   std::string("Extra k=v annotation selectors for ") + kLevels[i])
        ->delimiter(',');
  }
  app.add_option("--pod-annotation-qos-enhancements", raw.enhancements,
                 "Expanded enhancement keys, default=expanded")
      ->delimiter(',');
  app.add_option("--qos-enhancement-default-values", raw.enhancement_defaults,
                 "Default flattened enhancement values, k=v")
      ->delimiter(',');

  // netqos.
  app.add_option("--topology-file", c.topology_file,
                 "netqos: read NUMA nodes and NICs from this JSON file instead of the kernel");
  app.add_option("--nic-allow", c.nic_allow,
                 "netqos: also count links whose name matches these shell globs as NICs "
                 "(default: PCI devices and bonds only), e.g. 'veth*,eth1'")
      ->delimiter(',');
  app.add_option("--nic-deny", c.nic_deny,
                 "netqos: never count links whose name matches these shell globs (wins over "
                 "--nic-allow)")
      ->delimiter(',');
  app.add_option("--nic-speed-override", c.nic_speed_overrides,
                 "netqos: NAME=MBPS speed for a link whose speed the kernel does not know "
                 "(repeatable)");
  app.add_flag("--print-topology", c.print_topology,
               "netqos: discover the topology once with these flags, print it and exit");
  app.add_flag("--json", c.json, "netqos: with --print-topology, print JSON");
  app.add_option("--enforcement", c.enforcement,
                 "netqos: enforcement mode: none (allocation only) or bpf");
  app.add_option("--kubelet-register-socket", c.kubelet_register_socket,
                 "netqos: also call Registration.Register on this legacy kubelet socket");
  app.add_option("--nic-selection", c.nic_selection,
                 "netqos: how to pick among equally good NICs: random, first or last");
  app.add_option("--log-level", c.log_level,
                 "netqos: trace, debug, info, warn, error or critical");
  app.add_flag("--print-config", c.print_config, "netqos: print the effective flags and exit");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    ParsedFlags out;
    out.exit_code = app.exit(e);  // prints help/version to stdout, errors to stderr
    if (out.exit_code != 0) std::cerr << "netqosd: bad command line (see --help)\n";
    return out;
  }

  Status st = Status::Ok();
  for (int i = 0; i < 4 && st.ok(); ++i) {
    core::StringMap sel;
    st = ParsePairs(raw.selectors[i],
                    std::string("pod-annotation-qos-level-") + kLevelFlagNames[i] + "-selector",
                    &sel);
    if (!sel.empty()) p.qos.extra_selectors[kLevels[i]] = sel;
  }
  if (st.ok()) st = ParsePairs(raw.enhancements, "pod-annotation-qos-enhancements",
                              &p.qos.enhancement_aliases);
  if (st.ok()) st = ParsePairs(raw.enhancement_defaults, "qos-enhancement-default-values",
                              &p.qos.enhancement_defaults);
  if (st.ok()) st = ValidateDaemonConfig(c);
  if (!st.ok()) {
    std::cerr << "netqosd: " << st.message() << "\n";
    return ParsedFlags{std::nullopt, 2};
  }
  if (c.print_config) {
    std::cout << app.config_to_str(true, false);
    return ParsedFlags{std::nullopt, 0};
  }
  return ParsedFlags{std::move(c), 0};
}

Status ValidateDaemonConfig(const DaemonConfig& c) {
  if (c.policy_name != core::kPolicyName)
    return InvalidArgument("invalid policy name " + c.policy_name +
                           " for network resource plugin (--network-resource-plugin-policy; only "
                           "\"static\" exists)");
  auto rate_ok = [](float r) { return std::isfinite(r) && r > 0.0f; };
  if (!rate_ok(c.policy.egress_capacity_rate))
    return InvalidArgument("--network-resource-plugin-egress-capacity-rate must be a finite "
                           "number > 0, got " + std::to_string(c.policy.egress_capacity_rate));
  if (!rate_ok(c.policy.ingress_capacity_rate))
    return InvalidArgument("--network-resource-plugin-ingress-capacity-rate must be a finite "
                           "number > 0, got " + std::to_string(c.policy.ingress_capacity_rate));
  if (c.enforcement != "none" && c.enforcement != "bpf")
    return InvalidArgument("--enforcement must be none or bpf, got \"" + c.enforcement + "\"");
  if (c.enforcement == "bpf")
    return InvalidArgument("--enforcement=bpf is not available in this build yet; use "
                           "--enforcement=none (allocation only)");
  if (c.nic_selection != "random" && c.nic_selection != "first" && c.nic_selection != "last")
    return InvalidArgument("--nic-selection must be random, first or last, got \"" +
                           c.nic_selection + "\"");
  if (c.cgroup_type != "cgroupfs" && c.cgroup_type != "systemd")
    return InvalidArgument("--cgroup-type must be cgroupfs or systemd, got \"" + c.cgroup_type +
                           "\"");
  static const char* const kLogLevels[] = {"trace", "debug", "info", "warn", "error", "critical",
                                           "off"};
  bool level_ok = false;
  for (const char* l : kLogLevels) level_ok = level_ok || c.log_level == l;
  if (!level_ok)
    return InvalidArgument("--log-level must be one of trace, debug, info, warn, error, "
                           "critical, off; got \"" + c.log_level + "\"");
  if (c.qrm_socket_dirs.empty())
    return InvalidArgument("--qrm-socket-dirs must name at least one directory");
  for (const auto& d : c.qrm_socket_dirs)
    if (d.empty()) return InvalidArgument("--qrm-socket-dirs contains an empty directory name");
  if (c.EffectiveStateDir().empty())
    return InvalidArgument("--qrm-state-dir must not be empty");
  if (!c.topology_file.empty() &&
      (!c.nic_allow.empty() || !c.nic_deny.empty() || !c.nic_speed_overrides.empty()))
    return InvalidArgument("--nic-allow, --nic-deny and --nic-speed-override apply to kernel "
                           "discovery; they cannot be combined with --topology-file");
  if (c.json && !c.print_topology)
    return InvalidArgument("--json only applies to --print-topology");
  return Status::Ok();
}

}  // namespace netqos::app
