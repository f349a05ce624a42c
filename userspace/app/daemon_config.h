// DaemonConfig: every netqosd flag. Katalyst's flag names and defaults are kept so existing
// DaemonSet arguments work unchanged; --help lists them in groups named "Katalyst ...", apart from
// the flags netqos adds. Any setting may also come from a --config file (app/flag_set.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/enforce_nics.h"
#include "app/logging.h"
#include "bpf/pinned_maps.h"  // kDefaultPinDir
#include "cgroup/cgroup_paths.h"
#include "checkpoint/katalyst_checksum.h"
#include "common/status.h"
#include "core/config.h"
#include "enforce/burst.h"
#include "enforce/dscp.h"
#include "metrics/bind_address.h"
#include "pods/cri/cri_endpoint.h"
#include "pods/kubelet/kubelet_pods_client.h"  // KubeletUrl
#include "service/allocation_service.h"
#include "shaping/htb_plan.h"
#include "shaping/level_shaping.h"
#include "shaping/shaping_mode.h"
#include "topology/nic_classifier.h"

namespace netqos::app {

// The closed-choice settings netqosd owns. Their flag spellings are in app/flag_choices.h, read
// once by ParseDaemonFlags; the settings whose concept a lower layer owns use that layer's enum.

// --network-resource-plugin-policy: Katalyst's network plugin has only the static policy.
enum class NetworkPolicy { kStatic };
// --nic-selection: which of equally good NICs an allocation gets.
enum class NicSelection { kRandom, kFirst, kLast };
// --enforcement: bpf (classify with eBPF and shape) or none (allocation only).
enum class Enforcement { kBpf, kNone };
// --pod-source (pods/pod_source.h): the container runtime's CRI socket (no cluster credential)
// or the kubelet's GET /pods (needs nodes/proxy; opt-in).
enum class PodSourceKind { kCri, kKubelet };
// --node-local-traffic: what a pod's veth does with packets that never cross a NIC (from the
// host's own sockets or from another pod of the node).
enum class NodeLocalTraffic { kExempt, kShaped };

// --kubelet-pods-url's default: the kubelet's authenticated API on the node itself.
inline constexpr char kDefaultKubeletPodsUrl[] = "https://127.0.0.1:10250/pods";

struct DaemonConfig {
  core::PolicyConfig policy;

  // Generic QRM flags.
  std::vector<std::string> qrm_socket_dirs{"/var/lib/kubelet/plugins_registry"};
  std::string qrm_state_dir = "/var/lib/katalyst/qrm_advisor";
  std::string qrm_state_dir_in_memory = "/dev/shm/qrm/state";
  bool qrm_enable_in_memory_state = false;
  bool skip_network_state_corruption = false;
  NetworkPolicy policy_name = NetworkPolicy::kStatic;

  // Machine-info flags.
  bool machine_net_multi_ns = false;
  std::string machine_net_ns_dir;  // Katalyst has no default; netqos falls back to /var/run/netns
  std::vector<std::string> machine_net_allocatable_ns{"*"};
  cgroup::CgroupDriver cgroup_type = cgroup::CgroupDriver::kCgroupfs;
  std::vector<std::string> addition_cgroup_paths;
  std::vector<std::string> net_attributes_keys;
  // (--network-resource-plugin-nic-health-checkers is read into policy.require_ip_address.)
  bool enable_nic_allocation_reactor = true;

  // netqos flags.
  std::string topology_file;  // "" = discover from the kernel (netlink + sysfs)
  // --nic-allow, --nic-deny and --nic-speed-override, for kernel discovery.
  topology::NicSelection nic_filter;
  bool print_topology = false;
  bool json = false;
  std::string kubelet_register_socket;
  // A kubelet GetInfo without a NotifyRegistrationStatus this long after is reported (one
  // warning, netqosctl status, netqos_kubelet_registration). Whole milliseconds, at least 1 s
  // (app/duration_flag.h).
  std::chrono::milliseconds kubelet_registration_timeout = std::chrono::seconds(60);
  NicSelection nic_selection = NicSelection::kRandom;
  LogLevel log_level = LogLevel::kInfo;
  bool print_config = false;

  // netqos operations: metrics and logs (docs/metrics.md).
  // host:port, e.g. 127.0.0.1:9465, parsed when the flags are read; nullopt (the flag empty): no
  // metrics listener. --print-config shows it as given.
  std::optional<metrics::BindAddress> metrics_bind_address;
  LogFormat log_format = LogFormat::kText;  // text, or json (one JSON object per line)
  // journal (one fsync'd record per change) or full-rewrite (Katalyst's whole-file rewrite per
  // change; a benchmark baseline, see docs/benchmarks.md).
  service::AllocationService::Durability checkpoint_mode =
      service::AllocationService::Durability::kJournal;
  // A full snapshot folds the journal in after this many journaled changes.
  uint64_t checkpoint_snapshot_every = 4096;
  // Whose Go types the snapshot's Katalyst checksum is computed for (docs/compatibility.md,
  // "Rolling back to Katalyst"): v0.5.3 (Katalyst v0.4.0-v0.5.20) or head (v0.5.21 on).
  checkpoint::KatalystLayout katalyst_checkpoint_layout = checkpoint::KatalystLayout::kV053;

  // netqos enforcement flags (eBPF classification + HTB shaping on cgroup v2).
  Enforcement enforcement = Enforcement::kBpf;
  std::string cgroup_root;  // "" = detect at startup (cgroup/fs/mount_detect.h)
  // (cgroup_type above is also set by --cgroup-driver.)
  PodSourceKind pod_source = PodSourceKind::kCri;
  // --cri-socket: auto (containerd's, else CRI-O's, looked up when the pod source is made),
  // unix:///path or /path; parsed when the flags are read, with --pod-source=cri.
  cri::CriSocket cri_socket;
  // --pod-source=kubelet only:
  // http://, https:// or file://, parsed when the flags are read with --pod-source=kubelet (with
  // the CRI source the default stays); its text is what messages and --print-config show.
  pods::KubeletUrl kubelet_pods_url{"https", "127.0.0.1", 10250, "/pods", kDefaultKubeletPodsUrl};
  std::string kubelet_token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  bool kubelet_insecure_skip_tls_verify = false;
  std::string kubelet_ca_file;  // "" = OpenSSL's default CAs (SSL_CERT_FILE, ...)
  // NRI (docs/nri.md): the runtime's NRI socket; "" = netqos is no NRI plugin.
  std::string nri_socket;
  // How long a StartContainer may wait for the container's class before the runtime is answered.
  uint32_t nri_event_budget_ms = 1000;
  // Refuse the start of a capped container whose class is not confirmed in place (docs/nri.md).
  bool nri_fail_closed = false;
  std::string bpf_pin_dir = bpf::kDefaultPinDir;
  EnforceNics enforce_nics;  // [netns/]name items or "all", parsed when read; see enforce_nics.h
  bool replace_root_qdisc = false;
  // netqos's qdiscs on an enforced NIC even while nothing on it is capped (HtbPlan::shapes).
  bool shape_idle_nics = false;
  shaping::ShapingMode shaping_mode = shaping::ShapingMode::kAuto;  // shaping/shaping_mode.h
  shaping::ContainerCeil container_ceil = shaping::ContainerCeil::kAllocation;
  // --qos-level-shaping (level=rate:ceil:prio), --qos-level-dscp (level=dscp), --qos-level-burst
  // (level=bytes|auto) and --dscp-default (auto, keep or a DSCP), parsed when the flags are read;
  // --print-config shows them as given. See shaping_flags.h.
  shaping::LevelShaping qos_level_shaping{};  // per QoS level; nullopt: the level's default
  enforce::LevelDscp qos_level_dscp{};        // per QoS level; nullopt: not marked
  enforce::LevelBurst qos_level_burst{};      // per QoS level, bytes; 0: the default bucket
  enforce::DscpDefault dscp_default;          // auto by default
  std::string tenant_policy_file;             // "" = the built-in tenant policy
  shaping::QosLevel unclassified_qos_level = shaping::QosLevel::kShared;
  bool low_priority_groups = false;               // see shaping_flags.h
  uint32_t low_priority_group_floor_percent = 5;  // Katalyst HEAD's constant
  std::chrono::milliseconds enforcement_resync_period = std::chrono::seconds(30);      // ditto
  std::chrono::milliseconds enforcement_full_resync_period = std::chrono::minutes(5);  // ditto
  bool uninstall = false;
  std::string check_tenant_policy;  // a file to validate, then exit
  // Set net.ipv4.ip_forward_update_priority=0 in the namespaces of the enforced NICs, so routed
  // pod traffic keeps the skb->priority (HTB class) the egress program gave it.
  bool set_forward_priority_sysctl = false;
  // Classify pods behind a CNI at the host end of their veths (enforce/veth_sync.h).
  bool pod_veths = true;
  NodeLocalTraffic node_local_traffic = NodeLocalTraffic::kExempt;

  // The directory the checkpoint lives in, after --qrm-enable-in-memory-state.
  std::string EffectiveStateDir() const {
    return qrm_enable_in_memory_state ? qrm_state_dir_in_memory : qrm_state_dir;
  }
  std::string NetnsDir() const {
    return machine_net_ns_dir.empty() ? "/var/run/netns" : machine_net_ns_dir;
  }
  // Where named namespaces are looked for: the flag, or both common locations (/var/run is a
  // symlink to /run on most hosts; duplicates are dropped by the topology source).
  std::vector<std::string> NetnsDirs() const {
    if (!machine_net_ns_dir.empty()) return {machine_net_ns_dir};
    return {"/var/run/netns", "/run/netns"};
  }
};

// Result of parsing the command line (and the --config file it names): either a config to run
// with, or an exit code (help, version and --print-config: kExitOk; a rejected command line or
// config file, whose message has already been printed to stderr: kExitUsage; app/exit_codes.h).
struct ParsedFlags {
  std::optional<DaemonConfig> config;
  int exit_code = 0;
};

ParsedFlags ParseDaemonFlags(int argc, const char* const* argv);

// Checks values the parser cannot (paths, URLs, selectors, rates) with messages naming the flag.
// The closed-choice settings need no check: their enums hold only accepted values.
Status ValidateDaemonConfig(const DaemonConfig& config);

}  // namespace netqos::app
