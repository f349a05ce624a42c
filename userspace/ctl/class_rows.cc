#include "ctl/class_rows.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/qos_level.h"
#include "common/tc_handle.h"
#include "ctl/output_format.h"
#include "render/counters_proto.h"
#include "render/table.h"

namespace netqos::ctl {
namespace admin = ::netqos::admin::v1;
using Json = nlohmann::json;

std::string QosLevelText(uint8_t level) { return std::string(KatalystLevelName(level)); }

std::string HtbClassText(uint32_t priority) { return priority == 0 ? "-" : TcHandleText(priority); }

std::optional<uint8_t> EntryDscp(const netqos_class& entry) {
  if ((entry.flags & NETQOS_CLASS_F_SET_DSCP) == 0) return std::nullopt;
  return entry.dscp;
}

std::string DscpText(std::optional<uint8_t> dscp) {
  return dscp ? std::to_string(*dscp) : std::string("-");
}

std::string HumanRate(double v) {
  static const char* const kUnits[] = {"", "k", "M", "G", "T"};
  size_t unit = 0;
  while (std::fabs(v) >= 1000 && unit + 1 < std::size(kUnits)) {
    v /= 1000;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%s", v, kUnits[unit]);
  return buf;
}

namespace {

// 20000000 -> "20M", 1500000 -> "1.5M": HumanRate without a trailing ".0".
std::string ShortRate(uint64_t bps) {
  std::string text = HumanRate(static_cast<double>(bps));
  if (auto dot = text.find(".0"); dot != std::string::npos) text.erase(dot, 2);
  return text;
}

std::string OneCap(bool has, const admin::LeafCap& c) {
  if (!has) return "-";
  if (c.borrows()) return ShortRate(c.rate_bps()) + "+";
  if (c.ceil_bps() > c.rate_bps()) return ShortRate(c.rate_bps()) + "-" + ShortRate(c.ceil_bps());
  return ShortRate(c.rate_bps());
}

}  // namespace

std::string CapText(const admin::ContainerClass& d) {
  if (!d.has_egress_cap() && !d.has_ingress_cap()) return "-";
  return OneCap(d.has_egress_cap(), d.egress_cap()) + "/" +
         OneCap(d.has_ingress_cap(), d.ingress_cap());
}

nlohmann::json CapJson(bool has, const admin::LeafCap& cap) {
  if (!has) return nullptr;
  return {{"rate_bps", cap.rate_bps()},
          {"ceil_bps", cap.ceil_bps()},
          {"borrows", cap.borrows()},
          {"source", cap.source()},
          {"burst_bytes", cap.burst_bytes()}};
}

std::string HumanCount(uint64_t v) {
  if (v < 1000) return std::to_string(v);
  return HumanRate(static_cast<double>(v));
}

namespace {

template <typename Counters>
Json FieldsJson(const Counters& c) {
  Json j = Json::object();
  for (const auto& f : CounterFields<Counters>::kAll) j[std::string(f.name)] = c.*f.member;
  return j;
}

}  // namespace

Json CountersJson(const TrafficCounters& c) { return FieldsJson(c); }
Json CountersJson(const QueueCounters& c) { return FieldsJson(c); }

std::optional<uint64_t> LeafDrops::Total() const {
  if (!egress && !ingress) return std::nullopt;
  return egress.value_or(0) + ingress.value_or(0);
}

std::string DropsText(const LeafDrops& d) {
  auto one = [](const std::optional<uint64_t>& v) { return v ? HumanCount(*v) : "-"; };
  return one(d.egress) + "/" + one(d.ingress);
}

Json DropsJson(const LeafDrops& d) {
  auto one = [](const std::optional<uint64_t>& v) { return v ? Json(*v) : Json(nullptr); };
  return {{"egress", one(d.egress)}, {"ingress", one(d.ingress)}};
}

namespace {

// A leaf the daemon reported: its drops, unless it could not be read. No leaf: none of its own.
std::optional<uint64_t> LeafQueueDrops(bool has, const admin::LeafQueue& q) {
  if (!has) return 0;
  if (!q.error().empty()) return std::nullopt;
  return q.counters().drops();
}

Json LeafQueueJson(bool has, const admin::LeafQueue& q) {
  if (!has) return nullptr;
  Json j = CountersJson(render::CountersFromProto(q.counters()));
  j["device"] = q.device();
  j["htb_class"] = q.htb_class();
  if (!q.error().empty()) j["error"] = q.error();
  return j;
}

}  // namespace

std::string DescribePinError(const Status& status, const std::string& pin_dir) {
  switch (status.code()) {
    case StatusCode::kNotFound:
      if (status.message().rfind("pin dir ", 0) == 0) {
        return "pin dir " + pin_dir +
               " not found: is enforcement on (--enforcement=bpf) and is --bpf-pin-dir right?";
      }
      return status.message() + ": the pin dir " + pin_dir +
             " is incomplete; restart netqosd with --enforcement=bpf to re-create it";
    case StatusCode::kPermissionDenied:
      return status.message();  // already says to run as root
    default:
      return "cannot read the pinned maps in " + pin_dir + ": " + status.message();
  }
}

uint32_t ClassRow::priority() const {
  if (pinned) return pinned->priority;
  return daemon ? daemon->priority() : 0;
}

uint32_t ClassRow::net_class_id() const {
  if (pinned) return pinned->net_class_id;
  return daemon ? daemon->net_class_id() : 0;
}

std::string ClassRow::qos_level() const {
  if (pinned) return QosLevelText(pinned->qos_level);
  return daemon ? daemon->qos_level() : "";
}

std::optional<uint8_t> ClassRow::dscp() const {
  if (pinned) return EntryDscp(*pinned);
  if (daemon && daemon->has_dscp()) return static_cast<uint8_t>(daemon->dscp());
  return std::nullopt;
}

LeafDrops ClassRow::Drops() const {
  if (!daemon || !queues_read) return {};
  return {LeafQueueDrops(daemon->has_egress_queue(), daemon->egress_queue()),
          LeafQueueDrops(daemon->has_ingress_queue(), daemon->ingress_queue())};
}

std::string ClassRow::Name() const {
  if (!daemon) return "";
  std::string name = daemon->pod_namespace() + "/" + daemon->pod_name();
  if (!daemon->container().empty()) name += "/" + daemon->container();
  return name;
}

ClassRows JoinClasses(const PinnedSnapshot* pinned, const admin::ListClassesResponse* daemon,
                      bool with_counter_only) {
  std::map<uint64_t, ClassRow> by_id;
  auto row = [&](uint64_t id) -> ClassRow& {
    ClassRow& r = by_id[id];
    r.cgroup_id = id;
    return r;
  };
  if (pinned != nullptr) {
    for (const auto& [id, cls] : pinned->classes) row(id).pinned = cls;
  }
  if (daemon != nullptr) {
    for (const auto& c : daemon->containers()) {
      ClassRow& r = row(c.cgroup_id());
      r.daemon = c;
      r.queues_read = daemon->queue_counters();
      if (c.has_counters()) r.counters = render::CountersFromProto(c.counters());
    }
  }
  if (pinned != nullptr) {
    // The pinned counters are the kernel's own; they win over the daemon's copy.
    for (const auto& [id, counters] : pinned->container_counters) {
      if (by_id.count(id) == 0 && !with_counter_only) continue;
      row(id).counters = counters;
    }
  }
  ClassRows out;
  for (auto& [id, r] : by_id) out.containers.push_back(std::move(r));
  std::stable_sort(out.containers.begin(), out.containers.end(),
                   [](const ClassRow& a, const ClassRow& b) {
                     // Named rows first (by name), then the anonymous ones by id.
                     const std::string na = a.Name(), nb = b.Name();
                     if (na.empty() != nb.empty()) return !na.empty();
                     if (na != nb) return na < nb;
                     return a.cgroup_id < b.cgroup_id;
                   });

  std::map<uint32_t, TrafficCounters> classes;
  if (daemon != nullptr) {
    out.queues_read = daemon->queue_counters();
    for (const auto& c : daemon->classes()) {
      classes[c.net_class_id()] = render::CountersFromProto(c.counters());
      if (out.queues_read) {
        out.class_drops[c.net_class_id()] = {c.egress_queue().drops(), c.ingress_queue().drops()};
      }
    }
  }
  if (pinned != nullptr) {
    for (const auto& [id, c] : pinned->class_counters) classes[id] = c;
  }
  out.classes.assign(classes.begin(), classes.end());
  return out;
}

Json TenantDecisionsJson(const admin::ContainerClass& d) {
  Json out = Json::array();
  for (const auto& t : d.tenant_decisions()) {
    out.push_back({{"annotation", t.annotation()},
                   {"value", t.value()},
                   {"verdict", t.verdict()},
                   {"reason", t.reason()}});
  }
  return out;
}

Json ClassRowJson(const ClassRow& r) {
  Json j = {{"cgroup_id", r.cgroup_id},
            {"in_pinned_map", r.pinned.has_value()},
            {"known_to_daemon", r.daemon.has_value()},
            {"priority", r.priority()},
            {"htb_class", r.priority() == 0 ? Json(nullptr) : Json(HtbClassText(r.priority()))},
            {"net_class_id", r.net_class_id()},
            {"qos_level", r.qos_level()},
            {"dscp", r.dscp() ? Json(*r.dscp()) : Json(nullptr)}};
  if (r.daemon) {
    const auto& d = *r.daemon;
    j["pod_uid"] = d.pod_uid();
    j["pod_namespace"] = d.pod_namespace();
    j["pod_name"] = StringOrNull(d.pod_name());
    j["container"] = StringOrNull(d.container());
    j["capped"] = d.capped();
    j["nic"] = StringOrNull(d.nic());
    j["allocated_mbps"] = d.allocated_mbps();
    j["egress_cap"] = CapJson(d.has_egress_cap(), d.egress_cap());
    j["ingress_cap"] = CapJson(d.has_ingress_cap(), d.ingress_cap());
    j["tenant_policy"] = StringOrNull(d.tenant_policy());
    j["tenant_decisions"] = TenantDecisionsJson(d);
    j["aggregate_class"] = StringOrNull(d.aggregate_class());
    if (r.queues_read) {
      j["queues"] = {{"egress", LeafQueueJson(d.has_egress_queue(), d.egress_queue())},
                     {"ingress", LeafQueueJson(d.has_ingress_queue(), d.ingress_queue())}};
    }
    if (r.pinned && r.pinned->priority != d.priority()) {
      j["note"] = "the class map differs from the daemon's last pass (being reconciled)";
    }
  } else {
    // Only the daemon knows these: unknown, not empty or zero.
    for (const char* k :
         {"pod_uid", "pod_namespace", "pod_name", "container", "nic", "capped", "allocated_mbps",
          "egress_cap", "ingress_cap", "tenant_policy", "tenant_decisions", "aggregate_class"}) {
      j[k] = nullptr;
    }
  }
  if (!j.contains("queues")) j["queues"] = {{"egress", nullptr}, {"ingress", nullptr}};
  j["drops"] = DropsJson(r.Drops());
  j["counters"] = r.counters ? CountersJson(*r.counters) : Json(nullptr);
  return j;
}

LeafDrops ClassDrops(const ClassRows& rows, uint32_t net_class_id) {
  if (!rows.queues_read) return {};
  auto it = rows.class_drops.find(net_class_id);
  // A class the daemon does not list has no containers with leaves of their own.
  return it == rows.class_drops.end() ? LeafDrops{0, 0} : it->second;
}

Json ClassesJson(const ClassRows& rows, const ClassSources& sources) {
  Json containers = Json::array();
  for (const auto& r : rows.containers) containers.push_back(ClassRowJson(r));
  Json classes = Json::array();
  for (const auto& [id, c] : rows.classes) {
    classes.push_back({{"net_class_id", id},
                       {"counters", CountersJson(c)},
                       {"drops", DropsJson(ClassDrops(rows, id))}});
  }
  return {{"pin_dir", sources.pin_dir},
          {"pinned_maps_read", sources.pinned_read},
          {"daemon_reachable", sources.daemon_reached},
          {"mode", StringOrNull(sources.mode)},
          {"note", StringOrNull(sources.note)},
          {"queues_read", rows.queues_read},
          {"containers", containers},
          {"classes", classes}};
}

namespace {

std::string Or(const std::string& s, const char* dash = "-") { return s.empty() ? dash : s; }

std::string TxRx(const std::optional<TrafficCounters>& c) {
  if (!c) return "-";
  return HumanCount(c->tx_bytes) + "B/" + HumanCount(c->rx_bytes) + "B";
}

}  // namespace

void PrintClasses(const ClassRows& rows, const ClassSources& sources, std::ostream& out) {
  if (!sources.note.empty()) out << "note: " << sources.note << "\n";
  if (rows.containers.empty()) {
    out << "no class entries";
    if (sources.daemon_reached && sources.mode != "bpf") {
      out << ": enforcement is off in netqosd (mode " << Or(sources.mode) << ")";
    }
    out << "\n";
  } else {
    render::Table t({"CGROUP", "POD/CONTAINER", "QOS", "CLASSID", "HTB", "DSCP", "CAP TX/RX", "NIC",
                     "TX/RX", "DROPS TX/RX", "STATE"});
    for (const auto& r : rows.containers) {
      std::string cap = "-";
      if (r.daemon) cap = CapText(*r.daemon);
      std::string state;
      if (r.pinned && r.daemon) {
        state = r.pinned->priority == r.daemon->priority() ? "ok" : "reconciling";
      } else if (r.pinned) {
        state = sources.daemon_reached ? "not wanted by daemon" : "pinned";
      } else {
        state = sources.pinned_read ? "missing in map" : "daemon";
      }
      t.AddRow({std::to_string(r.cgroup_id),
                Or(r.Name(), sources.daemon_reached ? "?" : "(names need the daemon)"),
                Or(r.qos_level()), std::to_string(r.net_class_id()), HtbClassText(r.priority()),
                DscpText(r.dscp()), cap, r.daemon ? Or(r.daemon->nic()) : "-", TxRx(r.counters),
                DropsText(r.Drops()), state});
    }
    t.Print(out);
  }
  if (!rows.classes.empty()) {
    out << "\n";
    render::Table c({"CLASSID", "TX BYTES", "TX PKTS", "RX BYTES", "RX PKTS", "DROPS TX/RX"});
    for (const auto& [id, k] : rows.classes) {
      c.AddRow({std::to_string(id), HumanCount(k.tx_bytes), HumanCount(k.tx_packets),
                HumanCount(k.rx_bytes), HumanCount(k.rx_packets), DropsText(ClassDrops(rows, id))});
    }
    c.Print(out);
  }
}

}  // namespace netqos::ctl
