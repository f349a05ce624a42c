// VethAttacher through tc (bpf/veth_attach.h), in the calling thread's network namespace: the
// veth programs, loaded (and verified) once and shared by every veth, and the redirect to the
// IFB of the pod's NIC (enforce/link_shaper.h IfbNameFor).
#pragma once

#include <memory>
#include <string>

#include "bpf/veth_attach.h"
#include "enforce/veth_ports.h"

namespace netqos::enforce {

class KernelVethAttacher : public VethAttacher {
 public:
  explicit KernelVethAttacher(bpf::VethProgramOptions options) : options_(std::move(options)) {}
  Status Attach(int veth, int home_nic) override;
  Status Detach(int veth) override;

 private:
  bpf::VethProgramOptions options_;
  std::unique_ptr<bpf::VethPrograms> programs_;
};

}  // namespace netqos::enforce
