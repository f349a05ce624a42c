#include "app/daemon_config.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <deque>
#include <functional>
#include <iostream>
#include <utility>

#include "app/duration_flag.h"
#include "app/enforce_nics.h"
#include "app/exit_codes.h"
#include "app/flag_choices.h"
#include "app/nic_health_checkers.h"
#include "app/shaping_flags.h"
#include "cgroup/kubelet_pods_client.h"
#include "common/version.h"
#include "core/constants.h"
#include "cri/cri_endpoint.h"
#include "metrics/http_server.h"

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
  std::vector<std::string> annotation_kept_keys;
};

const char* const kLevels[4] = {core::kReclaimedCores, core::kSharedCores, core::kDedicatedCores,
                                core::kSystemCores};
const char* const kLevelFlagNames[4] = {"reclaimed", "shared", "dedicated", "system"};

// A boolean flag that also takes "=true"/"=false" (Go style). CLI11 does not capture a flag's
// default, so it is set here: --print-config then shows the real default, not "false".
CLI::Option* AddBoolFlag(CLI::App& app, const std::string& name, bool& value,
                         const std::string& description) {
  return app.add_flag(name, value, description)->default_str(value ? "true" : "false");
}

// Flags that CLI11 reads as text and netqosd parses afterwards, each into its typed target:
// --help and --print-config show what an operator writes (a spelling, "30s"), never an enum
// number or a count of milliseconds, and a bad value is reported like the other bad values
// (naming the flag and what it accepts, exit code 2). Resolve parses every text, once.
class TextFlags {
 public:
  // The first bad flag's error, in the order the flags were added.
  Status Resolve() const {
    for (const auto& resolve : resolvers_) {
      if (Status st = resolve(); !st.ok()) return st;
    }
    return Status::Ok();
  }

 protected:
  // parse(flag, text) writes the target, or says what is wrong with the text.
  CLI::Option* AddText(CLI::App& app, const std::string& flag, std::string initial,
                       std::function<Status(const std::string&, const std::string&)> parse,
                       const std::string& description) {
    std::string& text = texts_.emplace_back(std::move(initial));
    resolvers_.emplace_back([flag, &text, parse = std::move(parse)] { return parse(flag, text); });
    return app.add_option(flag, text, description);
  }

 private:
  std::deque<std::string> texts_;  // CLI11 writes into them: their addresses must stay put
  std::vector<std::function<Status()>> resolvers_;
};

// The closed-choice flags (app/flag_choices.h).
class ChoiceFlags : public TextFlags {
 public:
  template <typename E, size_t N>
  CLI::Option* Add(CLI::App& app, const std::string& flag, E& target, const Choices<E, N>& choices,
                   const std::string& description) {
    return AddText(
        app, flag, std::string(ChoiceName(target, choices)),
        [&target, &choices](const std::string& name, const std::string& text) -> Status {
          NETQOS_ASSIGN_OR_RETURN(target, ParseChoice(name, text, choices));
          return Status::Ok();
        },
        description);
  }
};

// The duration flags (app/duration_flag.h): a Go duration ("1m30s") or whole seconds.
class DurationFlags : public TextFlags {
 public:
  CLI::Option* Add(CLI::App& app, const std::string& flag, std::chrono::milliseconds& target,
                   const std::string& description) {
    return AddText(
               app, flag, DurationFlagText(target),
               [&target](const std::string& name, const std::string& text) -> Status {
                 NETQOS_ASSIGN_OR_RETURN(target, ParseDurationFlag(name, text));
                 return Status::Ok();
               },
               description)
        ->type_name("DURATION");
  }
};

// The arguments for CLI11::App::parse (reversed, without the program name). Go's flag package
// reads "--name=" as an empty value; CLI11 would take the *next* argument as the value instead
// ("--enforce-nics= --uninstall" would name a NIC "--uninstall"), so "--name=" becomes
// "--name" "".
std::vector<std::string> GoStyleArgs(int argc, const char* const* argv) {
  std::vector<std::string> args;
  for (int i = argc - 1; i >= 1; --i) {
    std::string a = argv[i];
    if (a.size() > 3 && a.rfind("--", 0) == 0 && a.back() == '=' && a.find('=') == a.size() - 1) {
      args.emplace_back();
      a.pop_back();
    }
    args.push_back(std::move(a));
  }
  return args;
}

// Comma lists split with empty items kept (so they can be rejected); an entirely empty value
// ("--flag=") adds nothing.
std::vector<std::string> SplitKeepingEmpty(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) {
    if (v.empty()) continue;
    size_t start = 0;
    for (;;) {
      const auto comma = v.find(',', start);
      out.push_back(
          v.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

// An absolute path with at least one component below "/".
bool IsAbsoluteBelowRoot(const std::string& path) {
  return path.size() > 1 && path[0] == '/' && path.find_first_not_of('/') != std::string::npos;
}

}  // namespace

ParsedFlags ParseDaemonFlags(int argc, const char* const* argv) {
  DaemonConfig c;
  RawFlags raw;
  ChoiceFlags choices;
  DurationFlags durations;
  CLI::App app{
      "netqosd: Kubernetes network QoS daemon. Serves the kubelet's QoS Resource Manager as\n"
      "Katalyst's network plugin (resource resource.katalyst.kubewharf.io/net_bandwidth)."};
  app.set_version_flag("--version", "netqosd " + VersionLine());
  app.footer(kExitCodesHelp);
  // A flag given twice takes its last value, as Go's flag package does: DaemonSets and wrappers
  // override a templated "--foo=1" by appending "--foo=2". Lists (vectors) still collect every
  // occurrence: CLI11 trims to the last value only what holds one.
  app.option_defaults()->always_capture_default()->multi_option_policy(
      CLI::MultiOptionPolicy::TakeLast);
  auto& p = c.policy;

  // Katalyst: network plugin flags (their names and defaults, docs/compatibility.md).
  choices.Add(app, "--network-resource-plugin-policy", c.policy_name, kPolicyChoices,
              "Policy of the network plugin (only \"static\")");
  uint32_t* class_ids[4] = {
      &p.qos_class_ids[core::kReclaimedCores], &p.qos_class_ids[core::kSharedCores],
      &p.qos_class_ids[core::kDedicatedCores], &p.qos_class_ids[core::kSystemCores]};
  for (int i = 0; i < 4; ++i) {
    app.add_option(
        std::string("--network-resource-plugin-class-id-") + kLevelFlagNames[i] + "-cores",
        *class_ids[i], std::string("Net class id of ") + kLevels[i] + " containers");
  }
  app.add_option("--network-resource-plugin-reserved-bandwidth", p.reserved_bandwidth,
                 "Mbps reserved on the first NIC (both directions)");
  app.add_option("--network-resource-plugin-egress-capacity-rate", p.egress_capacity_rate,
                 "Egress capacity = NIC speed x this rate");
  app.add_option("--network-resource-plugin-ingress-capacity-rate", p.ingress_capacity_rate,
                 "Ingress capacity = NIC speed x this rate");
  AddBoolFlag(app, "--skip-network-state-corruption", c.skip_network_state_corruption,
              "Load a checkpoint whose checksum does not match (never a malformed one)");
  app.add_option("--network-resource-plugin-net-class-annotation-key",
                 p.pod_net_class_annotation_key, "Pod annotation overriding the net class id");
  app.add_option("--network-resource-plugin-net-attributes-keys", c.net_attributes_keys,
                 "Accepted for compatibility, no effect: Katalyst collects these pod "
                 "annotations as net class attributes that its appliers then ignore")
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
  AddBoolFlag(app, "--enable-network-resource-plugin-nic-allocation-reactor",
              c.enable_nic_allocation_reactor,
              "Accepted for compatibility (netqos does not patch pods)");
  AddBoolFlag(app, "--network-resource-plugin-numa-node-hints", p.numa_node_hints,
              "Also offer each NIC's own NUMA node as a hint (the kubelet's single-numa-node "
              "topology policy admits only those); off: socket hints only, as Katalyst");
  app.add_option("--network-resource-plugin-nic-health-checkers", c.nic_health_checkers,
                 "NIC health checkers: ip (a NIC without an IP address takes no new "
                 "allocations); \"-ip\" turns it off, \"*\" all on, an empty list all off")
      ->delimiter(',');

  // Katalyst: generic QRM (10.2).
  app.add_option("--qrm-socket-dirs", c.qrm_socket_dirs,
                 "Directories the plugin socket is served in (comma-separated)")
      ->delimiter(',');
  app.add_option("--qrm-state-dir", c.qrm_state_dir, "Checkpoint directory");
  app.add_option("--qrm-state-dir-in-memory", c.qrm_state_dir_in_memory,
                 "Checkpoint directory when --qrm-enable-in-memory-state is set");
  AddBoolFlag(app, "--qrm-enable-in-memory-state", c.qrm_enable_in_memory_state,
              "Keep the checkpoint in --qrm-state-dir-in-memory");
  // Bound apart and appended after parsing: CLI11 would replace the defaults, Katalyst adds.
  app.add_option("--pod-annotation-kept-keys", raw.annotation_kept_keys,
                 "Pod annotations passed through to the state and responses, in addition to " +
                     std::string(core::kPodAggregatedRequestsKey) + " and " +
                     core::kInplaceUpdateResizingKey)
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
  AddBoolFlag(app, "--use-kubelet-reserved-config", unused_bool,
              "Accepted for compatibility; unused");

  // Katalyst: machine info (10.3).
  AddBoolFlag(app, "--machine-net-multi-ns", c.machine_net_multi_ns,
              "Also discover NICs in the namespaces under --machine-net-ns-dir");
  app.add_option("--machine-net-ns-dir", c.machine_net_ns_dir,
                 "Directory of named network namespaces (default /var/run/netns)");
  app.add_option("--machine-net-allocatable-ns", c.machine_net_allocatable_ns,
                 "Namespaces whose NICs are allocatable (name, -name, *)")
      ->delimiter(',');
  // --cgroup-type (Katalyst) and --cgroup-driver (netqos) are one setting; both are read into
  // their own values so a contradiction can be reported, then resolved into c.cgroup_type.
  cgroup::CgroupDriver cgroup_type_flag = c.cgroup_type;
  cgroup::CgroupDriver cgroup_driver_flag = c.cgroup_type;
  CLI::Option* cgroup_type_opt =
      choices.Add(app, "--cgroup-type", cgroup_type_flag, kCgroupDriverChoices,
                  "cgroup driver: cgroupfs or systemd (= --cgroup-driver)");
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
  AddBoolFlag(app, "--print-topology", c.print_topology,
              "netqos: discover the topology once with these flags, print it and exit");
  AddBoolFlag(app, "--json", c.json, "netqos: with --print-topology, print JSON");
  app.add_option("--kubelet-register-socket", c.kubelet_register_socket,
                 "netqos: also call Registration.Register on this legacy kubelet socket");
  durations.Add(app, "--kubelet-registration-timeout", c.kubelet_registration_timeout,
                "netqos: how long after the kubelet's GetInfo without a NotifyRegistrationStatus "
                "the registration is reported unconfirmed (a warning, netqosctl status, "
                "netqos_kubelet_registration): a Go duration (90s, 2m) or whole seconds");
  choices.Add(app, "--nic-selection", c.nic_selection, kNicSelectionChoices,
              "netqos: how to pick among equally good NICs: random, first or last");
  choices.Add(app, "--log-level", c.log_level, kLogLevelChoices,
              "netqos: trace, debug, info, warn, error, critical or off");
  AddBoolFlag(app, "--print-config", c.print_config, "netqos: print the effective flags and exit");
  choices.Add(app, "--checkpoint-mode", c.checkpoint_mode, kCheckpointModeChoices,
              "netqos: journal (one fsync'd record per Allocate/RemovePod) or full-rewrite "
              "(rewrite the whole checkpoint on every change, as Katalyst does; a benchmark "
              "baseline, see docs/benchmarks.md)");
  choices.Add(app, "--katalyst-checkpoint-layout", c.katalyst_checkpoint_layout,
              kKatalystLayoutChoices,
              "netqos: the Katalyst release the checkpoint's checksum is written for, so that "
              "it loads the file after a rollback: v0.5.3 (Katalyst v0.4.0 to v0.5.20) or "
              "head (v0.5.21 and later)");
  app.add_option("--checkpoint-snapshot-every", c.checkpoint_snapshot_every,
                 "netqos: fold the journal into a full checkpoint snapshot after this many "
                 "changes (journal mode)");

  // netqos: metrics and logs (docs/metrics.md).
  app.add_option("--metrics-bind-address", c.metrics_bind_address,
                 "netqos: serve Prometheus /metrics, /healthz and /readyz on HOST:PORT, e.g. "
                 "127.0.0.1:9465 (default: off)");
  choices.Add(app, "--log-format", c.log_format, kLogFormatChoices,
              "netqos: text (key=value) or json (one object per line: ts, level, msg and the "
              "message's key=value pairs as fields)");

  // netqos: enforcement (eBPF classification + HTB shaping on cgroup v2).
  choices.Add(app, "--enforcement", c.enforcement, kEnforcementChoices,
              "netqos: bpf (classify containers' traffic with eBPF, shape --enforce-nics) or "
              "none (allocation only)");
  app.add_option(
      "--cgroup-root", c.cgroup_root,
      "netqos: cgroup v2 mount point (default: detected from libcgroup's mount table, as "
      "`netqosctl cgroup-mount` prints it)");
  CLI::Option* cgroup_driver_opt =
      choices.Add(app, "--cgroup-driver", cgroup_driver_flag, kCgroupDriverChoices,
                  "netqos: kubelet cgroup driver: cgroupfs or systemd (= --cgroup-type)");
  choices.Add(app, "--pod-source", c.pod_source, kPodSourceChoices,
              "netqos: where the node's pods come from (for enforcement, and for the residual "
              "state cleanup, also with --enforcement=none): cri (the container runtime's "
              "socket, --cri-socket; no cluster credential) or kubelet (GET /pods, "
              "--kubelet-pods-url; needs the nodes/proxy permission)");
  app.add_option("--cri-socket", c.cri_socket,
                 "netqos: the container runtime's CRI socket for --pod-source=cri: auto "
                 "(/run/containerd/containerd.sock, else /run/crio/crio.sock), "
                 "unix:///path or /path");
  std::vector<CLI::Option*> kubelet_opts;
  kubelet_opts.push_back(
      app.add_option("--kubelet-pods-url", c.kubelet_pods_url,
                     "netqos: --pod-source=kubelet: where the pod list comes from: https://... "
                     "(bearer token from --kubelet-token-file), http://... (read-only port) or "
                     "file:///path.json"));
  kubelet_opts.push_back(app.add_option(
      "--kubelet-token-file", c.kubelet_token_file,
      "netqos: bearer token for an https --kubelet-pods-url (re-read on every request)"));
  kubelet_opts.push_back(AddBoolFlag(app, "--kubelet-insecure-skip-tls-verify",
                                     c.kubelet_insecure_skip_tls_verify,
                                     "netqos: do not verify the kubelet's serving certificate"));
  kubelet_opts.push_back(app.add_option(
      "--kubelet-ca-file", c.kubelet_ca_file,
      "netqos: PEM file of the CAs the kubelet's serving certificate must chain to "
      "for an https --kubelet-pods-url, e.g. the service account's ca.crt (re-read on "
      "every request; default: OpenSSL's, SSL_CERT_FILE or the system store)"));
  app.add_option("--bpf-pin-dir", c.bpf_pin_dir,
                 "netqos: bpffs directory for pinned maps and links (a bpffs is mounted on its "
                 "parent if there is none)");
  // Split below rather than with ->delimiter(','), which drops empty items: "eth0,,eth1" is
  // rejected, not read as "eth0,eth1".
  app.add_option(
      "--enforce-nics", c.enforce_nics,
      "netqos: NICs to shape (see --shaping-mode), [netns/]name,... or all (default: none; "
      "traffic is classified and counted, no qdisc is touched)");
  AddBoolFlag(app, "--replace-root-qdisc", c.replace_root_qdisc,
              "netqos: replace a root qdisc netqos did not create on an --enforce-nics NIC");
  choices.Add(app, "--shaping-mode", c.shaping_mode, kShapingModeChoices,
              "netqos: how the --enforce-nics hold sent traffic to the caps: htb (one HTB "
              "tree at the NIC's root), edt (departure times, fq under each TX queue of the "
              "NIC's mq root), or auto: edt on a NIC with more than one TX queue where the "
              "kernel has fq, htb otherwise");
  app.add_option("--qos-level-shaping", c.qos_level_shaping,
                 "netqos: per-QoS-level HTB parent classes, "
                 "level=rate_permille:ceil_permille:prio,... e.g. reclaimed_cores=150:1000:3")
      ->delimiter(',');
  choices.Add(app, "--container-ceil", c.container_ceil, kContainerCeilChoices,
              "netqos: what an allocated container's HTB leaf may reach: allocation (a hard cap "
              "at its allocation) or level (the allocation is guaranteed, and idle bandwidth is "
              "borrowed up to its QoS level's ceiling); a pod's netqos.io/container-ceil "
              "annotation may choose allocation, and level where the tenant policy allows "
              "borrowing");
  app.add_option("--qos-level-dscp", c.qos_level_dscp,
                 "netqos: DSCP to mark each QoS level's packets with on the --enforce-nics NICs "
                 "(the ECN bits kept), level=dscp,... with dscp 0..63 or a name (EF, CS0..CS7, "
                 "AF11..AF43), e.g. system_cores=46,dedicated_cores=AF41; a pod's netqos.io/dscp "
                 "annotation overrides it where the tenant policy lists the value (default: none, "
                 "see --dscp-default)")
      ->delimiter(',');
  app.add_option("--dscp-default", c.dscp_default,
                 "netqos: DSCP of every packet the --enforce-nics NICs send that no QoS level or "
                 "pod marks (unclassified and node traffic too), so that a sender's IP_TOS cannot "
                 "choose the fabric's priority: a DSCP (CS0, 0..63, ...), keep (the sender's "
                 "stays), or auto: CS0 when --qos-level-dscp marks any level, else keep")
      ->default_val("auto");
  app.add_option("--qos-level-burst", c.qos_level_burst,
                 "netqos: burst (HTB bucket) of each QoS level's container leaves and default "
                 "leaf, level=bytes,... with bytes a quantity from 1600 (one packet) to 1Gi, e.g. "
                 "64Ki or 1M, or auto: what the rate earns in 1 ms + 1600 bytes (the default); a "
                 "pod's netqos.io/burst annotation may ask for less, or up to the tenant policy's "
                 "max_burst; not applied to EDT egress pacing")
      ->delimiter(',');
  app.add_option("--tenant-policy-file", c.tenant_policy_file,
                 "netqos: the operator's tenant policy (JSON, docs/tenant-policy.md): per "
                 "namespace, which pod annotations are honoured and how far they may raise a "
                 "pod's treatment (borrowing, DSCP, burst, implicit bandwidth, QoS level), and "
                 "namespace aggregates; re-read when it changes, a bad file keeps the last good "
                 "policy. Default: none, the built-in policy (annotations only ever make a pod's "
                 "treatment stricter)");
  choices.Add(app, "--unclassified-qos-level", c.unclassified_qos_level, kQosLevelChoices,
              "netqos: QoS level whose class takes traffic of containers netqos did not "
              "classify");
  AddBoolFlag(app, "--low-priority-groups", c.low_priority_groups,
              "netqos: hold reclaimed_cores traffic on each --enforce-nics NIC, both directions, "
              "to Katalyst HEAD's low-priority network group: the NIC's allocatable minus what "
              "the other QoS levels' allocations request");
  app.add_option("--low-priority-group-floor-percent", c.low_priority_group_floor_percent,
                 "netqos: the least a low-priority group gets, in percent of the NIC's "
                 "allocatable (Katalyst HEAD: 5)");
  durations.Add(app, "--enforcement-resync-period", c.enforcement_resync_period,
                "netqos: time between full resyncs of cgroups, maps and qdiscs: a Go duration "
                "(30s, 5m) or whole seconds");
  app.add_option("--check-tenant-policy", c.check_tenant_policy,
                 "netqos: validate a tenant policy file (as --tenant-policy-file reads it), print "
                 "it with every rule explicit, and exit: 0 if netqosd would take it, 1 with the "
                 "error if not");
  AddBoolFlag(app, "--uninstall", c.uninstall,
              "netqos: remove the pinned BPF programs, maps and the qdiscs netqos installed, "
              "fold the checkpoint's journal into a snapshot Katalyst can load, then exit");
  AddBoolFlag(app, "--keep-forwarded-priority", c.set_forward_priority_sysctl,
              "netqos: also set net.ipv4.ip_forward_update_priority=0 in the namespaces of "
              "--enforce-nics (off by default: not needed, the NIC's egress program "
              "classifies routed pod traffic by its source address)");
  AddBoolFlag(app, "--pod-veths", c.pod_veths,
              "netqos: classify pods behind a CNI at the host end of their veths (found by the "
              "node's routes and the addresses behind each veth), so that their caps hold when "
              "the node masquerades, DNATs or tunnels their traffic; --pod-veths=false leaves "
              "them to the NICs' address-based classification");
  choices.Add(app, "--node-local-traffic", c.node_local_traffic, kNodeLocalTrafficChoices,
              "netqos: packets to a pod that never crossed a NIC (from the host or another pod "
              "of the node): exempt from the caps, or shaped by the receiving pod's ingress cap "
              "(at its veth)");

  try {
    if (argc > 0) app.name(argv[0]);
    app.parse(GoStyleArgs(argc, argv));
  } catch (const CLI::ParseError& e) {
    // app.exit prints help and version to stdout, errors to stderr. CLI11's own codes (104 for a
    // value that does not convert, 109 for an unexpected argument, 114 for a repeated or missing
    // value, ...) are its internals: every rejected command line is 2.
    ParsedFlags out;
    out.exit_code = app.exit(e) == 0 ? kExitOk : kExitUsage;
    if (out.exit_code != kExitOk) std::cerr << "netqosd: bad command line (see --help)\n";
    return out;
  }

  Status st = choices.Resolve();
  if (st.ok()) st = durations.Resolve();
  c.enforce_nics = SplitKeepingEmpty(c.enforce_nics);
  const bool type_given = cgroup_type_opt->count() > 0;
  const bool driver_given = cgroup_driver_opt->count() > 0;
  if (st.ok() && type_given && driver_given && cgroup_type_flag != cgroup_driver_flag) {
    st = InvalidArgument(
        "--cgroup-type=" + std::string(ChoiceName(cgroup_type_flag, kCgroupDriverChoices)) +
        " and --cgroup-driver=" +
        std::string(ChoiceName(cgroup_driver_flag, kCgroupDriverChoices)) +
        " disagree (they are the same setting; give one)");
  }
  c.cgroup_type = driver_given ? cgroup_driver_flag : cgroup_type_flag;
  // A --kubelet-* flag with the CRI source would be silently unused: the operator meant the
  // kubelet source, or left a flag behind when moving off it.
  for (const CLI::Option* o : kubelet_opts) {
    if (st.ok() && o->count() > 0 && c.pod_source != PodSourceKind::kKubelet) {
      st = InvalidArgument(o->get_name() +
                           " applies to --pod-source=kubelet only (the pod source is " +
                           std::string(ChoiceName(c.pod_source, kPodSourceChoices)) + ")");
    }
  }
  // --print-config shows the resolved driver under both names.
  const std::string driver_name(ChoiceName(c.cgroup_type, kCgroupDriverChoices));
  cgroup_type_opt->default_str(driver_name);
  cgroup_driver_opt->default_str(driver_name);
  for (int i = 0; i < 4 && st.ok(); ++i) {
    core::StringMap sel;
    st = ParsePairs(raw.selectors[i],
                    std::string("pod-annotation-qos-level-") + kLevelFlagNames[i] + "-selector",
                    &sel);
    if (!sel.empty()) p.qos.extra_selectors[kLevels[i]] = sel;
  }
  if (st.ok())
    st =
        ParsePairs(raw.enhancements, "pod-annotation-qos-enhancements", &p.qos.enhancement_aliases);
  if (st.ok())
    st = ParsePairs(raw.enhancement_defaults, "qos-enhancement-default-values",
                    &p.qos.enhancement_defaults);
  p.qos.annotation_kept_keys.insert(p.qos.annotation_kept_keys.end(),
                                    raw.annotation_kept_keys.begin(),
                                    raw.annotation_kept_keys.end());
  if (st.ok()) st = ValidateDaemonConfig(c);
  if (st.ok()) p.require_ip_address = ParseNicHealthCheckers(c.nic_health_checkers)->ip;
  if (!st.ok()) {
    std::cerr << "netqosd: " << st.message() << "\n";
    return ParsedFlags{std::nullopt, kExitUsage};
  }
  if (c.print_config) {
    std::cout << app.config_to_str(true, false);
    return ParsedFlags{std::nullopt, kExitOk};
  }
  return ParsedFlags{std::move(c), kExitOk};
}

namespace {

Status ValidatePodSourceFlags(const DaemonConfig& c) {
  if (c.pod_source == PodSourceKind::kCri) {
    // "auto" is looked up when enforcement starts: the runtime may come up after netqosd.
    if (c.cri_socket == "auto") return Status::Ok();
    auto endpoint = cri::ResolveCriEndpoint(c.cri_socket);
    return endpoint.ok() ? Status::Ok() : endpoint.status();
  }
  auto url = cgroup::ParseKubeletUrl(c.kubelet_pods_url);
  if (!url.ok()) return InvalidArgument("--kubelet-pods-url: " + url.status().message());
  if (url->scheme == "https" && c.kubelet_token_file.empty())
    return InvalidArgument(
        "--kubelet-token-file must not be empty with an https "
        "--kubelet-pods-url");
  if (!c.kubelet_ca_file.empty()) {
    if (url->scheme != "https")
      return InvalidArgument("--kubelet-ca-file applies to an https --kubelet-pods-url only, got " +
                             c.kubelet_pods_url);
    if (c.kubelet_insecure_skip_tls_verify)
      return InvalidArgument(
          "--kubelet-ca-file and --kubelet-insecure-skip-tls-verify contradict each other: "
          "verify against the CA file, or do not verify at all");
    if (c.kubelet_ca_file.front() != '/')
      return InvalidArgument("--kubelet-ca-file must be an absolute path, got \"" +
                             c.kubelet_ca_file + "\"");
  }
  return Status::Ok();
}

Status ValidateEnforcementFlags(const DaemonConfig& c) {
  if (!c.cgroup_root.empty() && !IsAbsoluteBelowRoot(c.cgroup_root))
    return InvalidArgument(
        "--cgroup-root must be an absolute path (or empty to detect it), got \"" + c.cgroup_root +
        "\"");
  if (Status st = ValidatePodSourceFlags(c); !st.ok()) return st;
  if (!IsAbsoluteBelowRoot(c.bpf_pin_dir))
    return InvalidArgument("--bpf-pin-dir must be an absolute path below /, got \"" +
                           c.bpf_pin_dir + "\"");
  if (auto nics = ParseEnforceNics(c.enforce_nics); !nics.ok()) return nics.status();
  if (auto shaping = BuildShapingConfig(c); !shaping.ok()) return shaping.status();
  // The flags are bounded when parsed (app/duration_flag.h); this is for configs built in code.
  const std::pair<const char*, std::chrono::milliseconds> durations[] = {
      {"--kubelet-registration-timeout", c.kubelet_registration_timeout},
      {"--enforcement-resync-period", c.enforcement_resync_period}};
  for (const auto& [flag, d] : durations) {
    if (d < kMinDurationFlag || d > kMaxDurationFlag)
      return InvalidArgument(std::string(flag) + " must be from " +
                             DurationFlagText(kMinDurationFlag) + " to " +
                             DurationFlagText(kMaxDurationFlag) + ", got " + DurationFlagText(d));
  }
  return Status::Ok();
}

}  // namespace

Status ValidateDaemonConfig(const DaemonConfig& c) {
  auto rate_ok = [](float r) { return std::isfinite(r) && r > 0.0f; };
  if (!rate_ok(c.policy.egress_capacity_rate))
    return InvalidArgument(
        "--network-resource-plugin-egress-capacity-rate must be a finite "
        "number > 0, got " +
        std::to_string(c.policy.egress_capacity_rate));
  if (!rate_ok(c.policy.ingress_capacity_rate))
    return InvalidArgument(
        "--network-resource-plugin-ingress-capacity-rate must be a finite "
        "number > 0, got " +
        std::to_string(c.policy.ingress_capacity_rate));
  if (c.checkpoint_snapshot_every == 0)
    return InvalidArgument("--checkpoint-snapshot-every must be at least 1");
  if (!c.metrics_bind_address.empty()) {
    if (auto addr = metrics::ParseBindAddress(c.metrics_bind_address); !addr.ok())
      return addr.status();
  }
  if (c.qrm_socket_dirs.empty())
    return InvalidArgument("--qrm-socket-dirs must name at least one directory");
  for (const auto& d : c.qrm_socket_dirs)
    if (d.empty()) return InvalidArgument("--qrm-socket-dirs contains an empty directory name");
  if (c.EffectiveStateDir().empty()) return InvalidArgument("--qrm-state-dir must not be empty");
  if (!c.topology_file.empty() &&
      (!c.nic_allow.empty() || !c.nic_deny.empty() || !c.nic_speed_overrides.empty()))
    return InvalidArgument(
        "--nic-allow, --nic-deny and --nic-speed-override apply to kernel "
        "discovery; they cannot be combined with --topology-file");
  if (c.json && !c.print_topology)
    return InvalidArgument("--json only applies to --print-topology");
  if (auto checkers = ParseNicHealthCheckers(c.nic_health_checkers); !checkers.ok())
    return checkers.status();
  return ValidateEnforcementFlags(c);
}

}  // namespace netqos::app
