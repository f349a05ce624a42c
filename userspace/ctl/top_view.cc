#include "ctl/top_view.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "ctl/output_format.h"
#include "render/table.h"

namespace netqos::ctl {
using Json = nlohmann::json;
namespace {

double Delta(uint64_t before, uint64_t after) {
  return static_cast<double>(after >= before ? after - before : after);
}

Json OptionalJson(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

Json RatesJson(const Rates& r) {
  return {{"tx_bits_per_second", r.tx_bits},
          {"tx_packets_per_second", r.tx_packets},
          {"rx_bits_per_second", r.rx_bits},
          {"rx_packets_per_second", r.rx_packets},
          {"drops_per_second", r.drops},
          {"egress_drops_per_second", OptionalJson(r.egress_drops)},
          {"ingress_drops_per_second", OptionalJson(r.ingress_drops)}};
}

std::string DropRateText(const Rates& r) {
  auto one = [](const std::optional<double>& v) { return v ? HumanRate(*v) : "-"; };
  return one(r.egress_drops) + "/" + one(r.ingress_drops);
}

std::vector<std::string> RateCells(const Rates& r, const LeafDrops& drops) {
  return {HumanRate(r.tx_bits),    HumanRate(r.tx_packets), HumanRate(r.rx_bits),
          HumanRate(r.rx_packets), DropRateText(r),         DropsText(drops)};
}

// Per-second drops of one direction between two samples: known when both samples had the queues
// (a leaf missing from the first one is new: it counts from zero).
std::optional<double> DropRate(const CounterSample& before, const std::optional<uint64_t>* prev,
                               const std::optional<uint64_t>& now, double seconds) {
  if (!before.queues_read || !now || seconds <= 0) return std::nullopt;
  uint64_t from = 0;
  if (prev != nullptr) {
    if (!*prev) return std::nullopt;
    from = **prev;
  }
  return Delta(from, *now) / seconds;
}

// The leaf drop rates and totals of one container or class, into its rates and totals.
template <typename Key>
void AddDrops(const CounterSample& before, const CounterSample& after,
              const std::map<Key, LeafDrops>& before_drops,
              const std::map<Key, LeafDrops>& after_drops, Key key, double seconds, Rates* rates,
              TrafficCounters* totals, LeafDrops* drops) {
  auto now = after_drops.find(key);
  if (!after.queues_read || now == after_drops.end()) return;
  *drops = now->second;
  auto prev = before_drops.find(key);
  const LeafDrops* p = prev == before_drops.end() ? nullptr : &prev->second;
  rates->egress_drops = DropRate(before, p ? &p->egress : nullptr, now->second.egress, seconds);
  rates->ingress_drops = DropRate(before, p ? &p->ingress : nullptr, now->second.ingress, seconds);
  rates->drops += rates->egress_drops.value_or(0) + rates->ingress_drops.value_or(0);
  totals->drops += now->second.Total().value_or(0);
}

}  // namespace

void AddLeafDrops(const ClassRows& rows, CounterSample* sample) {
  sample->queues_read = rows.queues_read;
  if (!rows.queues_read) return;
  for (const auto& r : rows.containers) {
    if (r.daemon) sample->container_drops[r.cgroup_id] = r.Drops();
  }
  for (const auto& [id, counters] : rows.classes) sample->class_drops[id] = ClassDrops(rows, id);
}

Rates RateBetween(const TrafficCounters& before, const TrafficCounters& after, double seconds) {
  Rates r;
  if (seconds <= 0) return r;
  r.tx_bits = Delta(before.tx_bytes, after.tx_bytes) * 8 / seconds;
  r.tx_packets = Delta(before.tx_packets, after.tx_packets) / seconds;
  r.rx_bits = Delta(before.rx_bytes, after.rx_bytes) * 8 / seconds;
  r.rx_packets = Delta(before.rx_packets, after.rx_packets) / seconds;
  r.drops = Delta(before.drops, after.drops) / seconds;
  return r;
}

TopFrame BuildTopFrame(const CounterSample& before, const CounterSample& after,
                       const std::vector<ClassRow>& rows) {
  TopFrame f;
  f.interval_seconds = after.seconds - before.seconds;
  std::map<uint64_t, TopFrame::Container> containers;
  for (const auto& r : rows) {
    auto& c = containers[r.cgroup_id];
    c.cgroup_id = r.cgroup_id;
    c.row = r;
  }
  for (const auto& [id, now] : after.containers) {
    auto& c = containers[id];
    c.cgroup_id = id;
    c.totals = now;
    auto prev = before.containers.find(id);
    // An entry created during the interval started from zero.
    c.rates = RateBetween(prev == before.containers.end() ? TrafficCounters{} : prev->second, now,
                          f.interval_seconds);
  }
  for (auto& [id, c] : containers) {
    c.cgroup_id = id;
    AddDrops(before, after, before.container_drops, after.container_drops, id, f.interval_seconds,
             &c.rates, &c.totals, &c.drops);
  }
  for (auto& [id, c] : containers) f.containers.push_back(std::move(c));
  std::stable_sort(f.containers.begin(), f.containers.end(),
                   [](const TopFrame::Container& a, const TopFrame::Container& b) {
                     const double ra = a.rates.tx_bits + a.rates.rx_bits;
                     const double rb = b.rates.tx_bits + b.rates.rx_bits;
                     if (ra != rb) return ra > rb;
                     return a.cgroup_id < b.cgroup_id;
                   });
  for (const auto& [id, now] : after.classes) {
    TopFrame::Class c;
    c.net_class_id = id;
    c.totals = now;
    auto prev = before.classes.find(id);
    c.rates = RateBetween(prev == before.classes.end() ? TrafficCounters{} : prev->second, now,
                          f.interval_seconds);
    AddDrops(before, after, before.class_drops, after.class_drops, id, f.interval_seconds, &c.rates,
             &c.totals, &c.drops);
    f.classes.push_back(c);
  }
  return f;
}

void AddTrends(RateHistory& history, SparkGlyphs glyphs, TopFrame* frame) {
  frame->trends = true;
  for (auto& c : frame->containers) {
    history.Add(c.cgroup_id, c.rates.tx_bits);
    double full = 0;  // no ceiling of its own (it borrows, or netqosd is not reachable)
    if (c.row && c.row->daemon && c.row->daemon->has_egress_cap()) {
      full = static_cast<double>(c.row->daemon->egress_cap().ceil_bps());
    }
    c.tx_trend = Sparkline(history.Of(c.cgroup_id), full, glyphs);
  }
  history.Prune();
}

Json TopFrameJson(const TopFrame& f) {
  Json containers = Json::array();
  for (const auto& c : f.containers) {
    Json j = RatesJson(c.rates);
    j["cgroup_id"] = c.cgroup_id;
    j["totals"] = CountersJson(c.totals);
    j["drops"] = DropsJson(c.drops);
    if (c.row) {
      const Json row = ClassRowJson(*c.row);
      for (const char* k :
           {"pod_uid", "pod_namespace", "pod_name", "container", "qos_level", "net_class_id",
            "htb_class", "nic", "allocated_mbps", "in_pinned_map", "known_to_daemon", "queues"}) {
        if (row.contains(k)) j[k] = row.at(k);
      }
    } else {
      j["in_pinned_map"] = false;
      j["known_to_daemon"] = false;
    }
    containers.push_back(std::move(j));
  }
  Json classes = Json::array();
  for (const auto& c : f.classes) {
    Json j = RatesJson(c.rates);
    j["net_class_id"] = c.net_class_id;
    j["totals"] = CountersJson(c.totals);
    j["drops"] = DropsJson(c.drops);
    classes.push_back(std::move(j));
  }
  return {{"time", f.unix_time},
          {"interval_seconds", f.interval_seconds},
          {"pin_dir", f.pin_dir},
          {"source", f.source},
          {"names_from_daemon", f.names_from_daemon},
          {"note", StringOrNull(f.note)},
          {"containers", containers},
          {"classes", classes}};
}

void PrintTopFrame(const TopFrame& f, std::ostream& out) {
  char head[64];
  std::snprintf(head, sizeof(head), "%.1f", f.interval_seconds);
  out << "netqosctl top: rates over " << head << " s from " << f.source;
  if (f.source != "netqosd") out << " (" << f.pin_dir << ")";
  out << (f.names_from_daemon ? ", names from netqosd" : ", no names (netqosd not reachable)")
      << "\n";
  if (!f.note.empty()) out << "note: " << f.note << "\n";
  out << "\n";
  if (f.containers.empty()) {
    out << "no containers in the class or counter maps\n";
  } else {
    std::vector<std::string> header = {"CGROUP",       "POD/CONTAINER", "HTB",      "CAP TX/RX",
                                       "TX bit/s",     "TX pkt/s",      "RX bit/s", "RX pkt/s",
                                       "DROP/s TX/RX", "DROPS TX/RX"};
    if (f.trends) header.emplace_back("TX TREND");
    render::Table t(std::move(header));
    for (const auto& c : f.containers) {
      std::string name = "-", htb = "-", cap = "-";
      if (c.row) {
        if (!c.row->Name().empty()) name = c.row->Name();
        htb = HtbClassText(c.row->priority());
        if (c.row->daemon) cap = CapText(*c.row->daemon);
      }
      std::vector<std::string> cells = {std::to_string(c.cgroup_id), name, htb, cap};
      for (auto& cell : RateCells(c.rates, c.drops)) cells.push_back(std::move(cell));
      if (f.trends) cells.push_back(c.tx_trend);
      t.AddRow(std::move(cells));
    }
    t.Print(out);
  }
  if (!f.classes.empty()) {
    out << "\n";
    render::Table t(
        {"CLASSID", "TX bit/s", "TX pkt/s", "RX bit/s", "RX pkt/s", "DROP/s TX/RX", "DROPS TX/RX"});
    for (const auto& c : f.classes) {
      std::vector<std::string> cells = {std::to_string(c.net_class_id)};
      for (auto& cell : RateCells(c.rates, c.drops)) cells.push_back(std::move(cell));
      t.AddRow(std::move(cells));
    }
    t.Print(out);
  }
}

}  // namespace netqos::ctl
