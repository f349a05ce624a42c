#include "ctl/status_view.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/version.h"
#include "ctl/output_format.h"
#include "render/table.h"

namespace netqos::ctl {
namespace admin = ::netqos::admin::v1;
using Json = nlohmann::json;
namespace {

std::string Or(const std::string& s, const char* dash = "-") { return s.empty() ? dash : s; }

std::string Join(const google::protobuf::RepeatedPtrField<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// One stamp; null for each value a missing stamp does not have.
Json StampJson(const std::string& kind, const std::string& path, bool present, uint32_t generation,
               uint32_t min_reader, const std::string& release, const std::string& error) {
  return {{"kind", kind},
          {"path", path},
          {"present", present},
          {"generation", present ? Json(generation) : Json(nullptr)},
          {"min_reader", present ? Json(min_reader) : Json(nullptr)},
          {"release", present ? StringOrNull(release) : Json(nullptr)},
          {"error", StringOrNull(error)}};
}

Json StampJson(const admin::FormatStampStatus& f) {
  return StampJson(f.kind(), f.path(), f.present(), f.generation(), f.min_reader(), f.release(),
                   f.error());
}

Json StampJson(const FormatStampReading& r) {
  const FormatStamp none;
  const FormatStamp& s = r.stamp ? *r.stamp : none;
  return StampJson(r.kind, r.path, r.stamp.has_value(), s.generation, s.min_reader, s.release,
                   r.error);
}

Json NriJson(const admin::NriStatus& n) {
  return {{"socket", n.socket()},
          {"connected", n.connected()},
          {"runtime_name", StringOrNull(n.runtime_name())},
          {"runtime_version", StringOrNull(n.runtime_version())},
          {"runtime_timeout_ms", n.runtime_timeout_ms()},
          {"event_budget_ms", n.event_budget_ms()},
          {"fail_closed", n.fail_closed()},
          {"connects", n.connects()},
          {"events", n.events()},
          {"late_replies", n.late_replies()},
          {"refused_starts", n.refused_starts()},
          {"shed_events", n.shed_events()},
          {"invalid_events", n.invalid_events()},
          {"last_error", StringOrNull(n.last_error())}};
}

// One line on the NRI session: whom it registered with, how long it may hold a start, and what
// went wrong.
std::string NriText(const admin::NriStatus& n) {
  const std::string mode = n.fail_closed() ? "fail-closed" : "fail-open";
  if (!n.connected()) {
    return "NOT CONNECTED to " + n.socket() + " (" + mode + ", " + std::to_string(n.connects()) +
           " connections so far): " + Or(n.last_error(), "no error yet");
  }
  const std::string timeout = n.runtime_timeout_ms() == 0
                                  ? std::string("none sent")
                                  : std::to_string(n.runtime_timeout_ms()) + " ms";
  std::string text = "registered with " + Or(n.runtime_name(), "?") + " " +
                     Or(n.runtime_version(), "?") + " at " + n.socket() + ", " + mode +
                     ", budget " + std::to_string(n.event_budget_ms()) + " ms (runtime's timeout " +
                     timeout + "); " + std::to_string(n.events()) + " events, " +
                     std::to_string(n.late_replies()) + " answered late, " +
                     std::to_string(n.refused_starts()) + " starts refused";
  if (n.shed_events() + n.invalid_events() > 0) {
    text += ", " + std::to_string(n.shed_events()) + " SHED, " +
            std::to_string(n.invalid_events()) + " invalid";
  }
  return text;
}

Json DaemonJson(const admin::GetStatusResponse& s) {
  Json nics = Json::array();
  for (const auto& n : s.nics()) {
    nics.push_back({{"nic", n.nic()},
                    {"speed_mbps", NonNegativeOrNull(n.speed_mbps())},
                    {"healthy", n.healthy()},
                    {"unhealthy_reason", StringOrNull(n.unhealthy_reason())},
                    {"shaped", n.shaped()},
                    {"shaping_mode", StringOrNull(n.shaping_mode())},
                    {"shaping_reason", StringOrNull(n.shaping_reason())},
                    {"inactive_features", std::vector<std::string>(n.inactive_features().begin(),
                                                                   n.inactive_features().end())}});
  }
  const auto& e = s.enforcement();
  Json problems = Json::array();
  for (const auto& p : e.problems()) {
    problems.push_back(
        {{"object", p.object()}, {"message", p.message()}, {"times_seen", p.times_seen()}});
  }
  Json stamps = Json::array();
  for (const auto& f : s.format_stamps()) stamps.push_back(StampJson(f));
  return {
      {"version", s.version()},
      {"pid", s.pid()},
      {"uptime_seconds", s.uptime_seconds()},
      {"socket_paths", std::vector<std::string>(s.socket_paths().begin(), s.socket_paths().end())},
      {"topology_source", s.topology_source()},
      {"pods", s.pods()},
      {"containers", s.containers()},
      {"allocated_egress_mbps", s.allocated_egress_mbps()},
      {"allocated_ingress_mbps", s.allocated_ingress_mbps()},
      {"nics_total", s.nics_total()},
      {"nics_healthy", s.nics_healthy()},
      {"nics", nics},
      {"enforcement",
       {{"mode", e.mode()},
        {"error", StringOrNull(e.error())},
        {"starting", e.starting()},
        {"pin_dir", StringOrNull(e.pin_dir())},
        {"cgroup_root", StringOrNull(e.cgroup_root())},
        {"pods_known", e.pods_known()},
        {"passes", e.passes()},
        {"pod_list_failures", e.pod_list_failures()},
        {"problem_reports_total", e.problem_reports_total()},
        {"shaped_nics", std::vector<std::string>(e.shaped_nics().begin(), e.shaped_nics().end())},
        {"problems", problems},
        {"classified_containers", e.classified_containers()}}},
      {"kubelet_registration",
       s.has_kubelet_registration()
           ? Json{{"state", s.kubelet_registration().state()},
                  {"error", StringOrNull(s.kubelet_registration().error())},
                  {"get_info_calls", s.kubelet_registration().get_info_calls()},
                  {"seconds_since_get_info",
                   NonNegativeOrNull(s.kubelet_registration().seconds_since_get_info())}}
           : Json(nullptr)},
      {"nri", s.has_nri() ? NriJson(s.nri()) : Json(nullptr)},
      {"tenant_policy",
       {{"source", StringOrNull(s.tenant_policy())},
        {"error", StringOrNull(s.tenant_policy_error())}}},
      // Older daemons report no stamps: null, not an empty list that would say "none found".
      {"own_format", s.has_own_format() ? Json{{"generation", s.own_format().generation()},
                                               {"min_reader", s.own_format().min_reader()},
                                               {"release", s.own_format().release()}}
                                        : Json(nullptr)},
      {"format_stamps", s.has_own_format() ? stamps : Json(nullptr)}};
}

Json LinkJson(const bpf::PinnedLinkState& l) {
  return {{"path", l.path},       {"present", l.present},     {"id", l.id},
          {"prog_id", l.prog_id}, {"prog_name", l.prog_name}, {"cgroup_id", l.cgroup_id},
          {"egress", l.egress},   {"ingress", l.ingress},     {"setsockopt", l.setsockopt},
          {"error", l.error}};
}

Json PinsJson(const bpf::PinDirState& p) {
  Json maps = Json::array();
  for (const auto& m : p.maps) {
    maps.push_back({{"name", m.name},
                    {"path", m.path},
                    {"present", m.present},
                    {"entries", m.counted ? Json(m.entries) : Json(nullptr)},
                    {"max_entries", m.max_entries},
                    {"id", m.id},
                    {"error", m.error}});
  }
  return {{"pin_dir", p.pin_dir},
          {"exists", p.exists},
          {"on_bpffs", p.on_bpffs},
          {"error", p.error},
          {"maps", maps},
          {"egress_link", LinkJson(p.egress_link)},
          {"rx_link", LinkJson(p.rx_link)},
          {"sockopt_link", LinkJson(p.sockopt_link)},
          {"other_versions", p.other_versions}};
}

enum class Hook { kEgress, kIngress, kSetsockopt };

// One pinned cgroup link; `missing` says what does not happen without it.
void PrintLink(const bpf::PinnedLinkState& l, const char* name, Hook hook, const char* missing,
               std::ostream& out) {
  out << "  " << name << " link: ";
  if (!l.present) {
    out << "not pinned (" << l.path << "): " << missing << "\n";
  } else if (!l.error.empty()) {
    out << "pinned, unreadable: " << l.error << "\n";
  } else {
    out << "pinned (link " << l.id << ", program " << Or(l.prog_name, "?") << " id " << l.prog_id;
    if (l.cgroup_id == 0) {
      out << ", DEFUNCT: its cgroup is gone; restart netqosd to re-attach)\n";
    } else {
      const bool right = hook == Hook::kEgress    ? l.egress
                         : hook == Hook::kIngress ? l.ingress
                                                  : l.setsockopt;
      const char* what = hook == Hook::kEgress    ? "egress"
                         : hook == Hook::kIngress ? "ingress"
                                                  : "setsockopt";
      out << ", cgroup id " << l.cgroup_id << (right ? ", " : ", NOT ") << what << ")\n";
    }
  }
}

void PrintPins(const bpf::PinDirState& p, const std::string& mode, std::ostream& out) {
  out << "\npinned state (" << p.pin_dir << "):\n";
  if (!p.error.empty()) {
    out << "  " << p.error << "\n";
    return;
  }
  if (!p.exists) {
    out << "  pin dir not found";
    if (mode == "none") {
      out << " (enforcement is off: nothing is pinned)\n";
    } else {
      out << ": is enforcement on (--enforcement=bpf) and is --bpf-pin-dir right?\n";
    }
    return;
  }
  out << "  pin dir present" << (p.on_bpffs ? " (bpffs)" : " (NOT on a bpffs)") << "\n";
  render::Table t({"  MAP", "PRESENT", "ENTRIES", "MAX", "ID", "ERROR"});
  for (const auto& m : p.maps) {
    t.AddRow({"  " + m.name, m.present ? "yes" : "no", m.counted ? std::to_string(m.entries) : "-",
              m.max_entries ? std::to_string(m.max_entries) : "-",
              m.id ? std::to_string(m.id) : "-", Or(m.error)});
  }
  t.Print(out);
  PrintLink(p.egress_link, "egress", Hook::kEgress, "no cgroup is classified", out);
  PrintLink(p.rx_link, "rx", Hook::kIngress, "received packets are not counted", out);
  PrintLink(p.sockopt_link, "setsockopt", Hook::kSetsockopt,
            "containers may bypass the NICs' qdiscs (PACKET_QDISC_BYPASS)", out);
  if (!p.other_versions.empty()) {
    out << "  maps of another layout version (an upgrade did not finish migrating them):";
    for (const auto& v : p.other_versions) out << " " << v;
    out << "\n";
  }
}

}  // namespace

std::string DurationText(double seconds) {
  long long s = seconds < 0 ? 0 : static_cast<long long>(seconds);
  char buf[48];
  if (s >= 86400) {
    std::snprintf(buf, sizeof(buf), "%lldd%lldh", s / 86400, (s % 86400) / 3600);
  } else if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  } else if (s >= 60) {
    std::snprintf(buf, sizeof(buf), "%lldm%02llds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%llds", s);
  }
  return buf;
}

namespace {

struct StampRow {
  std::string kind;
  std::string path;
  bool present = false;
  uint32_t generation = 0;
  uint32_t min_reader = 0;
  std::string release;
  std::string error;
};

StampRow StampRowOf(const FormatStampReading& r) {
  StampRow row{r.kind, r.path, r.stamp.has_value(), 0, 0, "", r.error};
  if (r.stamp) {
    row.generation = r.stamp->generation;
    row.min_reader = r.stamp->min_reader;
    row.release = r.stamp->release;
  }
  return row;
}

// The format stamps: who wrote each directory's state, and which netqosd may read it
// (docs/upgrades.md).
void PrintStamps(const std::vector<StampRow>& rows, bool wide, std::ostream& out) {
  out << "\nformat stamps:\n";
  if (rows.empty()) {
    out << "  none reported\n";
    return;
  }
  std::vector<std::string> header = {"  DIRECTORY", "WRITTEN BY", "GENERATION", "MIN READER"};
  if (wide) header.push_back("STAMP");
  render::Table t(header);
  for (const auto& r : rows) {
    std::string dir = r.kind == "pin_dir" ? "pins" : r.kind == "state_dir" ? "state" : r.kind;
    std::string by = !r.error.empty() ? "UNREADABLE: " + r.error
                     : r.present      ? Or(r.release, "?")
                                      : "- (unstamped)";
    std::vector<std::string> row = {"  " + dir, by, r.present ? std::to_string(r.generation) : "-",
                                    r.present ? std::to_string(r.min_reader) : "-"};
    if (wide) row.push_back(r.path);
    t.AddRow(row);
  }
  t.Print(out);
}

// One line on the kubelet's registration of the socket (absent from older daemons).
std::string KubeletRegistrationText(const admin::GetStatusResponse& s) {
  if (!s.has_kubelet_registration()) return "-";
  const auto& k = s.kubelet_registration();
  const std::string ago =
      k.seconds_since_get_info() < 0
          ? std::string()
          : ", last GetInfo " + DurationText(k.seconds_since_get_info()) + " ago";
  if (k.state() == "not_contacted") return "not contacted yet (no GetInfo from the kubelet)";
  if (k.state() == "awaiting") return "awaiting the kubelet's verdict" + ago;
  if (k.state() == "unconfirmed") {
    return "UNCONFIRMED: GetInfo answered, no NotifyRegistrationStatus" + ago;
  }
  if (k.state() == "rejected") return "REJECTED: " + Or(k.error(), "no error given") + ago;
  return k.state() + ago;
}

}  // namespace

Json StatusJson(const StatusInput& in) {
  Json daemon = {{"reachable", in.daemon.has_value()}, {"socket", in.socket}};
  if (in.daemon) {
    daemon.update(DaemonJson(*in.daemon));
  } else {
    daemon["error"] = in.daemon_error;
  }
  Json pinned = PinsJson(in.pins);
  pinned["format_stamp"] = in.pin_stamp ? StampJson(*in.pin_stamp) : Json(nullptr);
  return {{"netqosctl_version", Version()}, {"daemon", daemon}, {"pinned", pinned}};
}

void PrintStatus(const StatusInput& in, std::ostream& out) {
  if (!in.daemon) {
    out << "daemon:      NOT REACHABLE: " << in.daemon_error << "\n";
    PrintPins(in.pins, "", out);
    if (in.pin_stamp) PrintStamps({StampRowOf(*in.pin_stamp)}, in.wide, out);
    return;
  }
  const auto& s = *in.daemon;
  const auto& e = s.enforcement();
  std::vector<std::pair<std::string, std::string>> kv = {
      {"daemon", "running (netqosd " + s.version() + ", pid " + std::to_string(s.pid()) + ", up " +
                     DurationText(s.uptime_seconds()) + ")"},
      {"sockets", Or(Join(s.socket_paths()))},
      {"kubelet", KubeletRegistrationText(s)},
      {"topology", Or(s.topology_source())},
      {"tenants", "policy " + Or(s.tenant_policy()) +
                      (s.tenant_policy_error().empty()
                           ? std::string()
                           : "; the file is NOT in force: " + s.tenant_policy_error())},
      {"allocations", std::to_string(s.containers()) + " containers in " +
                          std::to_string(s.pods()) + " pods, " +
                          std::to_string(s.allocated_egress_mbps()) + "/" +
                          std::to_string(s.allocated_ingress_mbps()) + " Mbps egress/ingress"},
      {"NICs",
       std::to_string(s.nics_healthy()) + " of " + std::to_string(s.nics_total()) + " healthy"}};
  if (s.has_nri()) kv.emplace_back("NRI", NriText(s.nri()));
  if (s.has_own_format()) {
    kv.emplace_back("format", "writes generation " + std::to_string(s.own_format().generation()) +
                                  ", readable by generation " +
                                  std::to_string(s.own_format().min_reader()) + " on");
  }
  std::string mode = e.mode();
  if (e.mode() == "bpf" && e.starting()) {
    // The dataplane opens after the plugin socket is served: the pins of an earlier run are all
    // that enforces until then, and nothing of this run is known yet.
    mode +=
        " (STARTING: opening the eBPF dataplane and adopting the pinned state, then the first "
        "pass; what was pinned keeps enforcing)";
  } else if (e.mode() == "bpf") {
    // Until the first pass has run (started beside serving), only what an earlier run pinned is
    // enforced: a container allocated since waits for it, which /readyz reports as not ready.
    const std::string passes =
        e.passes() == 0 ? std::string("first pass STILL RUNNING (what was pinned keeps enforcing)")
                        : std::to_string(e.passes()) + " passes";
    mode += " (cgroup root " + Or(e.cgroup_root(), "?") + ", " + passes + ", pod list " +
            (e.pods_known() ? "read" : "NOT READ yet") + ")";
  } else if (e.mode() == "disabled") {
    mode += ": " + e.error();
  } else if (e.mode() == "none") {
    mode += " (allocations only; --enforcement=bpf to enforce)";
  }
  kv.emplace_back("enforcement", mode);
  if (e.mode() == "bpf" && !e.starting()) {
    kv.emplace_back("classified", std::to_string(e.classified_containers()) + " containers");
    kv.emplace_back("shaped NICs", Or(Join(e.shaped_nics()), "none"));
    kv.emplace_back("problems", e.problems().empty()
                                    ? std::string("none")
                                    : std::to_string(e.problems_size()) + " active");
  }
  render::PrintKeyValues(kv, out);
  if (!s.nics().empty()) {
    out << "\n";
    render::Table t({"NIC", "SPEED", "HEALTH", "SHAPED"});
    for (const auto& n : s.nics()) {
      std::string shaped = n.shaped() ? "yes" : "no";
      if (n.shaped() && !n.shaping_mode().empty()) {
        shaped = n.shaping_mode() + " (" + Or(n.shaping_reason(), "?") + ")";
        if (!n.inactive_features().empty()) shaped += "; inactive: " + Join(n.inactive_features());
      }
      t.AddRow({n.nic(), n.speed_mbps() < 0 ? "?" : std::to_string(n.speed_mbps()),
                n.healthy() ? "healthy" : "unhealthy (" + Or(n.unhealthy_reason(), "?") + ")",
                shaped});
    }
    t.Print(out);
  }
  if (!e.problems().empty()) {
    out << "\n";
    render::Table t({"PROBLEM", "SEEN", "MESSAGE"});
    for (const auto& p : e.problems()) {
      t.AddRow({p.object(), std::to_string(p.times_seen()), p.message()});
    }
    t.Print(out);
  }
  PrintPins(in.pins, e.mode(), out);
  if (s.has_own_format()) {
    std::vector<StampRow> rows;
    for (const auto& f : s.format_stamps()) {
      rows.push_back({f.kind(), f.path(), f.present(), f.generation(), f.min_reader(), f.release(),
                      f.error()});
    }
    PrintStamps(rows, in.wide, out);
  }
}

}  // namespace netqos::ctl
