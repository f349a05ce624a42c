#include "enforce/enforcer.h"

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/log_value.h"
#include "enforce/desired_state.h"
#include "enforce/pod_addresses.h"

namespace netqos::enforce {
namespace {

// Retry interval for container cgroups that appeared before the kubelet listed their container
// (EnforcerInbox::RetryPending counts the retries).
constexpr auto kPendingRetry = std::chrono::seconds(1);
// Bursts of events (mkdir -p of a pod and its containers) are handled in one pass. Created
// containers alone cost little each, so they wait less: their reaction time is the point.
constexpr auto kCoalesce = std::chrono::milliseconds(20);
constexpr auto kCoalesceContainers = std::chrono::milliseconds(2);

// The kubepods root of the driver and every --addition-cgroup-paths root, under the mount.
std::vector<std::string> WatchRoots(const EnforcerOptions& o) {
  return cgroup::KubeletRoots(o.cgroup_mount, o.layout);
}

}  // namespace

Enforcer::WorkerState::WorkerState(const EnforcerOptions& options, const EnforcerPorts& ports)
    : resolver(options.cgroup_mount, options.layout, ports.cgroup_tree),
      sync(options.residual_class_grace),
      residual(options.residual_state_after),
      veths({ports.veth_source, ports.veth_table, ports.veth_attacher}) {}

Enforcer::Enforcer(EnforcerOptions options, EnforcerPorts ports)
    : options_(std::move(options)), ports_(std::move(ports)), own_(options_, ports_) {}

Result<std::unique_ptr<Enforcer>> Enforcer::Start(EnforcerOptions options, EnforcerPorts ports) {
  if (!ports.table || !ports.shaper || !ports.read_pods || !ports.snapshot) {
    return InvalidArgument("enforcer: missing port");
  }
  if (std::string missing = ports.cgroup_tree.Missing(); !missing.empty()) {
    return InvalidArgument("enforcer: the cgroup tree port has no " + missing);
  }
  std::unique_ptr<Enforcer> e(new Enforcer(std::move(options), std::move(ports)));
  auto current = e->ports_.table->List();
  if (!current.ok()) return current.status().Wrap("read the class map");
  e->own_.sync.Adopt(*current, e->Now());
  e->own_.veths.Adopt(*current);
  spdlog::info("enforcement adopting class_entries={}", current->size());
  // The first full pass runs on the worker (Loop), so that netqosd serves the kubelet at once
  // whatever the node's size: what is pinned keeps classifying and shaping meanwhile, and
  // readiness (Status().passes == 0) says the pass is not done.
  e->own_.next_resync = Clock::now() + e->options_.resync;
  e->own_.next_full = Clock::now() + e->options_.full_resync;
  e->own_.next_pods = Clock::now() + e->options_.pods_refresh;
  Enforcer* self = e.get();
  e->worker_ = std::thread([self] { self->Loop(); });
  return e;
}

void Enforcer::StartWatchers() {
  // Watch the kubelet's cgroup roots only (not the whole host tree): fewer inotify watches, and
  // no wake-ups for system services.
  if (!ports_.watch_cgroups) return;
  Enforcer* self = this;
  bool all = true;
  for (const auto& root : WatchRoots(options_)) {
    if (inbox_.stopping()) return;
    CgroupEventHandlers cb;
    // Each report also makes the next whole pass look the pod's cgroups up again (a cgroup
    // removed and made again under the same name has a new id).
    cb.on_created = [self](const std::string& path) {
      self->cgroup_changes_.Record(path);
      self->OnCgroupCreated(path);
    };
    cb.on_removed = [self](const std::string& path) {
      self->cgroup_changes_.Record(path);
      self->Wake();
    };
    cb.on_error = [self](const netqos::Status& st) {
      spdlog::warn(
          "cgroup watcher: {}; the periodic resync still applies, and looks every container's "
          "cgroup up again from now on",
          st.message());
      self->cgroup_changes_.Lost();
      self->Wake();
    };
    auto watch = ports_.watch_cgroups(root, std::move(cb));
    if (!watch.ok()) {
      // Enforcement still works through the periodic resync, only later.
      spdlog::warn("cgroup watcher not started for {}, new containers wait for the resync: {}",
                   root, watch.status().message());
      all = false;
      continue;
    }
    watches_.push_back(std::move(*watch));
  }
  own_.watching_all = all;
}

Enforcer::~Enforcer() { Stop(); }

void Enforcer::Stop() {
  inbox_.Stop();  // OnContainerStarting's waiters return false
  // The worker starts the watchers: once it is gone, they are no longer added to. Their
  // callbacks only flag work for a worker that no longer runs.
  if (worker_.joinable()) worker_.join();
  for (auto& w : watches_) w->Stop();
}

void Enforcer::Wake() {
  inbox_.RecordGeneral();  // every caller reports something only a whole pass handles
}

void Enforcer::OnAllocated(const std::string& pod_uid) {
  // Not a whole pass by itself: the kubelet allocates before the runtime starts the pod's
  // containers, whose cgroups then bring them in (AddContainers reads the newest allocation).
  // A whole pass at 10,000 containers takes hundreds of milliseconds, and one per Allocate
  // would hold back every new container behind it. Work decides once the pass in flight, if
  // any, has classified what it found (a pod already running needs its leaves changed).
  inbox_.RecordAllocated(pod_uid);
}

void Enforcer::OnPodRemoved(const std::string& pod_uid) { inbox_.RecordPodRemoved(pod_uid, Now()); }

void Enforcer::OnTopologyChanged() { Wake(); }

void Enforcer::OnTenantPolicyChanged() { Wake(); }

DesiredOptions Enforcer::PassOptions() const {
  DesiredOptions o = DesiredOptionsFor(options_.shaping, static_cast<bool>(options_.is_enforced));
  if (ports_.tenant_policy) o.tenant = ports_.tenant_policy();
  return o;
}

void Enforcer::OnCgroupCreated(const std::string& path) {
  auto name = ParseContainerCgroupPath(path);
  if (!name) return;  // pod, QoS and slice directories need nothing
  inbox_.RecordContainerCreated(name->container_id);
}

bool Enforcer::OnContainerStarting(const std::string& container_id,
                                   std::chrono::milliseconds timeout) {
  const uint64_t ticket = inbox_.RecordContainerStarting(container_id);
  if (!inbox_.AwaitWakeup(ticket, timeout)) return false;
  // What the wake-up that took the ticket published, or a later one's: never older.
  return board_.HasClass(container_id);
}

bool Enforcer::WaitUntilIdle(std::chrono::milliseconds timeout) {
  // The same barrier as OnContainerStarting's, with nothing recorded: the wake-up that takes the
  // ticket takes everything recorded before it. One that records more itself (a container that
  // needs a whole pass) leaves the inbox dirty, and the next round waits for that too.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const uint64_t ticket = inbox_.RequestWakeup();
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !inbox_.AwaitWakeup(ticket, left)) return false;
    if (inbox_.Idle()) return true;
  }
}

void Enforcer::OnRuntimePod(pods::PodInfo pod) {
  // No wake-up: the pod's first container brings one, which merges it before it classifies the
  // container (a pod already running gets its addresses at the next wake-up).
  inbox_.RuntimePod(std::move(pod));
}

void Enforcer::OnRuntimeContainer(const pods::PodInfo& pod, pods::ContainerInfo container) {
  inbox_.RuntimeContainer(pod, std::move(container));
}

void Enforcer::OnRuntimePodRemoved(const std::string& pod_uid) {
  inbox_.RuntimePodRemoved(pod_uid);
}

void Enforcer::OnRuntimeContainerRemoved(const std::string& pod_uid,
                                         const std::string& container_id) {
  // Its cgroup is gone already (the watcher took that); the pod list's next read drops it.
  inbox_.RuntimeContainerRemoved(pod_uid, container_id);
}

void Enforcer::MergeRuntimePods(PublishedState& published, bool force) {
  // Only the pods that changed between pod-list reads: this is on the new-container path. Their
  // new ids go into runtime_known beside the index rather than into a copy of a node's worth
  // (the inbox knows them already, from its own record of what the runtime said).
  published.AddRuntimeContainers(inbox_.MergeRuntimePodsInto(published.pods, force));
}

EnforcerStatus Enforcer::Status() const {
  EnforcerStatus s = board_.Status();
  s.problems = problems_.Active();
  s.problem_reports_total = problems_.total_reports();
  return s;
}

void Enforcer::RunPass(bool resync, bool full) {
  own_.kernel_failed.clear();
  own_.pass_failed = false;
  try {
    Work(resync, full);
  } catch (const std::exception& ex) {
    spdlog::error("enforcement pass failed: {}", ex.what());
    own_.pass_failed = true;
  } catch (...) {
    spdlog::error("enforcement pass failed with an unknown exception");
    own_.pass_failed = true;
  }
  board_.Publish([&](PublishedState& published) {
    EnforcerStatus& status = published.status;
    if (own_.pass_failed) ++status.pass_failures;
    for (KernelTarget target : own_.kernel_failed)
      ++status.kernel_failures[KernelTargetName(target)];
  });
  // After the status: a released OnContainerStarting reads what this wake-up published.
  inbox_.MarkDone(own_.wakeup_taken);
}

void Enforcer::Loop() {
  // Walking the cgroup roots to watch them takes a few hundred milliseconds at 10,000
  // containers, so it is done here rather than before serving; still before the first pass
  // lists the cgroups, so that none created in between goes unseen.
  StartWatchers();
  RunPass(true, true);
  own_.next_resync = Clock::now() + options_.resync;
  own_.next_full = Clock::now() + options_.full_resync;
  while (true) {
    Clock::time_point deadline = std::min(own_.next_resync, own_.next_pods);
    if (own_.retry_at) deadline = std::min(deadline, *own_.retry_at);
    const InboxWaiting waiting = inbox_.WaitForWork(deadline);
    if (waiting.stopping) break;
    const auto now = Clock::now();
    const bool resync = now >= own_.next_resync;
    // The resync due first at or after the full one's time (every one when full_resync <= resync).
    const bool full = resync && now >= own_.next_full;
    bool refresh = waiting.refresh_pods;
    if (now >= own_.next_pods) {
      refresh = true;
      own_.next_pods = now + options_.pods_refresh;
    }
    if (own_.retry_at && now >= *own_.retry_at) {
      refresh = true;
      own_.retry_at.reset();
    }
    if (refresh && !waiting.refresh_pods) inbox_.RequestPodRefresh();
    const bool containers_only = !resync && !refresh && !waiting.general;
    std::this_thread::sleep_for(containers_only ? kCoalesceContainers : kCoalesce);
    RunPass(resync, full);
    if (resync) own_.next_resync = Clock::now() + options_.resync;
    if (full) own_.next_full = Clock::now() + options_.full_resync;
  }
}

void Enforcer::Work(bool resync, bool full) {
  const auto started = std::chrono::steady_clock::now();
  PendingWork w;
  const InboxEvents events = inbox_.Take();
  own_.wakeup_taken = events.wakeup;
  // Before the created ids are looked up: a container the runtime told of is known then.
  board_.Publish([&](PublishedState& published) { MergeRuntimePods(published, false); });
  const std::vector<std::string>& created = events.created;
  const std::set<std::string>& allocated = events.allocated;
  const bool refresh = events.refresh_pods || resync || !own_.pods_known;
  w.general_event = events.general;
  w.resync_due = resync;
  w.full_due = full;
  w.baseline = own_.baseline;
  w.pods_read = refresh;
  // Only the full resync parses a list whose bytes are unchanged: the pass works from the pods
  // parsed last, which those bytes gave.
  if (refresh) w.pods_changed = RefreshPods(full, Now());
  w.unresolved = own_.unresolved;
  w.created_containers = created.size();
  // Low-priority groups are recomputed by whole passes only; pod_of_cgroup is the worker's:
  // what the last pass or AddContainers classified.
  w.allocation_needs_pass =
      !allocated.empty() && options_.shaping.low_priority_floor_percent.has_value();
  for (const auto& [cgroup_id, uid] : own_.pod_of_cgroup) {
    if (allocated.empty() || w.allocation_needs_pass) break;
    w.allocation_needs_pass = allocated.count(uid) != 0;
  }
  const PassScope scope = DecideScope(w);
  spdlog::debug("enforcement wake-up scope={} created={}", PassScopeName(scope), created.size());
  switch (scope) {
    case PassScope::kNothing:
      // A pod refresh with nothing else to do: a pod still without its veth may have one now.
      if (w.pods_read && own_.baseline && own_.veths.waiting()) SyncVethsBetweenPasses();
      return;
    case PassScope::kContainers:
      AddContainers(created);
      break;
    case PassScope::kAll:
    case PassScope::kResync:
    case PassScope::kFull:
      own_.pass_failed = !Pass(scope != PassScope::kAll, scope == PassScope::kFull);
      // A whole pass over thousands of pods leaves tens of MB of freed parse and resolve
      // buffers; hand them back so that the idle daemon's RSS is what it keeps.
      ::malloc_trim(0);
      break;
  }
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
  board_.Publish([&](PublishedState& published) {
    auto timed =
        published.status.pass_seconds.try_emplace(PassScopeName(scope), PassSecondsBounds()).first;
    timed->second.Observe(took.count());
  });
}

bool Enforcer::RefreshPods(bool force, Clock::time_point now) {
  auto read = ports_.read_pods(force);
  if (!read.ok()) {
    own_.pods_known = false;
    own_.pods_error = read.status().message();
    board_.Publish([](PublishedState& published) { ++published.status.pod_list_failures; });
    return true;
  }
  own_.pods_known = true;
  own_.pods_error.reset();
  if (read->has_value()) {
    board_.Publish([&](PublishedState& published) {
      published.pods = std::move(**read);
      MergeRuntimePods(published, true);
      // Even when the merge changed nothing: the pods are new.
      inbox_.PublishIndex(published.IndexContainers());
    });
  }
  // Cgroups seen before the kubelet listed their container: retry for a while.
  if (inbox_.RetryPending() != 0) own_.retry_at = now + kPendingRetry;
  return read->has_value();
}

Clock::time_point Enforcer::Now() const { return ports_.now ? ports_.now() : Clock::now(); }

ResolvedContainers Enforcer::ResolveContainers(const std::set<std::string>& tombstoned, bool full) {
  // Taken on every whole pass, so that what was reported before this resolve is never kept.
  const CgroupChangeSet changed = cgroup_changes_.Take();
  if (!own_.watching_all || full || changed.all) {
    own_.resolve_cache.ForgetAll();
    if (!own_.watching_all) return own_.resolver.Resolve(pods(), tombstoned);
  }
  for (const auto& uid : changed.pods) own_.resolve_cache.ForgetPod(uid);
  return own_.resolver.Resolve(pods(), tombstoned, &own_.resolve_cache);
}

// A whole pass, phase by phase: what is wanted (tombstones, containers, links), the class map,
// the pod addresses, each link's shaping, residual pods; then the status the views read.
bool Enforcer::Pass(bool resync, bool full) {
  const auto now = Now();
  problems_.BeginPass();
  if (own_.pods_error) problems_.Report(ProblemKind::kKubelet, "", *own_.pods_error);
  const std::set<std::string> tombstoned = ExpireTombstones(now);

  AllocationSnapshot snap = ports_.snapshot();
  const ResolvedContainers resolved = ResolveContainers(tombstoned, full);
  for (const auto& m : resolved.missing) spdlog::debug("container cgroup not found yet: {}", m);
  for (const auto& r : resolved.rejected)
    problems_.Report(ProblemKind::kPodList, r.substr(0, r.find(' ')), r);
  std::map<core::NicId, core::Nic> nic_of = EnforcedNics(snap.nics);
  std::vector<EnforcedLink> links;
  for (const auto& [id, nic] : nic_of) links.push_back({id, static_cast<uint64_t>(nic.speed_mbps)});

  auto current = ports_.table->List();
  if (!current.ok()) {
    problems_.Report(ProblemKind::kClassMap, "", current.status().message());
    KernelFailed(KernelTarget::kClassMap);
    problems_.EndPass();
    own_.baseline = false;  // what the map holds is unknown: no container is added on top of it
    return false;
  }
  std::map<uint64_t, uint32_t> current_priority;
  for (const auto& [id, e] : *current) current_priority[id] = e.priority;

  const DesiredOptions dopts = PassOptions();
  DesiredState desired =
      ComputeDesiredState(options_.policy, snap.allocations, resolved.containers, links,
                          current_priority, dopts, own_.minors, own_.annotated);
  own_.annotated = std::move(desired.annotated);
  for (const auto& p : desired.problems)
    problems_.Report(ProblemKind::kContainer, p.substr(0, p.find(':')), p);
  // The marks of pods classified at their veths, as the last pass left them: written unchanged.
  own_.veths.ApplyMarks(desired.by_cgroup);

  SyncClasses(desired.by_cgroup, *current, tombstoned, now);
  SyncAddresses(desired.by_cgroup);
  own_.pod_of_cgroup.clear();
  size_t capped = 0;
  for (const auto& [id, d] : desired.by_cgroup) {
    own_.pod_of_cgroup[id] = d.pod_uid();
    if (d.leaf_key) ++capped;
  }

  own_.links = std::move(links);
  own_.nic_of = std::move(nic_of);
  own_.egress_leaves = std::move(desired.egress);
  own_.ingress_leaves = std::move(desired.ingress);
  own_.egress_groups = std::move(desired.egress_groups);
  own_.ingress_groups = std::move(desired.ingress_groups);
  if (options_.shaping.low_priority_floor_percent) {
    auto groups = core::ComputeLowPriorityGroups(snap.machine_state, snap.allocations,
                                                 *options_.shaping.low_priority_floor_percent);
    for (const auto& [id, g] : groups) {
      auto old = own_.groups.find(id);
      if (old != own_.groups.end() && old->second == g) continue;
      spdlog::info("low-priority group nic={} egress_mbps={} ingress_mbps={}", id.Identifier(),
                   g.egress_mbps, g.ingress_mbps);
    }
    own_.groups = std::move(groups);
  }
  std::vector<std::string> shaped;
  std::map<std::string, shaping::ModeChoice> modes;
  std::vector<LinkLeaves> leaf_links;
  for (const auto& link : own_.links) {
    if (!ApplyLink(link, full)) continue;
    shaped.push_back(link.id.Identifier());
    const Applied& a = own_.applied.at(link.id);
    if (a.mode) modes[link.id.Identifier()] = *a.mode;
    leaf_links.push_back(LeavesOf(own_.nic_of.at(link.id), a));
  }
  SyncEdt();
  // After the links: a pod's veth redirects to its NIC's IFB, which the first apply makes.
  const VethSyncResult veths = SyncVeths(desired.by_cgroup, resync);
  for (const auto& [id, e] : veths.marked) desired.by_cgroup.at(id).entry = e;

  if (resync && own_.pods_known && ports_.remove_pod) DropResidualPods(snap.allocations, now);
  if (resync && ports_.guard_pod_roots && !own_.roots_guarded) {
    // A root that does not exist holds no pod: it is guarded at the resync after it appears.
    const netqos::Status st = ports_.guard_pod_roots();
    own_.roots_guarded = st.ok();
    if (!st.ok() && st.code() != StatusCode::kNotFound)
      problems_.Report(ProblemKind::kPodRoots, "", st.message());
  }
  problems_.EndPass();
  own_.unresolved = !resolved.missing.empty();
  own_.baseline = true;

  own_.refusals_counted.clear();
  for (const auto& [id, d] : desired.by_cgroup) {
    for (const auto& decision : d.decisions) {
      if (decision.verdict != TenantVerdict::kHonoured)
        own_.refusals_counted.insert({d.pod_uid(), decision.annotation});
    }
  }
  board_.Publish([&](PublishedState& published) {
    EnforcerStatus& status = published.status;
    ++status.passes;
    status.pods_known = own_.pods_known;
    status.classified = desired.by_cgroup.size();
    status.capped = capped;
    status.pod_veths = veths.veths;
    status.shaped_nics = std::move(shaped);
    status.shaping_modes = std::move(modes);
    status.classes = std::move(desired.by_cgroup);
    status.refused_annotations = std::move(desired.refused);
    published.leaf_links = std::move(leaf_links);
  });
  return true;
}

std::set<std::string> Enforcer::ExpireTombstones(Clock::time_point now) {
  std::set<std::string> listed;
  for (const auto& p : pods()) listed.insert(p.uid);
  return inbox_.ExpireTombstones(listed, own_.pods_known, now);
}

std::map<core::NicId, core::Nic> Enforcer::EnforcedNics(const std::vector<core::Nic>& nics) {
  std::map<core::NicId, core::Nic> out;
  if (!options_.is_enforced) return out;
  for (const auto& nic : nics) {
    if (!options_.is_enforced(nic)) continue;
    if (nic.ifindex <= 0) {
      problems_.Report(ProblemKind::kNic, nic.id.Identifier(),
                       "not present (no ifindex); its shaping waits for it");
    } else if (nic.speed_mbps <= 0) {
      problems_.Report(ProblemKind::kNic, nic.id.Identifier(),
                       "link speed unknown; give it with --nic-speed-override to shape it");
    } else {
      out[nic.id] = nic;
    }
  }
  for (const auto& want : options_.enforce_names) {
    const bool found =
        std::any_of(nics.begin(), nics.end(), [&](const core::Nic& n) { return n.id == want; });
    if (!found) {
      problems_.Report(ProblemKind::kNic, want.Identifier(),
                       "named in --enforce-nics but not a NIC of the topology (missing, or not "
                       "counted: see --nic-allow and netqosd --print-topology)");
    }
  }
  return out;
}

void Enforcer::SyncClasses(const std::map<uint64_t, DesiredContainer>& desired,
                           const std::map<uint64_t, ClassEntry>& current,
                           const std::set<std::string>& tombstoned, Clock::time_point now) {
  // Only entries nobody wants are judged by whether their cgroup still exists: the tree (every
  // cgroup of the host) is walked only when there are some.
  const bool undesired = std::any_of(current.begin(), current.end(),
                                     [&](const auto& kv) { return desired.count(kv.first) == 0; });
  Result<std::set<uint64_t>> live = std::set<uint64_t>();
  if (undesired) live = ports_.cgroup_tree.list_ids(options_.cgroup_mount);
  if (!live.ok()) problems_.Report(ProblemKind::kCgroupTree, "", live.status().message());
  std::set<uint64_t> evict;
  for (const auto& [id, uid] : own_.pod_of_cgroup) {
    if (tombstoned.count(uid) != 0) evict.insert(id);
  }
  SyncInputs in;
  in.desired = &desired;
  in.live_cgroups = live.ok() ? &*live : nullptr;
  in.pods_known = own_.pods_known;
  in.evict_now = &evict;
  in.now = now;
  const SyncReport report = own_.sync.Sync(*ports_.table, current, in);
  if (!report.errors.empty()) KernelFailed(KernelTarget::kClassMap);
  for (size_t i = 0; i < report.errors.size(); ++i) {
    problems_.Report(ProblemKind::kCgroup, std::to_string(report.failed_ids[i]),
                     report.errors[i].message());
  }
  if (report.set > 0 || report.cleared > 0) {
    spdlog::info("class map synced set={} cleared={} kept_in_grace={} entries={}", report.set,
                 report.cleared, report.kept_in_grace, desired.size());
  }
}

// Residual state (as Katalyst cleans it up): allocations of pods the kubelet stopped listing are
// dropped after a while, on full passes with a good pod list only.
void Enforcer::DropResidualPods(const core::PodEntries& allocations, Clock::time_point now) {
  std::set<std::string> listed, allocated;
  for (const auto& p : pods()) listed.insert(p.uid);
  for (const auto& [uid, entries] : allocations) allocated.insert(uid);
  for (const auto& m : own_.residual.Pass(allocated, listed, now)) {
    spdlog::info("pod has allocations but the kubelet does not list it pod={} since_s={}",
                 LogValue(m.uid), m.missing_for.count());
    if (!m.due) continue;
    if (auto st = ports_.remove_pod(m.uid); st.ok()) {
      spdlog::info("cleared residual pod pod={} from the state", LogValue(m.uid));
      own_.residual.Forget(m.uid);
    } else {
      problems_.Report(ProblemKind::kPod, m.uid,
                       "clearing residual allocations failed: " + st.message());
    }
  }
}

void Enforcer::SyncAddresses(const std::map<uint64_t, DesiredContainer>& classes) {
  if (ports_.addresses == nullptr) return;
  auto current = ports_.addresses->List();
  if (!current.ok()) {
    problems_.Report(ProblemKind::kPodAddressMap, "", current.status().message());
    KernelFailed(KernelTarget::kPodAddressMap);
    return;
  }
  const PodAddressPlan plan = PlanPodAddresses(pods(), classes);
  for (const auto& p : plan.problems) problems_.Report(p);
  const PodAddressSyncReport r = SyncPodAddresses(*ports_.addresses, *current, plan);
  if (!r.errors.empty()) KernelFailed(KernelTarget::kPodAddressMap);
  for (const auto& e : r.errors) problems_.Report(ProblemKind::kPodAddressMap, "", e.message());
  if (r.set > 0 || r.cleared > 0) {
    spdlog::info("pod addresses synced set={} cleared={} entries={}", r.set, r.cleared,
                 plan.entries.size());
  }
}

QueueSnapshot Enforcer::QueueStats() const {
  if (!ports_.read_class_stats) return {};
  const EnforcerStatusBoard::Leaves leaves = board_.LeafLinks();
  std::vector<Result<LinkClassStats>> readings;
  for (const auto& link : leaves.links) {
    readings.push_back(ports_.read_class_stats(link.nic));
  }
  QueueSnapshot snap = AttributeLeafQueues(leaves.links, readings, leaves.classes);
  // Scrapes come every few seconds: log a failure when it starts, changes or clears, not each time.
  std::string errors;
  for (const auto& e : snap.errors) errors += (errors.empty() ? "" : "; ") + e;
  std::lock_guard<std::mutex> lock(stats_log_mu_);
  if (errors != stats_error_logged_) {
    if (errors.empty()) {
      spdlog::info("htb queue counters readable again");
    } else {
      spdlog::warn("htb queue counters not read: {}", errors);
    }
    stats_error_logged_ = errors;
  }
  return snap;
}

}  // namespace netqos::enforce
