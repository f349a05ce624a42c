#include "app/daemon.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <system_error>
#include <vector>

#include "app/allocatable_namespaces.h"
#include "app/allocation_state.h"
#include "app/enforcement_setup.h"
#include "app/enforcement_start.h"
#include "app/enforcement_view.h"
#include "app/exit_codes.h"
#include "app/flag_choices.h"
#include "app/format_guard.h"
#include "app/logging.h"
#include "app/metrics_setup.h"
#include "app/nri_metrics.h"
#include "app/nri_plugin_setup.h"
#include "app/registration_watch.h"
#include "app/tenant_policy_file.h"
#include "app/topology_setup.h"
#include "core/constants.h"
#include "core/policy.h"
#include "enforce/tenant_rules.h"
#include "grpc/admin_service.h"
#include "grpc/kubelet_registrar.h"
#include "grpc/plugin_server.h"
#include "grpc/registration_service.h"
#include "grpc/resource_plugin_service.h"
#include "service/allocation_service.h"

namespace netqos::app {
namespace {

// Where the time to serve goes, for the "serving" log line: the kubelet waits for all of it
// (enforcement starts after it, "enforcement started after_ms=...").
class StartupPhases {
 public:
  // Ends the current phase as `name`.
  void Mark(const char* name) {
    const auto now = std::chrono::steady_clock::now();
    text_ += fmt::format(" {}_ms={}", name, Ms(now - last_));
    last_ = now;
  }
  std::chrono::steady_clock::time_point start() const { return start_; }
  std::string Text() const {
    return fmt::format("startup_ms={}{}", Ms(std::chrono::steady_clock::now() - start_), text_);
  }

 private:
  static long long Ms(std::chrono::steady_clock::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  }
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_ = start_;
  std::string text_;
};

// Half the registration timeout (so an unconfirmed registration is reported at most half a
// timeout late), at most 5 s.
timespec RegistrationPollInterval(std::chrono::milliseconds timeout) {
  const long ms = std::min(5000L, static_cast<long>(timeout.count() / 2));
  return timespec{ms / 1000, (ms % 1000) * 1000000L};
}

int Fail(const Status& st) {
  spdlog::critical("netqosd cannot start: {}", st.message());
  return kExitFailure;
}

}  // namespace

int RunDaemon(const DaemonConfig& config) {
  // Signals are taken synchronously by this thread; block them before any thread starts so
  // that no worker thread is picked to run a handler.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  SetupLogging(config.log_level, config.log_format);
  spdlog::info("netqosd starting enforcement={} state_dir={} topology={}",
               ChoiceName(config.enforcement, kEnforcementChoices), config.EffectiveStateDir(),
               config.topology_file.empty() ? std::string("kernel") : config.topology_file);

  // Before anything is read or attached: state that a newer netqosd left and this one would
  // misread (a rollback) stops the start here, naming the release and the way back.
  if (Status st = CheckFormatStamps(config, config.enforcement == Enforcement::kBpf); !st.ok()) {
    return Fail(st);
  }
  StartupPhases phases;
  auto choice = MakeTopologySource(config);
  if (!choice.ok()) return Fail(choice.status());
  core::TopologySource* source = choice->source.get();
  auto topo = source->Read();
  if (!topo.ok()) return Fail(topo.status());
  phases.Mark("topology");
  const std::vector<std::string> allocatable_ns = config.machine_net_allocatable_ns;

  auto policy = MakePolicy(config, std::move(*topo));
  if (!policy.ok()) return Fail(policy.status());
  for (const auto& nic : policy->nics()) {
    const auto& st = policy->machine_state().at(nic.id);
    spdlog::info(
        "nic nic={} speed_mbps={} numa={} egress_capacity={} ingress_capacity={} "
        "reservation={} healthy={}",
        nic.id.Identifier(), nic.speed_mbps, nic.numa_node, st.egress.capacity, st.ingress.capacity,
        st.egress.reservation, nic.healthy);
  }
  if (policy->nics().empty())
    spdlog::warn("no valid NICs on this node: every request gets no hint");

  auto svc = OpenAllocationState(config, std::move(*policy));
  if (!svc.ok()) return Fail(svc.status());
  StampStateDir(config);
  phases.Mark("state");

  // The tenant policy (--tenant-policy-file): read now, before the first Allocate, so that the
  // implicit-bandwidth grants hold from the start; re-read by its own thread when it changes.
  TenantPolicyFile tenant_policy(config.tenant_policy_file, std::chrono::seconds(2));
  (**svc).SetImplicitGrants(enforce::ImplicitGrantsOf(*tenant_policy.Policy()));

  // Enforcement starts after serving (enforcement_start.h): the kubelet waits for the topology
  // and the allocation state only. Taking the change listener now, before serving, keeps every
  // Allocate for the enforcer; what an earlier run pinned keeps enforcing meanwhile.
  std::unique_ptr<EnforcementStart> enforcement;
  if (config.enforcement == Enforcement::kBpf) {
    enforcement = std::make_unique<EnforcementStart>(
        config, **svc, phases.start(), [&tenant_policy] { return tenant_policy.Policy(); });
  }
  service::AllocationService* policy_service = svc->get();
  EnforcementStart* policy_enforcement = enforcement.get();
  tenant_policy.SetListener([policy_service, policy_enforcement](const enforce::TenantPolicy& p) {
    policy_service->SetImplicitGrants(enforce::ImplicitGrantsOf(p));
    if (policy_enforcement != nullptr) policy_enforcement->OnTenantPolicyChanged();
  });
  // Detaches the listener before `enforcement` goes, on every way out of here.
  struct DetachListener {
    TenantPolicyFile& file;
    ~DetachListener() { file.SetListener(nullptr); }
  } detach_listener{tenant_policy};
  // Without enforcement, allocations of pods the kubelet forgot to remove are still cleared after
  // 5 minutes (Katalyst HEAD does this whatever applies its net classes). When enforcement fails
  // to start, EnforcementStart starts it.
  std::unique_ptr<ResidualCleanup> residual_cleanup;
  if (!enforcement) {
    auto started = StartResidualCleanup(config, **svc);
    if (started.ok()) {
      residual_cleanup = std::move(*started);
    } else {
      spdlog::warn(
          "no residual state cleanup (allocations of pods that vanished without a "
          "RemovePod are kept): {}",
          started.status().message());
    }
  }
  // With enforcement off, the mode as the status API and metrics report it ("none"); with bpf,
  // EnforcementStart says "bpf" (starting or running) or "disabled".
  const std::string enforcement_mode(ChoiceName(config.enforcement, kEnforcementChoices));
  StackEnforcementView enforcement_view(
      [&enforcement, &enforcement_mode] {
        if (enforcement) return enforcement->State();
        EnforcementState off;
        off.mode = enforcement_mode;
        return off;
      },
      config.bpf_pin_dir);

  grpcadapter::ResourcePluginService::Options rp_opts;
  rp_opts.nic_name_annotation_key = config.policy.annotation_keys.nic_name;
  rp_opts.net_class_id_annotation_key = config.policy.annotation_keys.net_class_id;
  // Metrics (--metrics-bind-address, docs/metrics.md): null when off. RPCs are counted from the
  // first one; the listener starts once the plugin sockets are served.
  std::unique_ptr<metrics::DaemonMetrics> daemon_metrics =
      MakeDaemonMetrics(config, **svc, enforcement_view);
  rp_opts.rpc_observer = daemon_metrics.get();
  grpcadapter::ResourcePluginService resource_plugin(**svc, rp_opts);
  grpcadapter::RegistrationService registration;
  RegistrationWatch registration_watch(registration, config.kubelet_registration_timeout);
  if (daemon_metrics) {
    registration_watch.AddMetrics(daemon_metrics->registry());
    tenant_policy.AddMetrics(daemon_metrics->registry());
  }
  // The NRI session starts after the servers (it needs the enforcer); GetStatus reads it through
  // this, which shutdown clears before the session goes.
  NriStatusSource nri_status(config);
  grpcadapter::AdminService admin(
      **svc,
      {choice->description, &enforcement_view, config.qrm_socket_dirs,
       [&registration_watch] { return registration_watch.Health(); },
       [&tenant_policy] { return TenantPolicyReportOf(tenant_policy); },
       [&config] { return ReadFormatStamps(config, config.enforcement == Enforcement::kBpf); },
       config.nri_socket.empty() ? std::function<service::NriReport()>()
                                 : [&nri_status] { return nri_status.Report(); }});

  auto server = grpcadapter::PluginServer::Create(config.qrm_socket_dirs,
                                                  {&resource_plugin, &registration, &admin});
  if (!server.ok()) return Fail(server.status());

  std::unique_ptr<metrics::MetricsServer> metrics_server;
  if (daemon_metrics) {
    auto started = StartMetricsServer(config, *daemon_metrics, **svc, enforcement_view,
                                      (*server)->SocketPaths());
    if (!started.ok()) return Fail(started.status());
    metrics_server = std::move(*started);
  }

  std::unique_ptr<grpcadapter::KubeletRegistrar> registrar;
  if (!config.kubelet_register_socket.empty()) {
    registrar = std::make_unique<grpcadapter::KubeletRegistrar>(config.kubelet_register_socket,
                                                                (**svc).Options());
  }

  service::AllocationService* service_ptr = svc->get();
  if (Status st = source->Watch([service_ptr, allocatable_ns](core::Topology t) {
        Status u =
            service_ptr->UpdateTopology(FilterAllocatableNamespaces(std::move(t), allocatable_ns));
        if (!u.ok())
          spdlog::error("topology update rejected, keeping the previous one: {}", u.message());
      });
      !st.ok()) {
    spdlog::warn("topology changes will not be followed: {}", st.message());
  }

  phases.Mark("serve");
  spdlog::info("netqosd serving sockets={} {}", fmt::join((*server)->SocketPaths(), ","),
               phases.Text());
  // The dataplane opens, the pinned class map is adopted and the enforcer starts now, beside
  // serving ("enforcement started after_ms=..."); /readyz is not ready until its first pass.
  if (enforcement) enforcement->Start();
  // --nri-socket (docs/nri.md): the runtime waits for this plugin at each container start.
  std::unique_ptr<NriPlugin> nri;
  if (!config.nri_socket.empty() && enforcement) {
    EnforcementStart* starting = enforcement.get();
    nri = std::make_unique<NriPlugin>(
        NriSessionOptionsOf(config),
        [starting](const std::string& id, std::chrono::milliseconds timeout) {
          return starting->OnContainerStarting(id, timeout);
        },
        [service_ptr, level_ceilings = HasLevelCeilings(config)](const nri_plugin::NriPod& pod) {
          return CappedByNetqos(service_ptr->PodAllocations({pod.uid}), pod, level_ceilings);
        },
        starting);
    // Added while the endpoint serves: the registry takes collectors at any time.
    if (daemon_metrics) AddNriMetrics(daemon_metrics->registry(), nri->stats());
    nri_status.Set(nri.get());
  }
  // Woken by a signal, or every poll interval to look at the kubelet's registration.
  const timespec poll = RegistrationPollInterval(config.kubelet_registration_timeout);
  for (;;) {
    const int sig = sigtimedwait(&signals, nullptr, &poll);
    if (sig < 0) {
      registration_watch.Poll();  // timeout (EAGAIN) or EINTR
      continue;
    }
    if (sig == SIGHUP) {
      auto t = source->Read();
      Status st = t.ok() ? service_ptr->UpdateTopology(
                               FilterAllocatableNamespaces(std::move(*t), allocatable_ns))
                         : t.status();
      if (st.ok())
        spdlog::info("topology reloaded on SIGHUP");
      else
        spdlog::error("topology reload on SIGHUP failed, keeping the previous one: {}",
                      st.message());
      continue;
    }
    spdlog::info("netqosd stopping signal={}", sig);
    break;
  }
  // The metrics server first: its collectors read the NRI session's counters and
  // enforcement_view. Then the NRI session, before enforcement.reset(): its handler calls the
  // enforcer.
  metrics_server.reset();
  nri_status.Set(nullptr);
  nri.reset();
  registrar.reset();
  (*server)->Stop();
  // Waits for a start still running, then detaches the enforcer from the service and stops it.
  enforcement.reset();
  if (Status st = service_ptr->Flush(); !st.ok())
    spdlog::warn("final snapshot failed; the journal still holds every change: {}", st.message());
  spdlog::info("netqosd stopped");
  return 0;
}

}  // namespace netqos::app
