// NRI's messages -> the port's structs (nri_events.h), treating everything the runtime sends as
// hostile: every id, name, address and path is checked before netqos acts on it. Also the event
// mask netqos subscribes with. Pure: no I/O.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "nri/v1alpha1/api.pb.h"
#include "nri_plugin/nri_events.h"

namespace netqos::nri_plugin {

// Limits on what the runtime sends, far above what Kubernetes allows (a name is at most 253
// bytes, all annotations of an object together 256 KiB), so that only a broken or hostile peer
// hits them. The annotation bound counts all of a pod's annotations, the ones TranslatePod does
// not keep too, as the CRI pod source's does (pods/cri/cri_translate.h): a sandbox past it was not
// made from a pod the API server admitted.
inline constexpr size_t kMaxIdBytes = 256;
inline constexpr size_t kMaxNameBytes = 253;
inline constexpr size_t kMaxPathBytes = 4096;
inline constexpr size_t kMaxIps = 16;
inline constexpr size_t kMaxAnnotationBytes = 256 * 1024;
inline constexpr size_t kMaxSyncObjects = 100000;

// NRI's event mask: event e (its enum value in api.proto) is bit e-1.
constexpr int32_t EventBit(::nri::pkg::api::v1alpha1::Event event) {
  return int32_t{1} << (static_cast<int>(event) - 1);
}

// The events netqos subscribes to: the pod's life (run, stop, remove) and the container's
// (create, start, stop, remove). Nothing netqos does needs the Update or Post* events.
int32_t NetqosEventMask();

// Only the annotation keys in `annotation_keys` are kept (nullopt keeps them all, as
// pods::PodListOptions does): a pod carries many annotations netqos never reads, and the events
// and the enforcer's runtime pods hold what is kept.
Result<NriPod> TranslatePod(
    const ::nri::pkg::api::v1alpha1::PodSandbox& pod,
    const std::optional<std::set<std::string, std::less<>>>& annotation_keys = std::nullopt);
Result<NriContainer> TranslateContainer(const ::nri::pkg::api::v1alpha1::Container& container);

}  // namespace netqos::nri_plugin
