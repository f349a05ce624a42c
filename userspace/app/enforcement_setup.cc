#include "app/enforcement_setup.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "app/allocation_state.h"
#include "app/capability_check.h"
#include "app/enforce_nics.h"
#include "app/flag_choices.h"
#include "app/format_guard.h"
#include "app/shaping_flags.h"
#include "bpf/bpffs.h"
#include "bpf/veth_attach.h"
#include "cgroup/cgroup_paths.h"
#include "cgroup/fs/cgroup_dirs.h"
#include "cgroup/fs/mount_detect.h"
#include "enforce/desired_state.h"
#include "enforce/kernel/inotify_cgroup_watch.h"
#include "enforce/kernel/kernel_class_stats.h"
#include "enforce/pod_annotation_keys.h"
#include "os/capabilities.h"
#include "pods/cri/cri_endpoint.h"
#include "pods/cri/cri_pod_source.h"
#include "pods/deferred_pod_source.h"
#include "pods/kubelet/kubelet_pods_client.h"
#include "pods/pod_list_reader.h"
#include "shaping/netlink/qdisc_probe.h"
#include "shaping/shaping_mode.h"

namespace netqos::app {
namespace {

Result<std::string> CgroupMount(const DaemonConfig& config) {
  if (!config.cgroup_root.empty()) return config.cgroup_root;
  auto detected = cgroup::DetectCgroup2Mount();
  if (!detected.ok()) {
    return detected.status().Wrap(
        "no cgroup v2 mount found (give --cgroup-root, or run with "
        "--enforcement=none)");
  }
  return *detected;
}

Result<std::unique_ptr<pods::PodSource>> MakePodSourceNow(const DaemonConfig& config) {
  pods::PodListOptions options = PodSourceOptionsOf(config);
  if (config.pod_source == PodSourceKind::kKubelet) {
    pods::KubeletPodsClientOptions po;
    po.url = config.kubelet_pods_url;
    po.token_file = config.kubelet_token_file;
    po.insecure_skip_tls_verify = config.kubelet_insecure_skip_tls_verify;
    po.ca_file = config.kubelet_ca_file;
    auto client = pods::KubeletPodsClient::Create(po);
    if (!client.ok()) return client.status().Wrap("--kubelet-pods-url");
    std::shared_ptr<pods::KubeletPodsClient> c = std::move(*client);  // the reader owns it
    return std::unique_ptr<pods::PodSource>(std::make_unique<pods::PodListReader>(
        [c] { return c->FetchPodList(); }, config.kubelet_pods_url.text, std::move(options)));
  }
  auto endpoint = cri::ResolveCriEndpoint(config.cri_socket);
  if (!endpoint.ok()) return endpoint.status().Wrap("--cri-socket");
  cri::GrpcCriRuntimeOptions ro;
  ro.endpoint = *endpoint;
  return std::unique_ptr<pods::PodSource>(std::make_unique<cri::CriPodSource>(
      cri::NewGrpcCriRuntime(ro), *endpoint, std::move(options)));
}

}  // namespace

pods::PodListOptions PodSourceOptionsOf(const DaemonConfig& config) {
  pods::PodListOptions options;
  options.annotation_keys = enforce::PodAnnotationKeys(config.policy);
  return options;
}

Result<std::unique_ptr<pods::PodSource>> MakePodSource(const DaemonConfig& config) {
  auto made = MakePodSourceNow(config);
  if (made.ok() || made.status().code() == StatusCode::kInvalidArgument) return made;
  spdlog::warn("pod source not available yet, tried again on every read: {}",
               made.status().message());
  return std::unique_ptr<pods::PodSource>(std::make_unique<pods::DeferredPodSource>(
      [config] { return MakePodSourceNow(config); },
      (config.pod_source == PodSourceKind::kKubelet
           ? config.kubelet_pods_url.text
           : "cri:" + (config.cri_socket.Auto() ? "auto" : config.cri_socket.endpoint)) +
          " (not available yet)"));
}

std::string InstalledLinksRecordPath(const DaemonConfig& config) {
  return config.qrm_state_dir + "/netqos-enforced-links.json";
}

Result<std::unique_ptr<EnforcementStack>> StartEnforcement(
    const DaemonConfig& config, service::AllocationService& service,
    std::function<std::shared_ptr<const enforce::TenantPolicy>()> tenant_policy) {
  const EnforceNics& nics = config.enforce_nics;
  auto shaping = BuildShapingConfig(config);
  if (!shaping.ok()) return shaping.status();
  auto mount = CgroupMount(config);
  if (!mount.ok()) return mount.status();

  auto mounted = bpf::EnsureBpffs(config.bpf_pin_dir);
  if (!mounted.ok()) return mounted.status().Wrap("--bpf-pin-dir");
  if (*mounted) spdlog::info("mounted a bpffs for pin_dir={}", config.bpf_pin_dir);
  // Before anything is loaded (the bpffs is checked first: it needs no capability unless netqosd
  // mounts one): a container without a capability it needs is told which one.
  if (auto effective = os::EffectiveCapabilities(); effective.ok()) {
    const bool named_netns = config.machine_net_multi_ns ||
                             std::any_of(nics.nics.begin(), nics.nics.end(),
                                         [](const core::NicId& n) { return !n.netns.empty(); });
    auto caps = CheckCapabilities(CapabilitiesNeeded(true, named_netns), *effective);
    if (!caps.ok()) return caps;
  } else {
    spdlog::warn("capabilities not checked: {}", effective.status().message());
  }

  auto stack = std::make_unique<EnforcementStack>();
  stack->cgroup_root = *mount;
  bpf::Dataplane::Options dp;
  dp.pin_dir = config.bpf_pin_dir;
  // The cgroup v2 root: every container below it, whatever the driver or extra roots, is seen;
  // traffic of cgroups without an entry only costs one hash lookup.
  dp.cgroup_path = *mount;
  cgroup::CgroupLayout layout;
  layout.driver = config.cgroup_type;
  layout.additional_roots = config.addition_cgroup_paths;
  // Qdisc bypass and AF_XDP are refused to every pod, classified yet or not.
  dp.pod_roots = cgroup::KubeletRoots(*mount, layout);
  auto dataplane = bpf::Dataplane::Open(dp);
  if (!dataplane.ok()) return dataplane.status().Wrap("load the eBPF dataplane");
  stack->dataplane = std::move(*dataplane);
  StampPinDir(config.bpf_pin_dir);
  for (const auto& line : stack->dataplane->migration().Describe()) {
    spdlog::info("migrated an older map layout {}", line);
  }
  stack->table = std::make_unique<enforce::BpfClassTable>(*stack->dataplane);
  stack->addresses = std::make_unique<enforce::BpfPodAddressTable>(*stack->dataplane);
  if (std::string(stack->dataplane->SockoptProgramName()) != "netqos_sockopt") {
    spdlog::warn(
        "this kernel's cgroup/setsockopt programs cannot look at cgroup ancestors: "
        "processes in cgroups below a container's own may still set "
        "PACKET_QDISC_BYPASS program={}",
        stack->dataplane->SockoptProgramName());
  }

  enforce::KernelLinkShaperOptions so;
  so.pin_dir = config.bpf_pin_dir;
  so.record_path = InstalledLinksRecordPath(config);
  so.replace_root_qdisc = config.replace_root_qdisc;
  so.keep_forwarded_priority = config.set_forward_priority_sysctl;
  so.redirect_unclassified =
      enforce::DesiredOptionsFor(*shaping, true)
          .ingress_level_limited[static_cast<size_t>(shaping->default_level)];
  so.unmarked_dscp = shaping->unmarked_dscp;
  so.mode = config.shaping_mode;
  so.htb_only = shaping::HtbOnlyFeatures(*shaping);
  if (so.mode != shaping::ShapingMode::kHtb && !nics.empty()) {
    so.fq = shaping::ProbeQdiscKind("fq");
    spdlog::info("shaping mode={} fq_available={} fq_probe=\"{}\"",
                 shaping::ShapingModeName(config.shaping_mode), so.fq.available, so.fq.reason);
    // Said once here; each NIC's status and metrics say it again with its own mode.
    const std::string features = fmt::format("{}", fmt::join(so.htb_only, ","));
    if (!so.htb_only.empty() && so.mode == shaping::ShapingMode::kEdt) {
      spdlog::warn("requested but inactive on edt NICs (only htb does them) features={}", features);
    } else if (!so.htb_only.empty()) {
      spdlog::info("shaping mode auto picks htb on every NIC for features={}", features);
    }
  }
  stack->shaper = std::make_unique<enforce::KernelLinkShaper>(so);
  stack->edt = std::make_unique<enforce::BpfEdtRateTable>(*stack->dataplane);
  stack->edt_aggregates = std::make_unique<enforce::BpfEdtAggregateTable>(*stack->dataplane);
  // Without --pod-veths the table and attacher still take away what an earlier run placed.
  if (config.pod_veths) stack->veth_source = std::make_unique<enforce::NetlinkVethSource>();
  stack->veth_table = std::make_unique<enforce::BpfVethTable>(*stack->dataplane);
  stack->veth_attacher = std::make_unique<enforce::KernelVethAttacher>(bpf::VethProgramOptions{
      config.bpf_pin_dir, config.node_local_traffic == NodeLocalTraffic::kShaped});

  auto pods = MakePodSource(config);
  if (!pods.ok()) return pods.status();
  stack->pods = std::move(*pods);

  enforce::EnforcerOptions eo;
  eo.policy = config.policy;
  eo.pods_source = stack->pods->Describe();
  eo.cgroup_mount = *mount;
  eo.layout = layout;
  if (!nics.empty()) {
    eo.is_enforced = [set = nics](const core::Nic& nic) { return set.Contains(nic.id); };
    eo.enforce_names = nics.nics;
  }
  eo.shaping = *shaping;
  eo.resync = config.enforcement_resync_period;
  eo.full_resync = config.enforcement_full_resync_period;
  eo.pods_refresh = std::min<std::chrono::milliseconds>(eo.resync, std::chrono::seconds(5));

  enforce::EnforcerPorts ports;
  pods::PodSource* source = stack->pods.get();
  ports.read_pods = [source](bool force) { return source->Read(force); };
  ports.snapshot = [&service] {
    auto view = service.Snapshot();
    return enforce::AllocationSnapshot{std::move(view.pod_entries), std::move(view.topology_nics),
                                       std::move(view.machine_state)};
  };
  ports.pod_allocations = [&service](const std::vector<std::string>& uids) {
    return service.PodAllocations(uids);
  };
  ports.remove_pod = [&service](const std::string& uid) { return service.RemovePod(uid); };
  ports.table = stack->table.get();
  ports.shaper = stack->shaper.get();
  ports.addresses = stack->addresses.get();
  ports.edt = stack->edt.get();
  ports.edt_aggregates = stack->edt_aggregates.get();
  ports.read_class_stats = enforce::ReadKernelClassStats;
  ports.cgroup_tree = {cgroup::ResolveCgroupDir, cgroup::CgroupId, cgroup::ListCgroupIds};
  ports.watch_cgroups = enforce::WatchCgroupsWithInotify;
  ports.tenant_policy = std::move(tenant_policy);
  ports.veth_source = stack->veth_source.get();
  ports.veth_table = stack->veth_table.get();
  ports.veth_attacher = stack->veth_attacher.get();
  bpf::Dataplane* plane = stack->dataplane.get();
  ports.guard_pod_roots = [plane, roots = dp.pod_roots] { return plane->GuardPodRoots(roots); };

  spdlog::info(
      "enforcement starting pin_dir={} cgroup_root={} driver={} pods={} "
      "enforce_nics={}",
      config.bpf_pin_dir, *mount, ChoiceName(config.cgroup_type, kCgroupDriverChoices),
      stack->pods->Describe(),
      nics.empty() ? std::string("none (classify and count only)")
                   : fmt::format("{}", fmt::join(nics.Items(), ",")));
  auto enforcer = enforce::Enforcer::Start(std::move(eo), std::move(ports));
  if (!enforcer.ok()) return enforcer.status();
  stack->enforcer = std::move(*enforcer);
  return stack;
}

void ForwardChange(enforce::Enforcer& enforcer, const service::AllocationService::ChangeEvent& ev) {
  using Kind = service::AllocationService::ChangeEvent::Kind;
  switch (ev.kind) {
    case Kind::kAllocated:
      enforcer.OnAllocated(ev.pod_uid);
      break;
    case Kind::kPodRemoved:
      enforcer.OnPodRemoved(ev.pod_uid);
      break;
    case Kind::kTopology:
      enforcer.OnTopologyChanged();
      break;
  }
}

Result<std::unique_ptr<ResidualCleanup>> StartResidualCleanup(const DaemonConfig& config,
                                                              service::AllocationService& service) {
  auto cleanup = std::make_unique<ResidualCleanup>();
  auto pods = MakePodSource(config);
  if (!pods.ok()) return pods.status();
  cleanup->pods = std::move(*pods);
  ResidualSweeper::Ports ports;
  pods::PodSource* source = cleanup->pods.get();
  ports.read_pods = [source](bool force) { return source->Read(force); };
  ports.allocated = [&service] {
    std::set<std::string> uids;
    for (const auto& [uid, entries] : service.Snapshot().pod_entries) uids.insert(uid);
    return uids;
  };
  ports.remove_pod = [&service](const std::string& uid) { return service.RemovePod(uid); };
  cleanup->sweeper =
      std::make_unique<ResidualSweeper>(ResidualSweeper::Options{}, std::move(ports));
  cleanup->sweeper->Start();
  spdlog::info("residual state cleanup without enforcement pods={}", cleanup->pods->Describe());
  return cleanup;
}

int Uninstall(const DaemonConfig& config) {
  // A newer netqosd's state is that netqosd's to remove: this one may not know all of it.
  if (Status st = CheckFormatStamps(config, /*pins=*/true); !st.ok()) {
    spdlog::critical("uninstall refused: {}", st.message());
    return 1;
  }
  int rc = 0;
  std::vector<enforce::InstalledLink> extra;
  for (const auto& id : config.enforce_nics.nics) {
    enforce::InstalledLink l;
    l.netns = id.netns;
    l.netns_path = id.netns.empty() ? "" : config.NetnsDir() + "/" + id.netns;
    l.name = id.name;
    extra.push_back(std::move(l));
  }
  // The pods' veths first: their redirects point at the IFBs removed next.
  if (auto cleaned = bpf::DetachAllVeths(); !cleaned.ok()) {
    spdlog::error("uninstall: pod veth programs not fully removed: {}", cleaned.status().message());
    rc = 1;
  } else if (*cleaned > 0) {
    spdlog::info("uninstall: pod veth programs removed veths={}", *cleaned);
  }
  if (Status st = enforce::RemoveInstalledLinks(InstalledLinksRecordPath(config), extra);
      !st.ok()) {
    spdlog::error("uninstall: shaping not fully removed: {}", st.message());
    rc = 1;
  }
  if (Status st = bpf::Dataplane::Uninstall(config.bpf_pin_dir); !st.ok()) {
    spdlog::error("uninstall: eBPF dataplane not fully removed: {}", st.message());
    rc = 1;
  }
  if (rc == 0) spdlog::info("uninstall: netqos enforcement removed pin_dir={}", config.bpf_pin_dir);
  // A rollback to Katalyst reads only the snapshot: fold the journal into it.
  if (Status st = FoldCheckpointForRollback(config); !st.ok()) {
    spdlog::error(
        "uninstall: checkpoint not folded, Katalyst would load it without the changes "
        "since its last snapshot: {}",
        st.message());
    rc = 1;
  }
  // Everything this netqosd wrote is gone or folded: an older one may take over.
  if (rc == 0) {
    if (Status st = RemoveStateStamps(config); !st.ok()) {
      spdlog::error("uninstall: format stamp not removed: {}", st.message());
      rc = 1;
    }
  }
  return rc;
}

}  // namespace netqos::app
