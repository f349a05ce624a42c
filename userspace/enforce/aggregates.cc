#include "enforce/aggregates.h"

#include <algorithm>

namespace netqos::enforce {
namespace {

constexpr uint64_t kAggregateBit = 1ULL << 63;
constexpr uint64_t kMinRateBps = 1000;  // HTB's rates are whole bytes/s: keep one above zero

// a * b / c without overflow (rates are at most a link's, 10^12 and more).
uint64_t MulDiv(uint64_t a, uint64_t b, uint64_t c) {
  if (c == 0) return 0;
  return static_cast<uint64_t>(static_cast<unsigned __int128>(a) * b / c);
}

}  // namespace

uint64_t AggregateKey(shaping::QosLevel level, const std::string& pod_namespace) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : pod_namespace) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return kAggregateBit | (static_cast<uint64_t>(level) << 56) | (h & ((1ULL << 56) - 1));
}

AggregatePlan PlanAggregates(const std::vector<AggregateMember>& members,
                             const std::map<std::string, AggregateCap>& caps,
                             const std::function<std::optional<uint32_t>(uint64_t)>& minor_of,
                             const std::string& where) {
  AggregatePlan plan;
  // Per namespace and level: the members' guarantees together.
  std::map<std::string, std::map<shaping::QosLevel, uint64_t>> guaranteed;
  for (const auto& m : members) {
    if (caps.count(m.pod_namespace) == 0) continue;
    guaranteed[m.pod_namespace][m.level] += std::max(m.rate_bps, kMinRateBps);
  }
  struct Share {
    uint32_t minor = 0;
    uint64_t ceil = 0;
    uint64_t guaranteed = 0;  // its members', before scaling
  };
  std::map<std::pair<std::string, shaping::QosLevel>, Share> shares;
  for (const auto& [ns, levels] : guaranteed) {
    const AggregateCap& cap = caps.at(ns);
    uint64_t total = 0;
    for (const auto& [level, sum] : levels) total += sum;
    for (const auto& [level, sum] : levels) {
      auto minor = minor_of(AggregateKey(level, ns));
      if (!minor) continue;
      Share s;
      s.minor = *minor;
      s.guaranteed = sum;
      s.ceil = std::max(kMinRateBps,
                        levels.size() == 1 ? cap.ceil_bps : MulDiv(cap.ceil_bps, sum, total));
      const uint64_t guarantee =
          levels.size() == 1 ? cap.rate_bps : MulDiv(cap.rate_bps, sum, total);
      if (sum > s.ceil) {
        plan.problems.push_back(where + "namespace " + ns + " (" + shaping::QosLevelName(level) +
                                "): its pods are guaranteed " + shaping::BitRateText(sum) +
                                ", more than its aggregate of " + shaping::BitRateText(s.ceil) +
                                "; their guarantees are scaled to fit it");
      }
      shaping::GroupClass g;
      g.minor = s.minor;
      g.level = level;
      g.ceil_bps = s.ceil;
      g.rate_bps = std::min(s.ceil, std::max(guarantee, std::min(sum, s.ceil)));
      plan.groups.push_back(g);
      shares[{ns, level}] = s;
    }
  }
  for (const auto& m : members) {
    auto s = shares.find({m.pod_namespace, m.level});
    if (s == shares.end()) continue;
    AggregatePlacement p;
    p.group_minor = s->second.minor;
    p.rate_bps = std::max(m.rate_bps, kMinRateBps);
    if (s->second.guaranteed > s->second.ceil) {
      p.rate_bps = std::max(kMinRateBps, MulDiv(p.rate_bps, s->second.ceil, s->second.guaranteed));
    }
    p.ceil_bps = m.borrow ? 0 : std::max(p.rate_bps, std::min(m.ceil_bps, s->second.ceil));
    plan.members[m.leaf_key] = p;
  }
  return plan;
}

}  // namespace netqos::enforce
