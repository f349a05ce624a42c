// Enforcer::AddContainers: the reaction to container cgroups appearing, which is the common event
// on a busy node. Only the new containers are resolved, planned and written (their class entries,
// and their leaves on the links they are capped on), on top of what the last whole pass computed;
// nothing else is listed or diffed. Whatever this path cannot settle (a cgroup not found, a class
// map write failing) is left to the next whole pass.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "enforce/enforcer.h"
#include "enforce/new_container_plan.h"

namespace netqos::enforce {

void Enforcer::AddContainers(const std::vector<std::string>& container_ids) {
  const std::set<std::string> tombstoned = inbox_.Tombstoned();
  // The pods, the container index and the classes change on this thread only: read without the
  // board's lock (which guards their writes, for the other threads' reads).
  const PublishedState& own = board_.worker();
  std::vector<ObservedContainer> found;
  bool routed_pod = false;  // a new container's pod has addresses of its own
  // A container of a namespace with an aggregate changes its aggregate's class (its rate, and
  // the share of each level): a whole pass places it.
  const DesiredOptions dopts = PassOptions();
  bool aggregated = false;
  for (const auto& id : container_ids) {
    const ContainerRef* ref = own.FindContainer(id);
    if (ref == nullptr) continue;
    const pods::PodInfo& pod = own.pods[ref->pod];
    if (tombstoned.count(pod.uid) != 0) continue;
    auto o = own_.resolver.ResolveOne(pod, pod.containers[ref->container]);
    if (!o) {
      own_.unresolved = true;  // the next pod-list refresh runs a whole pass
      continue;
    }
    if (own.status.classes.count(o->cgroup_id) != 0) continue;
    if (dopts.tenant && dopts.tenant->For(o->pod_namespace()).aggregate.any()) {
      aggregated = true;
      continue;
    }
    routed_pod = routed_pod || (!pod.host_network && !pod.ips.empty());
    found.push_back(std::move(*o));
  }
  if (aggregated) inbox_.RecordGeneral();
  if (found.empty()) return;

  // The newest allocations of these pods, read now: an Allocate since the last pass counts too.
  std::vector<std::string> uids;
  for (const auto& c : found) uids.push_back(c.pod_uid());
  const core::PodEntries allocations =
      ports_.pod_allocations ? ports_.pod_allocations(uids) : ports_.snapshot().allocations;
  std::set<core::NicId> changed_links;
  std::map<core::NicId, std::vector<shaping::ContainerAllocation>> new_egress;
  std::map<uint64_t, DesiredContainer> added;
  for (const auto& c : found) {
    NewContainerPlan plan = PlanNewContainer(options_.policy, allocations, c, own_.links, dopts,
                                             own_.minors, own_.annotated);
    for (const auto& p : plan.problems) {
      problems_.Report(ProblemKind::kContainer, p.substr(0, p.find(':')), p);
    }
    if (!plan.desired) continue;
    if (netqos::Status st = ports_.table->Set(c.cgroup_id, plan.desired->entry); !st.ok()) {
      KernelFailed(KernelTarget::kClassMap);
      // Worded as ClassSync words it: the whole pass that retries it reports the same problem, so
      // it is logged once, not again as a changed message.
      problems_.Report(
          ProblemKind::kCgroup, std::to_string(c.cgroup_id),
          st.Wrap("set class of cgroup " + std::to_string(c.cgroup_id) + " (pod " +
                  c.pod_namespace() + "/" + c.pod_name() + " container " + c.container_name + ")")
              .message());
      continue;
    }
    for (const auto& [nic, leaf] : plan.egress_leaves) {
      own_.egress_leaves[nic].push_back(leaf);
      new_egress[nic].push_back(leaf);
      changed_links.insert(nic);
    }
    for (const auto& [nic, leaf] : plan.ingress_leaves) {
      own_.ingress_leaves[nic].push_back(leaf);
      changed_links.insert(nic);
    }
    if (auto pod = plan.annotated.find(c.pod_uid()); pod != plan.annotated.end()) {
      own_.annotated[c.pod_uid()] = pod->second;
    }
    own_.pod_of_cgroup[c.cgroup_id] = c.pod_uid();
    added.emplace(c.cgroup_id, std::move(*plan.desired));
  }

  // A link patched with the new leaves gains just those; one applied whole is listed again.
  std::map<core::NicId, LinkLeaves> relinked;
  std::map<core::NicId, LinkLeaves> grown;
  for (const auto& link : own_.links) {
    std::optional<LinkLeaves> patched;
    if (changed_links.count(link.id) == 0 || !ApplyLink(link, false, &patched)) continue;
    if (patched) {
      grown.emplace(link.id, std::move(*patched));
    } else {
      relinked.emplace(link.id, LeavesOf(own_.nic_of.at(link.id), own_.applied.at(link.id)));
    }
  }
  // A link applied whole may have changed its mode: the EDT map is then brought in step whole.
  if (!relinked.empty()) {
    SyncEdt();
  } else if (!new_egress.empty()) {
    SyncEdtAdded(new_egress);
  }
  spdlog::debug("enforcement added containers={} links_patched={} links_applied={}", added.size(),
                grown.size(), relinked.size());

  board_.Publish([&](PublishedState& published) {
    EnforcerStatus& status = published.status;
    ++status.passes;
    for (auto& [id, d] : added) {
      if (d.leaf_key) ++status.capped;
      CountRefusals(d, own_.refusals_counted, status.refused_annotations);
      status.classes[id] = std::move(d);
    }
    status.classified = status.classes.size();
    for (auto& [nic_id, leaves] : grown) {
      const auto& id = nic_id;  // clang-tidy 14 cannot capture a structured binding (C++20 can)
      auto it = std::find_if(published.leaf_links.begin(), published.leaf_links.end(),
                             [&](const LinkLeaves& l) { return l.nic.id == id; });
      if (it == published.leaf_links.end()) {
        // Not listed (its last whole apply failed, then a patch took): list it whole.
        relinked.emplace(id, LeavesOf(own_.nic_of.at(id), own_.applied.at(id)));
        continue;
      }
      it->egress.insert(leaves.egress.begin(), leaves.egress.end());
      it->ingress.insert(leaves.ingress.begin(), leaves.ingress.end());
      it->egress_levels = std::move(leaves.egress_levels);
      it->ingress_levels = std::move(leaves.ingress_levels);
    }
    for (auto& [nic_id, leaves] : relinked) {
      const auto& id = nic_id;  // clang-tidy 14 cannot capture a structured binding (C++20 can)
      auto it = std::find_if(published.leaf_links.begin(), published.leaf_links.end(),
                             [&](const LinkLeaves& l) { return l.nic.id == id; });
      if (it != published.leaf_links.end()) {
        *it = std::move(leaves);
        continue;
      }
      published.leaf_links.push_back(std::move(leaves));  // shaped again after a failure
      status.shaped_nics.push_back(id.Identifier());
      if (const auto& mode = own_.applied.at(id).mode)
        status.shaping_modes[id.Identifier()] = *mode;
    }
  });
  // A pod behind a CNI whose container just started: its routed traffic is classified now, not
  // at the next whole pass, and at its veth. The classes change on this thread only.
  if (routed_pod && !added.empty()) {
    SyncAddresses(classes());
    SyncVethsBetweenPasses();
  }
}

}  // namespace netqos::enforce
