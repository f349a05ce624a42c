#include "app/enforcement_view.h"

#include <set>

#include "common/qos_level.h"
#include "shaping/htb_plan.h"
#include "shaping/shaping_mode.h"

namespace netqos::app {
namespace {

service::LeafQueue Convert(const enforce::LeafQueue& q) {
  return {q.device, TcHandleText(q.handle), q.counters, q.error};
}

}  // namespace

service::EnforcementReport StackEnforcementView::Report(bool with_counters) const {
  service::EnforcementReport r;
  const EnforcementState state = state_();
  r.mode = state.mode;
  r.error = state.error;
  r.starting = state.starting;
  r.pin_dir = pin_dir_;
  const EnforcementStack* stack = state.stack;
  if (stack == nullptr || !stack->enforcer) return r;
  r.cgroup_root = stack->cgroup_root;

  const enforce::EnforcerStatus st = stack->enforcer->Status();
  r.pods_known = st.pods_known;
  r.pod_veths = st.pod_veths;
  r.passes = st.passes;
  r.pod_list_failures = st.pod_list_failures;
  r.problem_reports_total = st.problem_reports_total;
  r.pass_seconds = st.pass_seconds;
  r.pass_failures = st.pass_failures;
  r.kernel_failures = st.kernel_failures;
  r.shaped_nics = st.shaped_nics;
  for (const auto& [nic, choice] : st.shaping_modes) {
    r.shaping_modes[nic] = {shaping::ShapingModeName(choice.mode), choice.reason,
                            shaping::ShapingReasonName(choice.why), choice.inactive};
  }
  for (const auto& p : st.problems) r.problems.push_back({p.kind, p.key, p.message, p.times_seen});
  r.refused_annotations = st.refused_annotations;

  // Read after the status, from the enforcer's own copy of the last pass: should a pass run in
  // between, a container whose leaf it removed shows no queue in this one report.
  const enforce::QueueSnapshot queues =
      with_counters ? stack->enforcer->QueueStats() : enforce::QueueSnapshot{};
  r.queue_counters = with_counters;
  std::set<uint32_t> class_ids;
  for (const auto& [id, d] : st.classes) {
    service::ContainerEnforcement c;
    c.cgroup_id = id;
    c.pod_uid = d.pod_uid();
    c.pod_namespace = d.pod_namespace();
    c.pod_name = d.pod_name();
    c.container = d.container_name;
    c.qos_level = std::string(KatalystLevelName(d.entry.qos_level));
    c.net_class_id = d.entry.net_class_id;
    c.priority = d.entry.priority;
    if (d.entry.priority != 0) c.htb_class = TcHandleText(d.entry.priority);
    c.capped = d.leaf_key.has_value();
    if (d.nic) c.nic = d.nic->Identifier();
    c.allocated_mbps = d.allocated_mbps;
    // EDT pacing has no bucket: a leaf whose NICs all pace its egress shows none there.
    bool edt_egress = !d.leaf_nics->empty();
    for (const auto& nic : *d.leaf_nics) {
      auto m = st.shaping_modes.find(nic.Identifier());
      edt_egress =
          edt_egress && m != st.shaping_modes.end() && m->second.mode == shaping::ShapingMode::kEdt;
    }
    // `dc`, not the structured binding `d`: lambdas may not capture those before C++20's
    // P1091 (clang-tidy's clang refuses it).
    const enforce::DesiredContainer& dc = d;
    const auto cap = [&dc](const enforce::DirectionRates& dir,
                           bool bucket) -> std::optional<service::LeafCap> {
      if (!dc.leaf_key || !dir.capped()) return std::nullopt;
      const char* source = !dir.annotated           ? "allocation"
                           : dc.allocated_mbps == 0 ? "annotation"
                                                    : "allocation+annotation";
      return service::LeafCap{dir.rate_bps, dir.ceil_bps, dir.borrow, source,
                              bucket ? shaping::BucketBytes(dir.rate_bps, dc.burst_bytes) : 0};
    };
    c.egress_cap = cap(d.rates.egress, !edt_egress);
    c.ingress_cap = cap(d.rates.ingress, true);
    c.dscp = d.entry.dscp;
    c.tenant_policy = d.tenant_entry();
    if (d.aggregate_minor) {
      c.aggregate_class =
          TcHandleText(shaping::MakeHandle(shaping::kQdiscMajor, *d.aggregate_minor));
    }
    for (const auto& t : d.decisions) {
      c.tenant_decisions.push_back(
          {t.annotation, t.value, std::string(enforce::TenantVerdictName(t.verdict)), t.reason});
    }
    if (with_counters && stack->dataplane) {
      if (auto counters = stack->dataplane->ContainerCounters(id); counters.ok()) {
        c.counters = *counters;
      }
    }
    if (auto q = queues.containers.find(id); q != queues.containers.end()) {
      if (q->second.egress) c.egress_queue = Convert(*q->second.egress);
      if (q->second.ingress) c.ingress_queue = Convert(*q->second.ingress);
    }
    // A container's drops: its own leaves', and in EDT mode the packets the NIC's egress program
    // dropped beyond the horizon (counted in its BPF counters).
    for (const auto& leaf : {c.egress_queue, c.ingress_queue}) {
      if (leaf) c.counters.drops += leaf->counters.drops;
    }
    class_ids.insert(c.net_class_id);
    r.containers.push_back(std::move(c));
  }
  for (uint32_t cls : class_ids) {
    service::ClassEnforcement ce;
    ce.net_class_id = cls;
    if (with_counters && stack->dataplane) {
      if (auto counters = stack->dataplane->ClassCounters(cls); counters.ok()) {
        ce.counters = *counters;
      }
    }
    if (auto q = queues.classes.find(cls); q != queues.classes.end()) {
      ce.egress_queue = q->second.egress;
      ce.ingress_queue = q->second.ingress;
      ce.counters.drops += ce.egress_queue.drops + ce.ingress_queue.drops;
    }
    r.classes.push_back(ce);
  }
  for (const auto& l : queues.levels) {
    r.levels.push_back({l.nic, std::string(KatalystLevelName(static_cast<uint8_t>(l.level.level))),
                        l.egress ? "egress" : "ingress", l.level.rate_bps, l.level.ceil_bps,
                        l.counters});
  }
  return r;
}

}  // namespace netqos::app
