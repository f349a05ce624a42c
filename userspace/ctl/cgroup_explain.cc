#include "ctl/cgroup_explain.h"

#include <nlohmann/json.hpp>
#include <regex>

#include "common/terminal_text.h"
#include "ctl/class_rows.h"
#include "ctl/output_format.h"
#include "render/table.h"

namespace netqos::ctl {
using Json = nlohmann::json;
namespace {

std::string Base(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

std::string Parent(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  return slash == std::string::npos || slash == 0 ? "" : p.substr(0, slash);
}

std::string Or(const std::string& s, const char* dash = "-") { return s.empty() ? dash : s; }

std::string DaemonName(const ::netqos::admin::v1::ContainerClass& d) {
  std::string s = "pod " + d.pod_namespace() + "/" + d.pod_name() + " (uid " + d.pod_uid() + ")";
  s += d.container().empty() ? ", all its containers (pod-level allocation)"
                             : ", container " + d.container();
  return s;
}

}  // namespace

bool LooksLikeContainerCgroup(const std::string& path) {
  static const std::regex kContainer("^(([a-z0-9-]+-)?[0-9a-f]{12,64}\\.scope|[0-9a-f]{12,64})$");
  static const std::regex kPod("^(.*-)?pod[0-9a-f_-]{8,}(\\.slice)?$");
  return std::regex_match(Base(path), kContainer) && std::regex_match(Base(Parent(path)), kPod);
}

Explanation Explain(const CgroupFacts& f) {
  Explanation e;
  e.classified = f.entry.has_value();
  auto add = [&](std::string s) { e.reasons.push_back(std::move(s)); };

  if (f.path.empty()) {
    add("no directory with cgroup id " + std::to_string(f.cgroup_id) +
        " under the cgroup2 mount: the cgroup is gone (or the id is wrong)");
  }
  if (!f.pinned_read) add("the pinned class map was not read: " + f.pinned_error);

  if (f.entry) {
    const netqos_class& c = *f.entry;
    std::string what = "the class map classifies it: " + QosLevelText(c.qos_level) +
                       ", net class id " + std::to_string(c.net_class_id);
    if (c.priority == 0) {
      what += ", skb->priority left alone (counted only: no NIC is shaped)";
    } else {
      what += ", skb->priority " + HtbClassText(c.priority) + " (HTB class on every shaped NIC)";
      if ((c.flags & NETQOS_CLASS_F_VETH) == 0) {
        what += (c.flags & NETQOS_CLASS_F_INGRESS_SHAPED) != 0
                    ? "; received packets are redirected to the NIC's IFB and shaped there"
                    : "; received packets skip the IFB (nothing there would hold them back)";
      }
    }
    add(what);
    if ((c.flags & NETQOS_CLASS_F_VETH) != 0) {
      add("its pod is classified at the host end of its veth: what it sends carries carrier slot " +
          std::to_string(c.slot) +
          " to the NIC (masqueraded, DNATed or not), what it receives is " +
          ((c.flags & NETQOS_CLASS_F_INGRESS_SHAPED) != 0
               ? std::string("shaped there, on its NIC's IFB")
               : std::string("not held back (nothing on the IFB would hold it)")) +
          " (docs/enforcement.md, \"Pods behind a CNI\")");
    }
    if (auto dscp = EntryDscp(c)) {
      add("its packets leave the shaped NICs with DSCP " + std::to_string(*dscp) +
          " (the ECN bits kept)");
    }
    if (f.daemon) {
      add("netqosd knows it as " + DaemonName(*f.daemon));
      if (f.daemon->capped()) {
        const auto& d = *f.daemon;
        const std::string& source =
            d.has_egress_cap() ? d.egress_cap().source() : d.ingress_cap().source();
        add("capped by its HTB leaf " + HtbClassText(c.priority) + " on " +
            (d.nic().empty() ? std::string("every shaped NIC") : d.nic()) + ", sent/received " +
            CapText(d) + " bit/s, from its " + source +
            " (docs/enforcement.md, \"The bandwidth model\")");
      } else if (c.priority != 0) {
        add("no allocation of its own: it shares its QoS level's default class " +
            HtbClassText(c.priority) + ", which may borrow up to the level's ceiling");
      }
      if (!f.daemon->tenant_policy().empty()) {
        std::string policy = "tenant policy: the " + f.daemon->tenant_policy() + " entry applies";
        if (f.daemon->tenant_decisions().empty()) {
          policy += "; its pod has no annotation it decides about";
        }
        add(policy + " (docs/tenant-policy.md)");
      }
      if (!f.daemon->aggregate_class().empty()) {
        add("its namespace's aggregate (tenant policy) holds it with the namespace's other pods: "
            "its leaf sits under the class " +
            f.daemon->aggregate_class() + " on every shaped NIC");
      }
      for (const auto& t : f.daemon->tenant_decisions()) {
        add(t.annotation() + "=" + t.value() + " " + t.verdict() + ": " + t.reason());
      }
      if (f.daemon->priority() != c.priority) {
        add("the daemon's last pass wanted " + HtbClassText(f.daemon->priority()) +
            ": the entry is being reconciled");
      }
    } else if (f.daemon_reached) {
      add("netqosd's last pass did not want this entry: it was written by an earlier run, or its "
          "pod is gone and it is kept for up to 30 minutes as residual state (it is cleared when "
          "its cgroup is removed)");
    } else {
      add("netqosd is not reachable (" + f.daemon_error +
          "): the entry stays in force (the pinned program and maps outlive the daemon); pod and "
          "container names need the daemon");
    }
    return e;
  }

  // No entry (or the map could not be read).
  if (f.pinned_read) add("the class map has no entry for cgroup id " + std::to_string(f.cgroup_id));
  if (!f.daemon_reached) {
    add("netqosd is not reachable (" + f.daemon_error +
        "): nothing classifies new containers until it runs again");
  } else if (f.mode == "none") {
    add("enforcement is off in netqosd (mode none): start it with --enforcement=bpf");
  } else if (f.mode == "disabled") {
    add("enforcement failed to start in netqosd: " + Or(f.mode_error, "see its log"));
  }
  if (f.daemon) {
    add("netqosd wants it classified as " + DaemonName(*f.daemon) +
        (f.pinned_read ? ", but the entry is missing: a map write failed (see `netqosctl status` "
                         "problems)"
                       : ""));
    return e;
  }
  if (!f.path.empty() && !LooksLikeContainerCgroup(f.path)) {
    add("not a container cgroup: netqos classifies only containers' cgroups "
        "(<kubepods root>/.../pod<uid>/<container id>, or *-pod<uid>.slice/<runtime>-<id>.scope "
        "with the systemd driver); other processes use their NIC's unclassified default class");
  } else if (f.daemon_reached && f.mode == "bpf") {
    add("it looks like a container cgroup, but netqosd has no record of it: its pod is not listed "
        "by the kubelet (yet), or the listed container id does not match this directory (check "
        "--kubelet-pods-url, --cgroup-driver and --addition-cgroup-paths); a new cgroup is "
        "retried for 30 s");
  }
  return e;
}

Json CgroupJson(const CgroupFacts& f, const Explanation& why) {
  Json entry = nullptr;
  if (f.entry) {
    entry = {
        {"priority", f.entry->priority},
        {"htb_class", f.entry->priority ? Json(HtbClassText(f.entry->priority)) : Json(nullptr)},
        {"net_class_id", f.entry->net_class_id},
        {"qos_level", QosLevelText(f.entry->qos_level)}};
    auto dscp = EntryDscp(*f.entry);
    entry["dscp"] = dscp ? Json(*dscp) : Json(nullptr);
  }
  Json daemon = {{"reachable", f.daemon_reached},
                 {"error", StringOrNull(f.daemon_error)},
                 {"mode", StringOrNull(f.mode)},
                 {"mode_error", StringOrNull(f.mode_error)},
                 {"container", nullptr}};
  if (f.daemon) {
    const auto& d = *f.daemon;
    daemon["container"] = {{"pod_uid", d.pod_uid()},
                           {"pod_namespace", d.pod_namespace()},
                           {"pod_name", d.pod_name()},
                           {"container", d.container()},
                           {"qos_level", d.qos_level()},
                           {"net_class_id", d.net_class_id()},
                           {"priority", d.priority()},
                           {"htb_class", StringOrNull(d.htb_class())},
                           {"capped", d.capped()},
                           {"nic", StringOrNull(d.nic())},
                           {"allocated_mbps", d.allocated_mbps()},
                           {"egress_cap", CapJson(d.has_egress_cap(), d.egress_cap())},
                           {"ingress_cap", CapJson(d.has_ingress_cap(), d.ingress_cap())},
                           {"tenant_policy", StringOrNull(d.tenant_policy())},
                           {"tenant_decisions", TenantDecisionsJson(d)},
                           {"aggregate_class", StringOrNull(d.aggregate_class())}};
  }
  return {{"path", StringOrNull(f.path)},
          {"cgroup_id", f.cgroup_id},
          {"pin_dir", f.pin_dir},
          {"pinned_map_read", f.pinned_read},
          {"pinned_error", StringOrNull(f.pinned_error)},
          {"classified", why.classified},
          {"class_entry", entry},
          {"counters", f.counters ? CountersJson(*f.counters) : Json(nullptr)},
          {"daemon", daemon},
          {"looks_like_container", !f.path.empty() && LooksLikeContainerCgroup(f.path)},
          {"reasons", why.reasons}};
}

void PrintCgroup(const CgroupFacts& f, const Explanation& why, std::ostream& out) {
  std::vector<std::pair<std::string, std::string>> kv = {
      {"cgroup", Or(f.path, "(no directory found)")},
      {"cgroup id", std::to_string(f.cgroup_id)},
      {"classified", why.classified ? "yes" : "no"}};
  if (f.entry) {
    kv.emplace_back("class entry", QosLevelText(f.entry->qos_level) + ", class id " +
                                       std::to_string(f.entry->net_class_id) + ", priority " +
                                       HtbClassText(f.entry->priority) + ", DSCP " +
                                       DscpText(EntryDscp(*f.entry)));
  }
  if (f.daemon) {
    const auto& d = *f.daemon;
    kv.emplace_back("pod", d.pod_namespace() + "/" + d.pod_name() + " (" + d.pod_uid() + ")");
    kv.emplace_back("container", Or(d.container(), "(pod-level)"));
    kv.emplace_back("allocation", d.allocated_mbps() != 0 ? std::to_string(d.allocated_mbps()) +
                                                                " Mbps on " + Or(d.nic(), "?")
                                                          : "none");
    kv.emplace_back("cap tx/rx", CapText(d));
  }
  if (f.counters) {
    const auto& c = *f.counters;
    kv.emplace_back("counters",
                    "tx " + std::to_string(c.tx_bytes) + " B / " + std::to_string(c.tx_packets) +
                        " pkts, rx " + std::to_string(c.rx_bytes) + " B / " +
                        std::to_string(c.rx_packets) + " pkts, drops " + std::to_string(c.drops));
  }
  render::PrintKeyValues(kv, out);
  out << "why:\n";
  for (const auto& r : why.reasons) out << "  - " << TerminalText(r) << "\n";
}

}  // namespace netqos::ctl
