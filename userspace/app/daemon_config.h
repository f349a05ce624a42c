// DaemonConfig: every netqosd flag. Katalyst's flag names and defaults are kept so existing
// DaemonSet arguments work unchanged; flags netqos adds are marked "netqos".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bpf/pinned_maps.h"  // kDefaultPinDir
#include "common/status.h"
#include "core/config.h"

namespace netqos::app {

struct DaemonConfig {
  core::PolicyConfig policy;

  // Generic QRM flags.
  std::vector<std::string> qrm_socket_dirs{"/var/lib/kubelet/plugins_registry"};
  std::string qrm_state_dir = "/var/lib/katalyst/qrm_advisor";
  std::string qrm_state_dir_in_memory = "/dev/shm/qrm/state";
  bool qrm_enable_in_memory_state = false;
  bool skip_network_state_corruption = false;
  std::string policy_name = "static";

  // Machine-info flags.
  bool machine_net_multi_ns = false;
  std::string machine_net_ns_dir;  // Katalyst has no default; netqos falls back to /var/run/netns
  std::vector<std::string> machine_net_allocatable_ns{"*"};
  std::string cgroup_type = "cgroupfs";
  std::vector<std::string> addition_cgroup_paths;
  std::vector<std::string> net_attributes_keys;
  std::vector<std::string> nic_health_checkers{"*"};
  bool enable_nic_allocation_reactor = true;

  // netqos flags.
  std::string topology_file;  // "" = discover from the kernel (netlink + sysfs)
  std::vector<std::string> nic_allow;
  std::vector<std::string> nic_deny;
  std::vector<std::string> nic_speed_overrides;  // NAME=MBPS
  bool print_topology = false;
  bool json = false;
  std::string kubelet_register_socket;
  // A kubelet GetInfo without a NotifyRegistrationStatus this long after is reported (one
  // warning, netqosctl status, netqos_kubelet_registration).
  int kubelet_registration_timeout_seconds = 60;
  std::string nic_selection = "random";
  std::string log_level = "info";
  bool print_config = false;

  // netqos operations: metrics and logs (docs/metrics.md).
  std::string metrics_bind_address;  // "" = no metrics listener; host:port, e.g. 127.0.0.1:9465
  std::string log_format = "text";   // "text" or "json" (one JSON object per line)
  // "journal" (one fsync'd record per change) or "full-rewrite" (Katalyst's whole-file rewrite
  // per change; a benchmark baseline, see docs/benchmarks.md).
  std::string checkpoint_mode = "journal";
  // A full snapshot folds the journal in after this many journaled changes.
  uint64_t checkpoint_snapshot_every = 4096;
  // Whose Go types the snapshot's Katalyst checksum is computed for (docs/compatibility.md,
  // "Rolling back to Katalyst"): "v0.5.3" (Katalyst v0.4.0-v0.5.20) or "head" (v0.5.21 on).
  std::string katalyst_checkpoint_layout = "v0.5.3";

  // netqos enforcement flags (eBPF classification + HTB shaping on cgroup v2).
  std::string enforcement = "bpf";  // "bpf" or "none" (allocation only)
  std::string cgroup_root;          // "" = detect at startup (cgroup/mount_detect.h)
  // (cgroup_type above is also set by --cgroup-driver.)
  // Where the node's pods come from (cgroup/pod_source.h): "cri", the container runtime's socket
  // (no cluster credential), or "kubelet", its GET /pods (needs nodes/proxy; opt-in).
  std::string pod_source = "cri";
  std::string cri_socket = "auto";  // auto (containerd's, else CRI-O's), unix:///path or /path
  // --pod-source=kubelet only:
  std::string kubelet_pods_url = "https://127.0.0.1:10250/pods";  // http://, https:// or file://
  std::string kubelet_token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  bool kubelet_insecure_skip_tls_verify = false;
  std::string kubelet_ca_file;  // "" = OpenSSL's default CAs (SSL_CERT_FILE, ...)
  std::string bpf_pin_dir = bpf::kDefaultPinDir;
  std::vector<std::string> enforce_nics;  // [netns/]name items or "all"; see enforce_nics.h
  bool replace_root_qdisc = false;
  std::string shaping_mode = "auto";           // auto, htb or edt; see shaping/shaping_mode.h
  std::vector<std::string> qos_level_shaping;  // level=rate:ceil:prio; see shaping_flags.h
  std::string unclassified_qos_level = "shared_cores";
  bool low_priority_groups = false;               // see shaping_flags.h
  uint32_t low_priority_group_floor_percent = 5;  // Katalyst HEAD's constant
  int enforcement_resync_seconds = 30;
  bool uninstall = false;
  // Set net.ipv4.ip_forward_update_priority=0 in the namespaces of the enforced NICs, so routed
  // pod traffic keeps the skb->priority (HTB class) the egress program gave it.
  bool set_forward_priority_sysctl = false;

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

// Result of parsing the command line: either a config to run with, or an exit code (help,
// version, or a rejected flag whose message has already been printed to stderr).
struct ParsedFlags {
  std::optional<DaemonConfig> config;
  int exit_code = 0;
};

ParsedFlags ParseDaemonFlags(int argc, const char* const* argv);

// Checks values the parser cannot (enumerations, selectors, rates) with messages naming the flag.
Status ValidateDaemonConfig(const DaemonConfig& config);

}  // namespace netqos::app
