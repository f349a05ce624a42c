#include "app/daemon_config.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <iostream>
#include <utility>

#include "app/duration_flag.h"
#include "app/enforce_nics.h"
#include "app/exit_codes.h"
#include "app/flag_choices.h"
#include "app/flag_set.h"
#include "app/nic_health_checkers.h"
#include "app/shaping_flags.h"
#include "common/version.h"
#include "core/constants.h"
#include "core/state_size.h"
#include "metrics/bind_address.h"
#include "pods/cri/cri_endpoint.h"
#include "pods/kubelet/kubelet_pods_client.h"

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
  // Flags whose values are parsed into typed DaemonConfig fields, as given (what --print-config
  // shows).
  std::vector<std::string> nic_health_checkers{"*"};
  std::string cri_socket = "auto";
  std::string kubelet_pods_url = kDefaultKubeletPodsUrl;
  std::string metrics_bind_address;
  std::vector<std::string> enforce_nics;
  std::vector<std::string> nic_allow;
  std::vector<std::string> nic_deny;
  std::vector<std::string> nic_speed_overrides;
  std::vector<std::string> qos_level_shaping;
  std::vector<std::string> qos_level_dscp;
  std::vector<std::string> qos_level_burst;
  std::string dscp_default = "auto";
  std::vector<std::string> enhancements;
  std::vector<std::string> enhancement_defaults;
  std::vector<std::string> annotation_kept_keys;
};

const char* const kLevels[4] = {core::kReclaimedCores, core::kSharedCores, core::kDedicatedCores,
                                core::kSystemCores};
const char* const kLevelFlagNames[4] = {"reclaimed", "shared", "dedicated", "system"};

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

// --checkpoint-pod-metadata-bytes: below 1 KiB Katalyst's own annotations may not fit; above
// 1 MiB fifty entries would fill the state's bound (core/state_size.h).
constexpr size_t kMinPodMetadataBytes = 1024;
constexpr size_t kMaxPodMetadataBytes = size_t{1} << 20;
// --checkpoint-max-state-bytes: at most what the snapshot's read limit leaves room for
// (core::kMaxStateBytes), and room for kMinFullEntries entries at the per-pod limit.
constexpr size_t kMinStateBytes = size_t{1} << 20;
constexpr size_t kMinFullEntries = 8;

// The help groups, in the order --help lists them. "Katalyst ..." groups hold Katalyst's flags
// (its names, defaults and meaning, docs/compatibility.md); the others are netqos's own.
constexpr char kGroupPlugin[] = "Katalyst network plugin";
constexpr char kGroupQrm[] = "Katalyst QRM state and socket";
constexpr char kGroupMachine[] = "Katalyst machine info";
constexpr char kGroupQos[] = "Katalyst QoS annotations";
constexpr char kGroupNics[] = "NICs and allocation";
constexpr char kGroupRegistration[] = "Kubelet registration";
constexpr char kGroupCheckpoint[] = "Checkpoint";
constexpr char kGroupPods[] = "Pods and cgroups";
constexpr char kGroupEnforcement[] = "Enforcement";
constexpr char kGroupTenants[] = "Tenant policy";
constexpr char kGroupObservability[] = "Metrics and logs";
constexpr char kGroupModes[] = "Modes and the config file (command line only)";

// What the flags write besides DaemonConfig, read by ParseDaemonFlags after parsing.
struct FlagExtras {
  RawFlags raw;
  // --cgroup-type (Katalyst) and --cgroup-driver (netqos) are one setting; both are read into
  // their own values so a contradiction can be reported, then resolved into c.cgroup_type.
  cgroup::CgroupDriver cgroup_type = cgroup::CgroupDriver::kCgroupfs;
  cgroup::CgroupDriver cgroup_driver = cgroup::CgroupDriver::kCgroupfs;
  CLI::Option* cgroup_type_opt = nullptr;
  CLI::Option* cgroup_driver_opt = nullptr;
  std::string config_file;
  // Katalyst's flags netqos accepts and ignores.
  std::string unused_str;
  std::vector<std::string> unused_list;
  bool unused_bool = false;
};

void AddKatalystFlags(FlagSet& f, DaemonConfig& c, FlagExtras& x) {
  using Split = FlagSet::Split;
  auto& p = c.policy;
  f.Group(kGroupPlugin);
  f.AddChoice("--network-resource-plugin-policy", c.policy_name, kPolicyChoices,
              "Policy of the network plugin (only \"static\")");
  uint32_t* class_ids[4] = {
      &p.qos_class_ids[core::kReclaimedCores], &p.qos_class_ids[core::kSharedCores],
      &p.qos_class_ids[core::kDedicatedCores], &p.qos_class_ids[core::kSystemCores]};
  for (int i = 0; i < 4; ++i) {
    f.AddNumber(std::string("--network-resource-plugin-class-id-") + kLevelFlagNames[i] + "-cores",
                *class_ids[i], std::string("Net class id of ") + kLevels[i] + " containers");
  }
  f.AddNumber("--network-resource-plugin-reserved-bandwidth", p.reserved_bandwidth,
              "Mbps reserved on the first NIC (both directions)");
  f.AddNumber("--network-resource-plugin-egress-capacity-rate", p.egress_capacity_rate,
              "Egress capacity = NIC speed x this rate, a fraction in (0, 1]");
  f.AddNumber("--network-resource-plugin-ingress-capacity-rate", p.ingress_capacity_rate,
              "Ingress capacity = NIC speed x this rate, a fraction in (0, 1]");
  f.AddBool("--skip-network-state-corruption", c.skip_network_state_corruption,
            "Load a checkpoint whose checksum does not match (never a malformed one)");
  f.AddString("--network-resource-plugin-net-class-annotation-key", p.pod_net_class_annotation_key,
              "Pod annotation overriding the net class id");
  f.AddList("--network-resource-plugin-net-attributes-keys", c.net_attributes_keys, Split::kCommas,
            "Accepted for compatibility, no effect: Katalyst collects these pod annotations as "
            "net class attributes that its appliers then ignore");
  auto& k = p.annotation_keys;
  f.AddString("--network-resource-plugin-ipv4-allocation-anno-key", k.ipv4,
              "Allocation annotation: NIC IPv4 addresses");
  f.AddString("--network-resource-plugin-ipv6-allocation-anno-key", k.ipv6,
              "Allocation annotation: NIC IPv6 addresses");
  f.AddString("--network-resource-plugin-ns-path-allocation-anno-key", k.netns_path,
              "Allocation annotation: NIC network namespace path");
  f.AddString("--network-resource-plugin-nic-name-allocation-anno-key", k.nic_name,
              "Allocation annotation: NIC name");
  f.AddString("--network-resource-plugin-class-id-allocation-anno-key", k.net_class_id,
              "Allocation annotation: net class id");
  f.AddString("--network-resource-plugin-bandwidth-allocation-anno-key", k.bandwidth,
              "Allocation annotation: allocated Mbps");
  f.AddBool("--enable-network-resource-plugin-nic-allocation-reactor",
            c.enable_nic_allocation_reactor,
            "Accepted for compatibility (netqos does not patch pods)");
  f.AddBool("--network-resource-plugin-numa-node-hints", p.numa_node_hints,
            "Also offer each NIC's own NUMA node as a hint (the kubelet's single-numa-node "
            "topology policy admits only those); off: socket hints only, as Katalyst");
  f.AddList("--network-resource-plugin-nic-health-checkers", x.raw.nic_health_checkers,
            Split::kCommas,
            "NIC health checkers: ip (a NIC without an IP address takes no new allocations); "
            "\"-ip\" turns it off, \"*\" all on, an empty list all off");

  f.Group(kGroupQrm);
  f.AddList("--qrm-socket-dirs", c.qrm_socket_dirs, Split::kCommas,
            "Directories the plugin socket is served in (comma-separated)");
  f.AddString("--qrm-state-dir", c.qrm_state_dir, "Checkpoint directory");
  f.AddString("--qrm-state-dir-in-memory", c.qrm_state_dir_in_memory,
              "Checkpoint directory when --qrm-enable-in-memory-state is set");
  f.AddBool("--qrm-enable-in-memory-state", c.qrm_enable_in_memory_state,
            "Keep the checkpoint in --qrm-state-dir-in-memory");
  // Bound apart and appended after parsing: CLI11 would replace the defaults, Katalyst adds.
  f.AddList("--pod-annotation-kept-keys", x.raw.annotation_kept_keys, Split::kCommas,
            "Pod annotations passed through to the state and responses, in addition to " +
                std::string(core::kPodAggregatedRequestsKey) + " and " +
                core::kInplaceUpdateResizingKey);
  f.AddList("--pod-label-kept-keys", p.qos.label_kept_keys, Split::kCommas,
            "Pod labels passed through to the state and responses");
  f.AddString("--qrm-extra-state-file", x.unused_str, "Accepted for compatibility; unused");
  f.AddList("--qrm-pod-debug-anno-keys", x.unused_list, Split::kCommas,
            "Accepted for compatibility; unused");
  f.AddBool("--use-kubelet-reserved-config", x.unused_bool, "Accepted for compatibility; unused");

  f.Group(kGroupMachine);
  f.AddBool("--machine-net-multi-ns", c.machine_net_multi_ns,
            "Also discover NICs in the namespaces under --machine-net-ns-dir");
  f.AddString("--machine-net-ns-dir", c.machine_net_ns_dir,
              "Directory of named network namespaces (default /var/run/netns)");
  f.AddList("--machine-net-allocatable-ns", c.machine_net_allocatable_ns, Split::kCommas,
            "Namespaces whose NICs are allocatable (name, -name, *)");
  x.cgroup_type_opt = f.AddChoice("--cgroup-type", x.cgroup_type, kCgroupDriverChoices,
                                  "cgroup driver: cgroupfs or systemd (= --cgroup-driver)");
  f.AddList("--addition-cgroup-paths", c.addition_cgroup_paths, Split::kCommas,
            "Extra cgroup roots to search for containers");

  f.Group(kGroupQos);
  for (int i = 0; i < 4; ++i) {
    f.AddList(std::string("--pod-annotation-qos-level-") + kLevelFlagNames[i] + "-selector",
              x.raw.selectors[i], Split::kCommas,
              std::string("Extra k=v annotation selectors for ") + kLevels[i]);
  }
  f.AddList("--pod-annotation-qos-enhancements", x.raw.enhancements, Split::kCommas,
            "Expanded enhancement keys, default=expanded");
  f.AddList("--qos-enhancement-default-values", x.raw.enhancement_defaults, Split::kCommas,
            "Default flattened enhancement values, k=v");
}

void AddNetqosFlags(FlagSet& f, DaemonConfig& c, FlagExtras& x) {
  using Split = FlagSet::Split;
  f.Group(kGroupNics);
  f.AddString("--topology-file", c.topology_file,
              "Read NUMA nodes and NICs from this JSON file instead of the kernel");
  f.AddList("--nic-allow", x.raw.nic_allow, Split::kCommas,
            "Also count links whose name matches these shell globs as NICs (default: PCI "
            "devices and bonds only), e.g. 'veth*,eth1'");
  f.AddList("--nic-deny", x.raw.nic_deny, Split::kCommas,
            "Never count links whose name matches these shell globs (wins over --nic-allow)");
  f.AddList("--nic-speed-override", x.raw.nic_speed_overrides, Split::kWhole,
            "NAME=MBPS speed for a link whose speed the kernel does not know (repeatable)");
  f.AddChoice("--nic-selection", c.nic_selection, kNicSelectionChoices,
              "How to pick among equally good NICs: random, first or last");

  f.Group(kGroupRegistration);
  f.AddString("--kubelet-register-socket", c.kubelet_register_socket,
              "Also call Registration.Register on this legacy kubelet socket");
  f.AddDuration("--kubelet-registration-timeout", c.kubelet_registration_timeout,
                "How long after the kubelet's GetInfo without a NotifyRegistrationStatus the "
                "registration is reported unconfirmed (a warning, netqosctl status, "
                "netqos_kubelet_registration): a Go duration (90s, 2m) or whole seconds");

  f.Group(kGroupCheckpoint);
  f.AddChoice("--checkpoint-mode", c.checkpoint_mode, kCheckpointModeChoices,
              "journal (one fsync'd record per Allocate/RemovePod) or full-rewrite (rewrite the "
              "whole checkpoint on every change, as Katalyst does; a benchmark baseline, see "
              "docs/benchmarks.md)");
  f.AddChoice("--katalyst-checkpoint-layout", c.katalyst_checkpoint_layout, kKatalystLayoutChoices,
              "The Katalyst release the checkpoint's checksum is written for, so that it loads "
              "the file after a rollback: v0.5.3 (Katalyst v0.4.0 to v0.5.20) or head (v0.5.21 "
              "and later)");
  f.AddNumber("--checkpoint-snapshot-every", c.checkpoint_snapshot_every,
              "Fold the journal into a full checkpoint snapshot after this many changes "
              "(journal mode)");
  f.AddNumber("--checkpoint-pod-metadata-bytes", c.policy.max_pod_metadata_bytes,
              "The most a pod's kept labels and annotations may take in each of its checkpoint "
              "entries, counted at their longest JSON encoding; a request over it is refused "
              "(1024 to 1048576)");
  f.AddNumber("--checkpoint-max-state-bytes", c.policy.max_state_bytes,
              "The most all pod entries may take in the checkpoint (each counted twice, as the "
              "snapshot writes it, at its longest); an allocation that would pass it is refused. "
              "Also bounds what tenants' pod metadata makes netqosd hold in memory (1048576 to "
              "100663296, the default)");

  f.Group(kGroupPods);
  f.AddChoice("--pod-source", c.pod_source, kPodSourceChoices,
              "Where the node's pods come from (for enforcement, and for the residual state "
              "cleanup, also with --enforcement=none): cri (the container runtime's socket, "
              "--cri-socket; no cluster credential) or kubelet (GET /pods, --kubelet-pods-url; "
              "needs the nodes/proxy permission)");
  f.AddString("--cri-socket", x.raw.cri_socket,
              "The container runtime's CRI socket for --pod-source=cri: auto "
              "(/run/containerd/containerd.sock, else /run/crio/crio.sock), unix:///path or "
              "/path");
  // --pod-source=kubelet only (ParseDaemonFlags refuses them changed with the CRI source).
  f.AddString("--kubelet-pods-url", x.raw.kubelet_pods_url,
              "--pod-source=kubelet: where the pod list comes from: https://... (bearer token "
              "from --kubelet-token-file), http://... (read-only port) or file:///path.json");
  f.AddString("--kubelet-token-file", c.kubelet_token_file,
              "Bearer token for an https --kubelet-pods-url (re-read on every request)");
  f.AddBool("--kubelet-insecure-skip-tls-verify", c.kubelet_insecure_skip_tls_verify,
            "Do not verify the kubelet's serving certificate");
  f.AddString("--kubelet-ca-file", c.kubelet_ca_file,
              "PEM file of the CAs the kubelet's serving certificate must chain to for an https "
              "--kubelet-pods-url, e.g. the service account's ca.crt (re-read on every request; "
              "default: OpenSSL's, SSL_CERT_FILE or the system store)");
  f.AddString("--cgroup-root", c.cgroup_root,
              "cgroup v2 mount point (default: detected from libcgroup's mount table, as "
              "`netqosctl cgroup-mount` prints it)");
  x.cgroup_driver_opt = f.AddChoice("--cgroup-driver", x.cgroup_driver, kCgroupDriverChoices,
                                    "Kubelet cgroup driver: cgroupfs or systemd (= --cgroup-type)");

  f.AddString("--nri-socket", c.nri_socket,
              "Also run as an NRI plugin on this socket of the container runtime (containerd "
              "1.7+, CRI-O; usually /var/run/nri/nri.sock), so that a starting container has its "
              "class before its first packet (--enforcement=bpf; default: off, see docs/nri.md)");
  f.AddNumber("--nri-event-budget-ms", c.nri_event_budget_ms,
              "With --nri-socket: how long, in milliseconds (1 to 60000), a StartContainer may "
              "wait for the container's class before the runtime is answered anyway; capped at "
              "half the runtime's own request timeout, or at 1000 when the runtime sends none "
              "(containerd 1.7)");
  f.AddBool("--nri-fail-closed", c.nri_fail_closed,
            "With --nri-socket: refuse to let a container start (the runtime fails it) when its "
            "pod has a bandwidth allocation and its class is not confirmed in place within the "
            "event budget; containers without an allocation always start (default: off, the "
            "container starts and its class follows)");

  f.Group(kGroupEnforcement);
  f.AddChoice("--enforcement", c.enforcement, kEnforcementChoices,
              "bpf (classify containers' traffic with eBPF, shape --enforce-nics) or none "
              "(allocation only)");
  f.AddString("--bpf-pin-dir", c.bpf_pin_dir,
              "bpffs directory for pinned maps and links (a bpffs is mounted on its parent if "
              "there is none)");
  // Split by SplitKeepingEmpty rather than by the parser, which drops empty items: "eth0,,eth1"
  // is rejected, not read as "eth0,eth1".
  f.AddList("--enforce-nics", x.raw.enforce_nics, Split::kWhole,
            "NICs to shape (see --shaping-mode), [netns/]name,... or all (default: none; "
            "traffic is classified and counted, no qdisc is touched)");
  f.AddBool("--replace-root-qdisc", c.replace_root_qdisc,
            "Replace a root qdisc netqos did not create on an --enforce-nics NIC");
  f.AddBool(
      "--shape-idle-nics", c.shape_idle_nics,
      "Keep netqos's qdiscs on an --enforce-nics NIC while nothing on it is capped, so "
      "the QoS levels' shares and priorities hold on every enforced NIC (default: a NIC, "
      "and each direction of it, keeps its own root qdisc until a container, namespace "
      "aggregate or level ceiling caps something there; implied by a --qos-level-shaping other "
      "than the defaults)");
  f.AddChoice("--shaping-mode", c.shaping_mode, kShapingModeChoices,
              "How the --enforce-nics hold sent traffic to the caps: htb (one HTB tree at the "
              "NIC's root), edt (departure times, fq under each TX queue of the NIC's mq root), "
              "or auto: edt on a NIC with more than one TX queue where the kernel has fq, htb "
              "otherwise, and htb everywhere when --qos-level-shaping, --container-ceil=level, "
              "--low-priority-groups or --qos-level-burst ask for what only htb does (an explicit "
              "edt reports them inactive)");
  f.AddList("--qos-level-shaping", x.raw.qos_level_shaping, Split::kCommas,
            "Per-QoS-level HTB parent classes, level=rate_permille:ceil_permille:prio,... e.g. "
            "reclaimed_cores=150:1000:3");
  f.AddChoice("--container-ceil", c.container_ceil, kContainerCeilChoices,
              "What an allocated container's HTB leaf may reach: allocation (a hard cap at its "
              "allocation) or level (the allocation is guaranteed, and idle bandwidth is "
              "borrowed up to its QoS level's ceiling); a pod's netqos.io/container-ceil "
              "annotation may choose allocation, and level where the tenant policy allows "
              "borrowing");
  f.AddList("--qos-level-dscp", x.raw.qos_level_dscp, Split::kCommas,
            "DSCP to mark each QoS level's packets with on the --enforce-nics NICs (the ECN bits "
            "kept), level=dscp,... with dscp 0..63 or a name (EF, CS0..CS7, AF11..AF43), e.g. "
            "system_cores=46,dedicated_cores=AF41; a pod's netqos.io/dscp annotation overrides "
            "it where the tenant policy lists the value (default: none, see --dscp-default)");
  f.AddString("--dscp-default", x.raw.dscp_default,
              "DSCP of every packet the --enforce-nics NICs send that no QoS level or pod marks "
              "(unclassified and node traffic too), so that a sender's IP_TOS cannot choose the "
              "fabric's priority: a DSCP (CS0, 0..63, ...), keep (the sender's stays), or auto: "
              "CS0 when --qos-level-dscp marks any level, else keep");
  f.AddList("--qos-level-burst", x.raw.qos_level_burst, Split::kCommas,
            "Burst (HTB bucket) of each QoS level's container leaves and default leaf, "
            "level=bytes,... with bytes a quantity from 1600 (one packet) to 1Gi, e.g. 64Ki or "
            "1M, or auto: what the rate earns in 1 ms + 1600 bytes (the default); a pod's "
            "netqos.io/burst annotation may ask for less, or up to the tenant policy's "
            "max_burst; not applied to EDT egress pacing");
  f.AddChoice("--unclassified-qos-level", c.unclassified_qos_level, kQosLevelChoices,
              "QoS level whose class takes traffic of containers netqos did not classify");
  f.AddBool("--low-priority-groups", c.low_priority_groups,
            "Hold reclaimed_cores traffic on each --enforce-nics NIC, both directions, to "
            "Katalyst HEAD's low-priority network group: the NIC's allocatable minus what the "
            "other QoS levels' allocations request");
  f.AddNumber("--low-priority-group-floor-percent", c.low_priority_group_floor_percent,
              "The least a low-priority group gets, in percent of the NIC's allocatable "
              "(Katalyst HEAD: 5)");
  f.AddDuration("--enforcement-resync-period", c.enforcement_resync_period,
                "Time between resyncs of cgroups, maps and qdiscs: a Go duration (30s, 5m) "
                "or whole seconds");
  f.AddDuration("--enforcement-full-resync-period", c.enforcement_full_resync_period,
                "Time between full resyncs, which also look up every container's cgroup, parse an "
                "unchanged pod list and read every NIC's qdiscs back to repair them; the resyncs "
                "between trust the cgroup watcher for unchanged cgroups. At most "
                "--enforcement-resync-period: every resync is full");
  f.AddBool("--keep-forwarded-priority", c.set_forward_priority_sysctl,
            "Also set net.ipv4.ip_forward_update_priority=0 in the namespaces of --enforce-nics "
            "(off by default: not needed, the NIC's egress program classifies routed pod "
            "traffic by its source address)");
  f.AddBool("--pod-veths", c.pod_veths,
            "Classify pods behind a CNI at the host end of their veths (found by the node's "
            "routes and the addresses behind each veth), so that their caps hold when the node "
            "masquerades, DNATs or tunnels their traffic; --pod-veths=false leaves them to the "
            "NICs' address-based classification");
  f.AddChoice("--node-local-traffic", c.node_local_traffic, kNodeLocalTrafficChoices,
              "Packets to a pod that never crossed a NIC (from the host or another pod of the "
              "node): exempt from the caps, or shaped by the receiving pod's ingress cap (at its "
              "veth)");

  f.Group(kGroupTenants);
  f.AddString("--tenant-policy-file", c.tenant_policy_file,
              "The operator's tenant policy (JSON, docs/tenant-policy.md): per namespace, which "
              "pod annotations are honoured and how far they may raise a pod's treatment "
              "(borrowing, DSCP, burst, implicit bandwidth, QoS level), and namespace "
              "aggregates; re-read when it changes, a bad file keeps the last good policy. "
              "Default: none, the built-in policy (annotations only ever make a pod's treatment "
              "stricter)");

  f.Group(kGroupObservability);
  f.AddString("--metrics-bind-address", x.raw.metrics_bind_address,
              "Serve Prometheus /metrics, /healthz and /readyz on HOST:PORT, e.g. "
              "127.0.0.1:9465 (default: off)");
  f.AddChoice("--log-level", c.log_level, kLogLevelChoices,
              "trace, debug, info, warn, error, critical or off");
  f.AddChoice("--log-format", c.log_format, kLogFormatChoices,
              "text (key=value) or json (one object per line: ts, level, msg and the message's "
              "key=value pairs as fields)");

  f.Group(kGroupModes);
  f.AddModeOption("--config", x.config_file,
                  "Read settings from FILE, one `flag-name=value` per line as --print-config "
                  "writes them (lists as [\"a\", \"b\"]); flags on the command line win")
      ->type_name("FILE");
  f.AddModeFlag("--print-config", c.print_config,
                "Print the effective value of every setting, in --config's format, and exit");
  f.AddModeFlag("--print-topology", c.print_topology,
                "Discover the topology once with these flags, print it and exit");
  f.AddModeFlag("--json", c.json, "With --print-topology, print JSON");
  f.AddModeOption("--check-tenant-policy", c.check_tenant_policy,
                  "Validate a tenant policy file (as --tenant-policy-file reads it), print it "
                  "with every rule explicit, and exit: 0 if netqosd would take it, 1 with the "
                  "error if not");
  f.AddModeFlag("--uninstall", c.uninstall,
                "Remove the pinned BPF programs, maps and the qdiscs netqos installed, fold the "
                "checkpoint's journal into a snapshot Katalyst can load, then exit");
}

}  // namespace

ParsedFlags ParseDaemonFlags(int argc, const char* const* argv) {
  DaemonConfig c;
  FlagExtras x;
  CLI::App app{
      "netqosd: Kubernetes network QoS daemon. Serves the kubelet's QoS Resource Manager as\n"
      "Katalyst's network plugin (resource resource.katalyst.kubewharf.io/net_bandwidth).\n"
      "Settings come from flags and from a --config file (flags win); --print-config prints\n"
      "them in that file's format."};
  app.footer(kExitCodesHelp);
  // A flag given twice takes its last value, as Go's flag package does: DaemonSets and wrappers
  // override a templated "--foo=1" by appending "--foo=2". Lists (vectors) still collect every
  // occurrence: CLI11 trims to the last value only what holds one.
  app.option_defaults()->always_capture_default()->multi_option_policy(
      CLI::MultiOptionPolicy::TakeLast);
  // --help and --version are added last, so that their group (the modes) comes last in --help.
  app.set_help_flag();
  FlagSet flags(app);
  AddKatalystFlags(flags, c, x);
  AddNetqosFlags(flags, c, x);
  app.set_help_flag("-h,--help", "Print this help and exit")->group(kGroupModes);
  app.set_version_flag("--version", "netqosd " + VersionLine(), "Print the version and exit")
      ->group(kGroupModes);

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

  Status st = x.config_file.empty() ? Status::Ok() : flags.ApplyConfigFile(x.config_file);
  if (st.ok()) st = flags.Resolve();
  x.raw.enforce_nics = SplitKeepingEmpty(x.raw.enforce_nics);
  // --cgroup-type and --cgroup-driver name one setting. Given on the command line, one wins over
  // the other from the file (a --print-config file has both); given alike, they must agree.
  const bool type_given = x.cgroup_type_opt->count() > 0;
  const bool driver_given = x.cgroup_driver_opt->count() > 0;
  const bool type_from_file = flags.FromConfigFile(x.cgroup_type_opt);
  const bool driver_from_file = flags.FromConfigFile(x.cgroup_driver_opt);
  bool use_driver = driver_given;
  if (type_given && driver_given && type_from_file != driver_from_file) {
    use_driver = type_from_file;  // the command line's
  } else if (st.ok() && type_given && driver_given && x.cgroup_type != x.cgroup_driver) {
    st = InvalidArgument(
        "--cgroup-type=" + std::string(ChoiceName(x.cgroup_type, kCgroupDriverChoices)) +
        " and --cgroup-driver=" + std::string(ChoiceName(x.cgroup_driver, kCgroupDriverChoices)) +
        " disagree (they are the same setting; give one)");
  }
  c.cgroup_type = use_driver ? x.cgroup_driver : x.cgroup_type;
  // --print-config shows the resolved driver under both names.
  x.cgroup_type = x.cgroup_driver = c.cgroup_type;
  // A --kubelet-* setting with the CRI source would be silently unused: the operator meant the
  // kubelet source, or left a flag behind when moving off it. A default is no such mistake (and
  // every --print-config file holds them).
  const DaemonConfig defaults;
  const std::pair<const char*, bool> kubelet_settings[] = {
      {"--kubelet-pods-url", x.raw.kubelet_pods_url != kDefaultKubeletPodsUrl},
      {"--kubelet-token-file", c.kubelet_token_file != defaults.kubelet_token_file},
      {"--kubelet-insecure-skip-tls-verify",
       c.kubelet_insecure_skip_tls_verify != defaults.kubelet_insecure_skip_tls_verify},
      {"--kubelet-ca-file", c.kubelet_ca_file != defaults.kubelet_ca_file}};
  for (const auto& [flag, changed] : kubelet_settings) {
    if (st.ok() && changed && c.pod_source != PodSourceKind::kKubelet) {
      st = InvalidArgument(std::string(flag) +
                           " applies to --pod-source=kubelet only (the pod source is " +
                           std::string(ChoiceName(c.pod_source, kPodSourceChoices)) + ")");
    }
  }
  auto& p = c.policy;
  const RawFlags& raw = x.raw;
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
  // The flags with a grammar of their own are parsed here, once: the rest of netqosd takes the
  // typed values.
  if (st.ok()) {
    auto checkers = ParseNicHealthCheckers(raw.nic_health_checkers);
    if (checkers.ok()) p.require_ip_address = checkers->ip;
    st = checkers.status();
  }
  // Only the CRI source reads --cri-socket: with the kubelet's, its value is not looked at (as
  // before it was typed).
  if (st.ok() && c.pod_source == PodSourceKind::kCri) {
    auto socket = cri::ParseCriSocket(raw.cri_socket);
    if (socket.ok()) c.cri_socket = std::move(*socket);
    st = socket.status();
  }
  // Likewise only the kubelet source reads --kubelet-pods-url (a changed one with the CRI source
  // was refused above).
  if (st.ok() && c.pod_source == PodSourceKind::kKubelet) {
    auto url = pods::ParseKubeletUrl(raw.kubelet_pods_url);
    if (url.ok()) c.kubelet_pods_url = std::move(*url);
    st = url.status().Wrap("--kubelet-pods-url");
  }
  if (st.ok() && !raw.metrics_bind_address.empty()) {
    auto address = metrics::ParseBindAddress(raw.metrics_bind_address);  // names the flag
    if (address.ok()) c.metrics_bind_address = std::move(*address);
    st = address.status();
  }
  if (st.ok()) {
    auto filter = topology::ParseNicSelection(raw.nic_allow, raw.nic_deny,
                                              raw.nic_speed_overrides);  // names the flag
    if (filter.ok()) c.nic_filter = std::move(*filter);
    st = filter.status();
  }
  if (st.ok()) {
    auto nics = ParseEnforceNics(raw.enforce_nics);
    if (nics.ok()) c.enforce_nics = std::move(*nics);
    st = nics.status();
  }
  if (st.ok()) {
    st = shaping::ParseLevelShapingItems(raw.qos_level_shaping, "--qos-level-shaping",
                                         &c.qos_level_shaping);
  }
  if (st.ok())
    st = enforce::ParseLevelDscpItems(raw.qos_level_dscp, "--qos-level-dscp", &c.qos_level_dscp);
  if (st.ok()) {
    st =
        enforce::ParseLevelBurstItems(raw.qos_level_burst, "--qos-level-burst", &c.qos_level_burst);
  }
  if (st.ok()) {
    auto dscp_default = enforce::ParseDscpDefault(raw.dscp_default, "--dscp-default");
    if (dscp_default.ok()) c.dscp_default = *dscp_default;
    st = dscp_default.status();
  }
  if (st.ok()) st = ValidateDaemonConfig(c);
  if (!st.ok()) {
    std::cerr << "netqosd: " << flags.NameConfigFile(st).message() << "\n";
    return ParsedFlags{std::nullopt, kExitUsage};
  }
  if (c.print_config) {
    std::cout << flags.ConfigText();
    return ParsedFlags{std::nullopt, kExitOk};
  }
  return ParsedFlags{std::move(c), kExitOk};
}

namespace {

Status ValidatePodSourceFlags(const DaemonConfig& c) {
  // --cri-socket was parsed when the flags were read; "auto" is looked up when enforcement
  // starts (the runtime may come up after netqosd).
  if (c.pod_source == PodSourceKind::kCri) return Status::Ok();
  // --kubelet-pods-url was parsed when the flags were read; a URL built in code is held to the
  // schemes the parser takes.
  const pods::KubeletUrl& url = c.kubelet_pods_url;
  if (url.scheme != "http" && url.scheme != "https" && url.scheme != "file")
    return InvalidArgument("--kubelet-pods-url \"" + url.text +
                           "\": scheme must be http, https or file, got \"" + url.scheme + "\"");
  if (url.scheme == "https" && c.kubelet_token_file.empty())
    return InvalidArgument(
        "--kubelet-token-file must not be empty with an https "
        "--kubelet-pods-url");
  if (!c.kubelet_ca_file.empty()) {
    if (url.scheme != "https")
      return InvalidArgument("--kubelet-ca-file applies to an https --kubelet-pods-url only, got " +
                             url.text);
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
  if (auto shaping = BuildShapingConfig(c); !shaping.ok()) return shaping.status();
  if (c.nri_event_budget_ms < 1 || c.nri_event_budget_ms > 60000)
    return InvalidArgument("--nri-event-budget-ms must be from 1 to 60000, got " +
                           std::to_string(c.nri_event_budget_ms));
  if (!c.nri_socket.empty() && c.enforcement != Enforcement::kBpf)
    return InvalidArgument(
        "--nri-socket needs --enforcement=bpf: the NRI plugin only waits for "
        "the enforcer's classes");
  if (c.nri_fail_closed && c.nri_socket.empty())
    return InvalidArgument("--nri-fail-closed needs --nri-socket");
  if (!c.nri_socket.empty() && c.nri_socket.front() != '/')
    return InvalidArgument("--nri-socket must be an absolute path, got \"" + c.nri_socket + "\"");
  // The flags are bounded when parsed (app/duration_flag.h); this is for configs built in code.
  const std::pair<const char*, std::chrono::milliseconds> durations[] = {
      {"--kubelet-registration-timeout", c.kubelet_registration_timeout},
      {"--enforcement-resync-period", c.enforcement_resync_period},
      {"--enforcement-full-resync-period", c.enforcement_full_resync_period}};
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
  // Fractions of the NIC's speed (Katalyst's default 0.9): above 1 would promise the kubelet
  // more bandwidth than the NIC has.
  const std::pair<const char*, float> rates[] = {
      {"--network-resource-plugin-egress-capacity-rate", c.policy.egress_capacity_rate},
      {"--network-resource-plugin-ingress-capacity-rate", c.policy.ingress_capacity_rate}};
  for (const auto& [flag, rate] : rates) {
    if (!std::isfinite(rate) || rate <= 0.0f || rate > 1.0f) {
      return InvalidArgument(std::string(flag) +
                             " must be a fraction of the NIC's speed, more than 0 and at most 1 "
                             "(e.g. 0.9 for 90 %), got " +
                             ConfigNumber(rate));
    }
  }
  if (c.policy.max_pod_metadata_bytes < kMinPodMetadataBytes ||
      c.policy.max_pod_metadata_bytes > kMaxPodMetadataBytes) {
    return InvalidArgument("--checkpoint-pod-metadata-bytes must be from " +
                           std::to_string(kMinPodMetadataBytes) + " to " +
                           std::to_string(kMaxPodMetadataBytes) + ", got " +
                           std::to_string(c.policy.max_pod_metadata_bytes));
  }
  if (c.policy.max_state_bytes < kMinStateBytes ||
      c.policy.max_state_bytes > core::kMaxStateBytes) {
    return InvalidArgument(
        "--checkpoint-max-state-bytes must be from " + std::to_string(kMinStateBytes) + " to " +
        std::to_string(core::kMaxStateBytes) + ", got " + std::to_string(c.policy.max_state_bytes));
  }
  // Room for at least a few pods whose metadata is at the per-pod limit, so that the two flags
  // cannot combine into a node that refuses its ninth pod.
  const size_t largest_entry = 2 * (c.policy.max_pod_metadata_bytes + core::kEntryFixedBytes);
  if (c.policy.max_state_bytes / largest_entry < kMinFullEntries) {
    return InvalidArgument(
        "--checkpoint-max-state-bytes (" + std::to_string(c.policy.max_state_bytes) +
        ") leaves room for fewer than " + std::to_string(kMinFullEntries) +
        " entries at --checkpoint-pod-metadata-bytes (" +
        std::to_string(c.policy.max_pod_metadata_bytes) + "): raise the first or lower the second");
  }
  if (c.checkpoint_snapshot_every == 0)
    return InvalidArgument("--checkpoint-snapshot-every must be at least 1");
  // Parsed when the flags were read; an address built in code is held to the parser's ports.
  if (c.metrics_bind_address &&
      (c.metrics_bind_address->port < 0 || c.metrics_bind_address->port > 65535))
    return InvalidArgument("--metrics-bind-address \"" + c.metrics_bind_address->Text() +
                           "\": port must be from 0 to 65535");
  if (c.qrm_socket_dirs.empty())
    return InvalidArgument("--qrm-socket-dirs must name at least one directory");
  for (const auto& d : c.qrm_socket_dirs)
    if (d.empty()) return InvalidArgument("--qrm-socket-dirs contains an empty directory name");
  if (c.EffectiveStateDir().empty()) return InvalidArgument("--qrm-state-dir must not be empty");
  const topology::NicSelection& filter = c.nic_filter;
  if (!c.topology_file.empty() &&
      (!filter.allow.empty() || !filter.deny.empty() || !filter.speed_override.empty()))
    return InvalidArgument(
        "--nic-allow, --nic-deny and --nic-speed-override apply to kernel "
        "discovery; they cannot be combined with --topology-file");
  if (c.json && !c.print_topology)
    return InvalidArgument("--json only applies to --print-topology");
  return ValidateEnforcementFlags(c);
}

}  // namespace netqos::app
