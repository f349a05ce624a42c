// The books of the fault tests: what the kubelet side knows it was promised (every acknowledged
// Allocate and RemovePod, plus the calls whose answer never came), what the daemon says it holds
// (`netqosctl allocations --json`, `netqosctl capacity --json`), and the comparison of the two:
// nothing acknowledged lost, nothing never asked for present, an unanswered call applied entirely
// or not at all, and per NIC the machine state's allocated bandwidth equal to the sum of the pod
// entries and within the allocatable, both directions.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/kubelet_harness.h"

namespace netqos::e2e {

inline constexpr char kNicNameAnnotation[] = "qrm.katalyst.kubewharf.io/nic_name";

struct Held {
  std::string nic;  // interface name, as in the Allocate response's nic_name annotation
  uint32_t mbps = 0;
  bool operator==(const Held& o) const { return nic == o.nic && mbps == o.mbps; }
};

// pod uid -> container name -> what it holds.
using Books = std::map<std::string, std::map<std::string, Held>>;

struct NicBooks {
  uint64_t egress_allocated = 0, egress_allocatable = 0;
  uint64_t ingress_allocated = 0, ingress_allocatable = 0;
};

// What the daemon holds, read through its admin API (netqosctl).
struct DaemonState {
  Books books;
  std::map<std::string, NicBooks> nics;  // by interface name
  std::vector<std::string> errors;       // a pod entry with egress != ingress, a read failure
};

inline DaemonState ReadDaemonState(Harness& h) {
  DaemonState s;
  auto list = h.Ctl({"allocations", "--json"});
  auto cap = h.Ctl({"capacity", "--json"});
  if (list.exit_code != 0 || cap.exit_code != 0) {
    s.errors.push_back("netqosctl failed: " + list.output + cap.output);
    return s;
  }
  const auto list_doc = nlohmann::json::parse(list.output);
  const auto cap_doc = nlohmann::json::parse(cap.output);
  for (const auto& a : list_doc.at("allocations")) {
    const auto eg = a["egress_mbps"].get<uint32_t>(), in = a["ingress_mbps"].get<uint32_t>();
    const auto uid = a["pod_uid"].get<std::string>();
    const auto container = a["container_name"].get<std::string>();
    if (eg != in) {
      s.errors.push_back(uid + "/" + container + ": egress " + std::to_string(eg) + " != ingress " +
                         std::to_string(in));
    }
    s.books[uid][container] = Held{a["if_name"].get<std::string>(), eg};
  }
  for (const auto& n : cap_doc.at("nics")) {
    NicBooks& b = s.nics[n["name"].get<std::string>()];
    b.egress_allocated = n["egress"]["allocated"].get<uint64_t>();
    b.egress_allocatable = n["egress"]["allocatable"].get<uint64_t>();
    b.ingress_allocated = n["ingress"]["allocated"].get<uint64_t>();
    b.ingress_allocatable = n["ingress"]["allocatable"].get<uint64_t>();
  }
  return s;
}

// Σ allocated ≤ allocatable per NIC and direction, and the machine state's allocated equal to
// the sum of the pod entries on that NIC. Returns the violations.
inline std::vector<std::string> CheckNicInvariants(const DaemonState& s) {
  std::vector<std::string> out = s.errors;
  std::map<std::string, uint64_t> sum;
  for (const auto& [uid, containers] : s.books) {
    for (const auto& [c, held] : containers) sum[held.nic] += held.mbps;
  }
  for (const auto& [nic, b] : s.nics) {
    const uint64_t want = sum.count(nic) ? sum.at(nic) : 0;
    if (b.egress_allocated > b.egress_allocatable || b.ingress_allocated > b.ingress_allocatable) {
      out.push_back(nic + ": over-allocated: egress " + std::to_string(b.egress_allocated) + "/" +
                    std::to_string(b.egress_allocatable) + ", ingress " +
                    std::to_string(b.ingress_allocated) + "/" +
                    std::to_string(b.ingress_allocatable));
    }
    if (b.egress_allocated != want || b.ingress_allocated != want) {
      out.push_back(nic + ": machine state says egress " + std::to_string(b.egress_allocated) +
                    " / ingress " + std::to_string(b.ingress_allocated) +
                    " allocated but the pod entries on it sum to " + std::to_string(want));
    }
  }
  for (const auto& [nic, total] : sum) {
    if (s.nics.count(nic) == 0)
      out.push_back(nic + ": pod entries on a NIC the daemon does not list");
  }
  return out;
}

// The kubelet side's record. Thread-safe; each pod must be driven by one client at a time (so a
// pod has at most one call whose outcome is unknown).
class AckedBooks {
 public:
  void Allocated(const std::string& uid, const std::string& container, const Held& held) {
    std::lock_guard lk(mu_);
    acked_[uid][container] = held;
    ++acked_ops_;
  }
  void Removed(const std::string& uid) {
    std::lock_guard lk(mu_);
    acked_.erase(uid);
    ++acked_ops_;
  }
  // A call that got no answer (deadline, cancelled, daemon killed): it may or may not have been
  // applied, but only as a whole.
  void AllocateUnknown(const std::string& uid, const std::string& container, uint32_t mbps) {
    std::lock_guard lk(mu_);
    unknown_alloc_[{uid, container}] = mbps;
  }
  void RemoveUnknown(const std::string& uid) {
    std::lock_guard lk(mu_);
    unknown_remove_.insert(uid);
  }

  Books Acked() const {
    std::lock_guard lk(mu_);
    return acked_;
  }
  uint64_t acked_ops() const {
    std::lock_guard lk(mu_);
    return acked_ops_;
  }

  struct Outcome {
    std::vector<std::string> violations;
    int unknown_applied = 0, unknown_not_applied = 0;
  };

  // Compares with what the daemon holds. Without violations the unknown calls are resolved by
  // what the daemon holds (`actual` becomes the acknowledged state: it is what the daemon
  // answers from now on).
  Outcome Reconcile(const Books& actual) {
    std::lock_guard lk(mu_);
    Outcome o;
    auto& v = o.violations;
    for (const auto& [uid, containers] : actual) {
      for (const auto& [c, held] : containers) {
        const std::string name = uid + "/" + c;
        auto pod = acked_.find(uid);
        if (pod != acked_.end() && pod->second.count(c) != 0) {
          const Held& want = pod->second.at(c);
          if (!(want == held)) {
            v.push_back(name + ": holds " + std::to_string(held.mbps) + " on " + held.nic +
                        ", acknowledged " + std::to_string(want.mbps) + " on " + want.nic);
          }
          continue;
        }
        auto un = unknown_alloc_.find({uid, c});
        if (un != unknown_alloc_.end()) {
          if (un->second != held.mbps) {
            v.push_back(name + ": unanswered Allocate of " + std::to_string(un->second) +
                        " Mbps applied as " + std::to_string(held.mbps));
          }
          continue;
        }
        v.push_back(name + ": phantom allocation (" + std::to_string(held.mbps) + " on " +
                    held.nic + "), never acknowledged or asked for");
      }
    }
    for (const auto& [uid, containers] : acked_) {
      const bool removing = unknown_remove_.count(uid) != 0;
      auto pod = actual.find(uid);
      size_t present = 0;
      for (const auto& [c, held] : containers) {
        if (pod != actual.end() && pod->second.count(c) != 0) ++present;
      }
      if (removing) {
        if (present != 0 && present != containers.size()) {
          v.push_back(uid + ": unanswered RemovePod half applied (" + std::to_string(present) +
                      " of " + std::to_string(containers.size()) + " containers left)");
        }
        continue;
      }
      for (const auto& [c, held] : containers) {
        if (pod == actual.end() || pod->second.count(c) == 0) {
          v.push_back(uid + "/" + c + ": acknowledged allocation lost");
        }
      }
    }
    if (!v.empty()) return o;
    for (const auto& [key, mbps] : unknown_alloc_) {
      auto pod = actual.find(key.first);
      (pod != actual.end() && pod->second.count(key.second) ? o.unknown_applied
                                                            : o.unknown_not_applied)++;
    }
    for (const auto& uid : unknown_remove_) {
      (actual.count(uid) == 0 ? o.unknown_applied : o.unknown_not_applied)++;
    }
    acked_ = actual;
    unknown_alloc_.clear();
    unknown_remove_.clear();
    return o;
  }

 private:
  mutable std::mutex mu_;
  Books acked_;
  std::map<std::pair<std::string, std::string>, uint32_t> unknown_alloc_;
  std::set<std::string> unknown_remove_;
  uint64_t acked_ops_ = 0;
};

inline std::string JoinLines(const std::vector<std::string>& lines, size_t max = 20) {
  std::ostringstream out;
  for (size_t i = 0; i < lines.size() && i < max; ++i) out << "  " << lines[i] << "\n";
  if (lines.size() > max) out << "  ... and " << lines.size() - max << " more\n";
  return out.str();
}

// A shared_cores container request of `mbps` in one of the fixture's namespace types, so that
// allocations land on both eth0 (host) and eth2 (ns2).
inline rp::ResourceRequest StormRequest(const std::string& uid, const std::string& container,
                                        uint32_t mbps, uint32_t pick) {
  auto req = Req::Container(uid, rp::MAIN, "shared_cores", mbps);
  req.set_container_name(container);
  static const char* const kTypes[] = {"host_ns", "anti_host_ns", "host_ns_preferred"};
  Req::NamespaceType(&req, kTypes[pick % 3]);
  return req;
}

}  // namespace netqos::e2e
