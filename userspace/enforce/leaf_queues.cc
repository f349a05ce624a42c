#include "enforce/leaf_queues.h"

#include <set>
#include <tuple>

namespace netqos::enforce {
namespace {

// The leaf `key` in one direction of the links, if some link carries it. A key has one leaf per
// direction: on the NIC its allocation names (and that NIC's IFB).
struct Found {
  size_t link = 0;
  uint32_t handle = 0;
};
std::optional<Found> FindLeaf(const std::vector<LinkLeaves>& links, uint64_t key, bool egress) {
  for (size_t i = 0; i < links.size(); ++i) {
    const auto& by_key = egress ? links[i].egress : links[i].ingress;
    if (auto it = by_key.find(key); it != by_key.end()) return Found{i, it->second};
  }
  return std::nullopt;
}

}  // namespace

std::vector<LevelClass> LevelClasses(const shaping::HtbPlan& plan) {
  std::vector<LevelClass> out;
  if (!plan.shapes) return out;  // not installed: the NIC kept its own root
  for (int l = 0; l < shaping::kQosLevelCount; ++l) {
    const auto level = static_cast<shaping::QosLevel>(l);
    const uint32_t handle = shaping::MakeHandle(shaping::kQdiscMajor, shaping::LevelMinor(level));
    if (const auto* c = plan.Find(handle)) out.push_back({level, handle, c->rate_bps, c->ceil_bps});
  }
  return out;
}

std::map<uint64_t, uint32_t> LeafHandles(const std::vector<shaping::PlannedClass>& classes) {
  std::map<uint64_t, uint32_t> out;
  for (const auto& c : classes) {
    if (c.container_key) out[*c.container_key] = c.handle;
  }
  return out;
}

QueueSnapshot AttributeLeafQueues(const std::vector<LinkLeaves>& links,
                                  const std::vector<Result<LinkClassStats>>& readings,
                                  const std::map<uint64_t, DesiredContainer>& containers) {
  QueueSnapshot out;
  for (size_t i = 0; i < links.size() && i < readings.size(); ++i) {
    if (!readings[i].ok()) {
      out.errors.push_back("nic " + links[i].nic.id.Identifier() + ": " +
                           readings[i].status().message());
    }
  }
  // (class id, link, direction, handle) already summed: a pod-level leaf serves several
  // containers but is one queue.
  std::set<std::tuple<uint32_t, size_t, bool, uint32_t>> counted;
  for (const auto& [cgroup_id, d] : containers) {
    ClassQueues& cls = out.classes[d.entry.net_class_id];
    if (!d.leaf_key) continue;
    ContainerQueues q;
    for (const bool egress : {true, false}) {
      const auto found = FindLeaf(links, *d.leaf_key, egress);
      if (!found) continue;
      const LinkLeaves& link = links[found->link];
      LeafQueue leaf;
      leaf.device = egress ? link.nic.id.name : link.ifb;
      leaf.handle = found->handle;
      if (found->link >= readings.size()) {
        leaf.error = "not read";
      } else if (!readings[found->link].ok()) {
        leaf.error = readings[found->link].status().message();
      } else {
        const LinkClassStats& stats = *readings[found->link];
        const auto& classes = egress ? stats.egress : stats.ingress;
        if (auto it = classes.find(found->handle); it != classes.end()) {
          leaf.counters = it->second;
          if (counted.emplace(d.entry.net_class_id, found->link, egress, found->handle).second) {
            AddCounters(egress ? cls.egress : cls.ingress, leaf.counters);
          }
        } else {
          leaf.error = "class " + TcHandleText(found->handle) + " not found on " + leaf.device +
                       " (being re-created?)";
        }
      }
      (egress ? q.egress : q.ingress) = std::move(leaf);
    }
    if (q.egress || q.ingress) out.containers[cgroup_id] = std::move(q);
  }
  for (size_t i = 0; i < links.size(); ++i) {
    const bool read = i < readings.size() && readings[i].ok();
    for (const bool egress : {true, false}) {
      for (const LevelClass& level : egress ? links[i].egress_levels : links[i].ingress_levels) {
        LevelQueue lq{links[i].nic.id.Identifier(), egress, level, std::nullopt};
        if (read) {
          const auto& classes = egress ? readings[i]->egress : readings[i]->ingress;
          if (auto it = classes.find(level.handle); it != classes.end()) lq.counters = it->second;
        }
        out.levels.push_back(std::move(lq));
      }
    }
  }
  return out;
}

}  // namespace netqos::enforce
