#include "pods/cri/cri_translate.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "common/json_depth.h"

namespace netqos::cri {
namespace {

bool IsPodUid(const std::string& uid) {
  if (uid.empty() || uid.size() > 64) return false;
  return std::all_of(uid.begin(), uid.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-';
  });
}

// Lowercase letters, digits, '-' and '.' (a DNS subdomain, what pod and namespace names are).
bool IsDnsName(const std::string& s, size_t max) {
  if (s.empty() || s.size() > max) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
  });
}

bool IsIpText(const std::string& s) {
  if (s.empty() || s.size() > 45) return false;  // INET6_ADDRSTRLEN - 1
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == '.' ||
           c == ':';
  });
}

std::string Label(const google::protobuf::Map<std::string, std::string>& labels, const char* key) {
  auto it = labels.find(key);
  return it == labels.end() ? std::string() : it->second;
}

// Printable for a message: long or binary values from the runtime are cut and escaped.
std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < 80; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    out += (c >= 0x20 && c < 0x7f && c != '"') ? static_cast<char>(c) : '?';
  }
  if (s.size() > 80) out += "...";
  return out + "\"";
}

std::string Underscores(std::string uid) {
  std::replace(uid.begin(), uid.end(), '-', '_');
  return uid;
}

struct Identity {
  std::string uid, ns, name;
};

// The pod a sandbox belongs to, from the kubelet's labels; "" in `why` when acceptable.
Identity SandboxIdentity(const runtime::v1::PodSandbox& sb, std::string* why) {
  Identity id{Label(sb.labels(), kPodUidLabel), Label(sb.labels(), kPodNamespaceLabel),
              Label(sb.labels(), kPodNameLabel)};
  if (!IsPodUid(id.uid)) {
    *why = "pod uid label " + Quote(id.uid) + " is not a pod uid";
  } else if (!IsDnsName(id.ns, 63)) {
    *why = "pod namespace label " + Quote(id.ns) + " is not a namespace name";
  } else if (!IsDnsName(id.name, 253)) {
    *why = "pod name label " + Quote(id.name) + " is not a pod name";
  } else if (sb.metadata().uid() != id.uid) {
    // The kubelet writes both from the same pod; a mismatch is not something it made.
    *why = "metadata uid " + Quote(sb.metadata().uid()) + " differs from the pod uid label";
  }
  return id;
}

size_t AnnotationBytes(const google::protobuf::Map<std::string, std::string>& m) {
  size_t n = 0;
  for (const auto& [k, v] : m) n += k.size() + v.size();
  return n;
}

// Whether `a` is to be preferred as the pod's sandbox over `b`: ready first, then newer.
bool Better(const runtime::v1::PodSandbox& a, const runtime::v1::PodSandbox& b) {
  const bool ra = a.state() == runtime::v1::SANDBOX_READY;
  const bool rb = b.state() == runtime::v1::SANDBOX_READY;
  if (ra != rb) return ra;
  return a.created_at() > b.created_at();
}

}  // namespace

bool IsRuntimeId(const std::string& id) {
  if (id.empty() || id.size() > 128) return false;
  return std::all_of(id.begin(), id.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string QosClassFromCgroupParent(const std::string& cgroup_parent, const std::string& pod_uid) {
  std::string p = cgroup_parent;
  while (!p.empty() && p.back() == '/') p.pop_back();
  const auto slash = p.rfind('/');
  const std::string last = slash == std::string::npos ? p : p.substr(slash + 1);
  const std::string parent_path = slash == std::string::npos ? "" : p.substr(0, slash);
  const auto pslash = parent_path.rfind('/');
  const std::string parent =
      pslash == std::string::npos ? parent_path : parent_path.substr(pslash + 1);

  if (last == "kubepods-pod" + Underscores(pod_uid) + ".slice") return "Guaranteed";
  if (last == "kubepods-burstable-pod" + Underscores(pod_uid) + ".slice") return "Burstable";
  if (last == "kubepods-besteffort-pod" + Underscores(pod_uid) + ".slice") return "BestEffort";
  if (last != "pod" + pod_uid) return "";
  if (parent == "burstable") return "Burstable";
  if (parent == "besteffort") return "BestEffort";
  if (parent == "kubepods") return "Guaranteed";
  return "";
}

SandboxDetails DetailsFromStatus(const runtime::v1::PodSandboxStatusResponse& resp,
                                 const std::string& pod_uid) {
  SandboxDetails d;
  const auto& st = resp.status();
  d.host_network = st.linux().namespaces().options().network() == runtime::v1::NODE;
  if (!d.host_network) {
    // A pod on the node's network has the node's addresses, which are nobody's to claim.
    std::vector<std::string> all{st.network().ip()};
    for (const auto& extra : st.network().additional_ips()) all.push_back(extra.ip());
    for (const auto& ip : all) {
      if (IsIpText(ip) && d.ips.size() < kMaxPodIps &&
          std::find(d.ips.begin(), d.ips.end(), ip) == d.ips.end()) {
        d.ips.push_back(ip);
      }
    }
  }
  auto info = resp.info().find("info");
  if (info != resp.info().end() && info->second.size() <= (4u << 20) &&
      !JsonTooDeep(info->second)) {
    const auto doc = nlohmann::json::parse(info->second, nullptr, /*allow_exceptions=*/false);
    const auto ptr = nlohmann::json::json_pointer("/config/linux/cgroup_parent");
    if (doc.is_object() && doc.contains(ptr) && doc.at(ptr).is_string()) {
      d.qos_class = QosClassFromCgroupParent(doc.at(ptr).get<std::string>(), pod_uid);
    }
  }
  return d;
}

CriPodList TranslatePods(const runtime::v1::ListPodSandboxResponse& sandboxes,
                         const std::map<std::string, SandboxDetails>& details,
                         const runtime::v1::ListContainersResponse& containers,
                         const std::string& runtime, const pods::PodListOptions& options) {
  CriPodList out;
  // uid -> the chosen sandbox; sandbox id -> uid for every acceptable sandbox.
  std::map<std::string, const runtime::v1::PodSandbox*> chosen;
  std::map<std::string, std::string> pod_of_sandbox;
  std::map<std::string, Identity> identities;
  for (const auto& sb : sandboxes.items()) {
    if (!sb.labels().contains(kPodUidLabel)) {
      ++out.not_kubernetes;
      continue;
    }
    std::string why;
    if (!IsRuntimeId(sb.id())) why = "sandbox id is not a runtime id";
    const Identity id = why.empty() ? SandboxIdentity(sb, &why) : Identity{};
    // All of the sandbox's annotations count, the ones left out below too (kMaxAnnotationBytes).
    if (why.empty() && AnnotationBytes(sb.annotations()) > kMaxAnnotationBytes) {
      why = "annotations exceed " + std::to_string(kMaxAnnotationBytes) + " bytes";
    }
    if (why.empty()) {
      auto known = identities.find(id.uid);
      if (known != identities.end() &&
          (known->second.ns != id.ns || known->second.name != id.name)) {
        why =
            "pod uid " + id.uid + " is already pod " + known->second.ns + "/" + known->second.name;
      }
    }
    if (!why.empty()) {
      out.rejected.push_back("sandbox " + Quote(sb.id()) + ": " + why);
      continue;
    }
    identities[id.uid] = id;
    pod_of_sandbox[sb.id()] = id.uid;
    auto& best = chosen[id.uid];
    if (best == nullptr || Better(sb, *best)) best = &sb;
  }

  std::map<std::string, pods::PodInfo> pods;
  for (const auto& [uid, sb] : chosen) {
    pods::PodInfo& pod = pods[uid];
    const Identity& id = identities[uid];
    pod.uid = uid;
    pod.ns = id.ns;
    pod.name = id.name;
    for (const auto& [key, value] : sb->annotations()) {
      if (options.KeepsAnnotation(key)) pod.annotations.emplace(key, value);
    }
    const bool ready = sb->state() == runtime::v1::SANDBOX_READY;
    pod.phase = ready ? "Pending" : "Unknown";  // "Running" once a container runs (below)
    if (auto d = details.find(sb->id()); d != details.end()) {
      pod.qos_class = d->second.qos_class;
      pod.host_network = d->second.host_network;
      if (ready) pod.ips = d->second.ips;
    }
  }

  const std::string runtime_name = IsDnsName(runtime, 32) ? runtime : "";
  for (const auto& c : containers.containers()) {
    if (c.state() != runtime::v1::CONTAINER_CREATED &&
        c.state() != runtime::v1::CONTAINER_RUNNING) {
      continue;
    }
    auto owner = pod_of_sandbox.find(c.pod_sandbox_id());
    if (owner == pod_of_sandbox.end()) continue;  // a sandbox left out above, or none at all
    const std::string name = Label(c.labels(), kContainerNameLabel);
    std::string why;
    if (!IsRuntimeId(c.id())) {
      why = "container id is not a runtime id";
    } else if (Label(c.labels(), kPodUidLabel) != owner->second) {
      why = "pod uid label " + Quote(Label(c.labels(), kPodUidLabel)) +
            " differs from its sandbox's pod " + owner->second;
    } else if (!IsDnsName(name, 63)) {
      why = "container name label " + Quote(name) + " is not a container name";
    }
    if (!why.empty()) {
      out.rejected.push_back("container " + Quote(c.id()) + ": " + why);
      continue;
    }
    pods::PodInfo& pod = pods[owner->second];
    pod.containers.push_back({name, runtime_name, c.id(), false});
    if (c.state() == runtime::v1::CONTAINER_RUNNING && pod.phase == "Pending") {
      pod.phase = "Running";
    }
  }

  for (auto& [uid, pod] : pods) {
    std::sort(pod.containers.begin(), pod.containers.end(), [](const auto& a, const auto& b) {
      return a.name != b.name ? a.name < b.name : a.id < b.id;
    });
    out.pods.push_back(std::move(pod));
  }
  return out;
}

}  // namespace netqos::cri
