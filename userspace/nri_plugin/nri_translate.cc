#include "nri_plugin/nri_translate.h"

#include <arpa/inet.h>

#include <string>
#include <string_view>

namespace netqos::nri_plugin {
namespace api = ::nri::pkg::api::v1alpha1;

const char* PodEventName(PodEvent event) {
  switch (event) {
    case PodEvent::kRun:
      return "RunPodSandbox";
    case PodEvent::kStop:
      return "StopPodSandbox";
    case PodEvent::kRemove:
      return "RemovePodSandbox";
  }
  return "pod event";
}

const char* ContainerEventName(ContainerEvent event) {
  switch (event) {
    case ContainerEvent::kCreate:
      return "CreateContainer";
    case ContainerEvent::kStart:
      return "StartContainer";
    case ContainerEvent::kStop:
      return "StopContainer";
    case ContainerEvent::kRemove:
      return "RemoveContainer";
  }
  return "container event";
}

int32_t NetqosEventMask() {
  return EventBit(api::RUN_POD_SANDBOX) | EventBit(api::STOP_POD_SANDBOX) |
         EventBit(api::REMOVE_POD_SANDBOX) | EventBit(api::CREATE_CONTAINER) |
         EventBit(api::START_CONTAINER) | EventBit(api::STOP_CONTAINER) |
         EventBit(api::REMOVE_CONTAINER);
}

namespace {

// Ids, uids, namespaces and names: runtimes and Kubernetes use letters, digits, '-', '_' and
// '.'; anything else (a '/', a NUL, a newline) is refused rather than carried into a path or a
// log line.
Status CheckToken(std::string_view what, std::string_view value, size_t max, bool required) {
  if (value.empty()) {
    return required ? InvalidArgument(std::string(what) + " is empty") : Status::Ok();
  }
  if (value.size() > max) {
    return InvalidArgument(std::string(what) + " of " + std::to_string(value.size()) +
                           " bytes exceeds " + std::to_string(max));
  }
  for (const char c : value) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    if (!ok) {
      constexpr char kHex[] = "0123456789abcdef";
      const auto byte = static_cast<uint8_t>(c);
      return InvalidArgument(std::string(what) + " has a byte 0x" + kHex[byte >> 4] +
                             kHex[byte & 0xf] + " outside [A-Za-z0-9._-]");
    }
  }
  if (value == "." || value == "..")
    return InvalidArgument(std::string(what) + " is '" + std::string(value) + "'");
  return Status::Ok();
}

// A cgroup path or systemd slice spec: printable ASCII, no "..", since it is joined to the cgroup
// mount point later.
Status CheckPath(std::string_view what, std::string_view value) {
  if (value.size() > kMaxPathBytes) {
    return InvalidArgument(std::string(what) + " of " + std::to_string(value.size()) +
                           " bytes exceeds " + std::to_string(kMaxPathBytes));
  }
  for (const char c : value) {
    if (c < 0x21 || c > 0x7e) {
      return InvalidArgument(std::string(what) + " has a non-printable byte or a space");
    }
  }
  size_t start = 0;
  while (start <= value.size()) {
    size_t end = value.find('/', start);
    if (end == std::string_view::npos) end = value.size();
    if (value.substr(start, end - start) == "..") {
      return InvalidArgument(std::string(what) + " '" + std::string(value) + "' has a '..'");
    }
    start = end + 1;
  }
  return Status::Ok();
}

Status CheckIp(std::string_view ip) {
  const std::string text(ip);
  unsigned char buf[16];
  if (ip.size() > 45 ||
      (inet_pton(AF_INET, text.c_str(), buf) != 1 && inet_pton(AF_INET6, text.c_str(), buf) != 1)) {
    return InvalidArgument("pod ip '" + text.substr(0, 64) + "' is not an IPv4 or IPv6 address");
  }
  return Status::Ok();
}

}  // namespace

Result<NriPod> TranslatePod(
    const api::PodSandbox& pod,
    const std::optional<std::set<std::string, std::less<>>>& annotation_keys) {
  NETQOS_RETURN_IF_ERROR(CheckToken("pod sandbox id", pod.id(), kMaxIdBytes, true));
  const std::string where = "pod sandbox " + pod.id();
  if (Status s = CheckToken("uid", pod.uid(), kMaxIdBytes, true); !s.ok()) return s.Wrap(where);
  if (Status s = CheckToken("namespace", pod.namespace_(), kMaxNameBytes, false); !s.ok()) {
    return s.Wrap(where);
  }
  if (Status s = CheckToken("name", pod.name(), kMaxNameBytes, false); !s.ok()) {
    return s.Wrap(where);
  }
  if (static_cast<size_t>(pod.ips_size()) > kMaxIps) {
    return InvalidArgument(std::to_string(pod.ips_size()) + " ips exceed " +
                           std::to_string(kMaxIps))
        .Wrap(where);
  }
  NriPod out;
  for (const std::string& ip : pod.ips()) {
    if (Status s = CheckIp(ip); !s.ok()) return s.Wrap(where);
    out.ips.push_back(ip);
  }
  // Every annotation counts towards the bound, kept or not (kMaxAnnotationBytes).
  size_t annotation_bytes = 0;
  for (const auto& [key, value] : pod.annotations()) {
    annotation_bytes += key.size() + value.size();
    if (annotation_bytes > kMaxAnnotationBytes) {
      return InvalidArgument("annotations exceed " + std::to_string(kMaxAnnotationBytes) + " bytes")
          .Wrap(where);
    }
    if (!annotation_keys || annotation_keys->contains(key)) out.annotations.emplace(key, value);
  }
  if (Status s = CheckPath("cgroup parent", pod.linux().cgroup_parent()); !s.ok()) {
    return s.Wrap(where);
  }
  out.id = pod.id();
  out.uid = pod.uid();
  out.namespace_name = pod.namespace_();
  out.name = pod.name();
  out.cgroup_parent = pod.linux().cgroup_parent();
  if (pod.linux().namespaces_size() > 0) {
    out.network = PodNetwork::kHost;
    for (const auto& ns : pod.linux().namespaces()) {
      if (ns.type() == "network") out.network = PodNetwork::kOwn;
    }
  }
  return out;
}

Result<NriContainer> TranslateContainer(const api::Container& container) {
  NETQOS_RETURN_IF_ERROR(CheckToken("container id", container.id(), kMaxIdBytes, true));
  const std::string where = "container " + container.id();
  if (Status s = CheckToken("pod sandbox id", container.pod_sandbox_id(), kMaxIdBytes, true);
      !s.ok()) {
    return s.Wrap(where);
  }
  if (Status s = CheckToken("name", container.name(), kMaxNameBytes, false); !s.ok()) {
    return s.Wrap(where);
  }
  if (Status s = CheckPath("cgroups path", container.linux().cgroups_path()); !s.ok()) {
    return s.Wrap(where);
  }
  NriContainer out;
  out.id = container.id();
  out.pod_sandbox_id = container.pod_sandbox_id();
  out.name = container.name();
  out.cgroups_path = container.linux().cgroups_path();
  return out;
}

}  // namespace netqos::nri_plugin
