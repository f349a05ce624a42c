// The port through which the NRI session hands the runtime's pod and container events to the rest
// of netqos. The session has validated every field before a handler sees it, and it replies to
// the runtime only once the handler returned (or its time budget ran out), so a handler that
// places a container's class before returning has it in place before the container starts.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace netqos::nri_plugin {

// Whether a pod has a network namespace of its own, from the namespaces the runtime listed.
enum class PodNetwork {
  kUnknown,  // the runtime listed no namespaces
  kOwn,      // a "network" namespace is listed
  kHost,     // namespaces are listed, no "network" one: hostNetwork, the node's addresses
};

struct NriPod {
  std::string id;  // the runtime's sandbox id
  std::string uid;
  std::string namespace_name;
  std::string name;
  std::vector<std::string> ips;
  PodNetwork network = PodNetwork::kUnknown;
  std::map<std::string, std::string> annotations;
  std::string cgroup_parent;  // as the runtime gave it: a path or a systemd slice name
};

struct NriContainer {
  std::string id;
  std::string pod_sandbox_id;
  std::string name;
  // The container's cgroup as the runtime gave it: "/kubepods/.../<id>" (cgroupfs driver) or
  // "<slice>:<prefix>:<id>" (systemd driver). Empty when the runtime did not say.
  std::string cgroups_path;
};

enum class PodEvent { kRun, kStop, kRemove };
enum class ContainerEvent { kCreate, kStart, kStop, kRemove };

const char* PodEventName(PodEvent event);
const char* ContainerEventName(ContainerEvent event);

// Handlers are called one at a time, from the session's handler thread, in the order the runtime
// sent the events. They must not block indefinitely: past the session's per-event budget the
// runtime gets its reply anyway, and the events behind a stuck handler wait for it.
class NriEvents {
 public:
  virtual ~NriEvents() = default;

  // What already exists when the session (re)connects, in one call.
  virtual void OnSynchronize(const std::vector<NriPod>& pods,
                             const std::vector<NriContainer>& containers) = 0;
  virtual void OnPodEvent(PodEvent event, const NriPod& pod) = 0;
  virtual void OnContainerEvent(ContainerEvent event, const NriPod& pod,
                                const NriContainer& container) = 0;

  // Fail-closed sessions only (NriSessionOptions::fail_closed): whether the runtime may start
  // `container`. An error refuses the start (the runtime gets it as StartContainer's reply and
  // fails the container): only for a container that needs a class which is not confirmed in place.
  // Asked once OnContainerEvent(kStart) returned, or when its budget ran out or it could not be
  // queued, so the answer must not depend on the handler having run. Called from the session's
  // I/O thread: it must not block. The default lets every container start.
  virtual Status StartRefusal(const NriPod& pod, const NriContainer& container) {
    (void)pod;
    (void)container;
    return Status::Ok();
  }
};

}  // namespace netqos::nri_plugin
