#include "enforce/kernel/kernel_veth_attacher.h"

#include <net/if.h>

#include "enforce/link_shaper.h"

namespace netqos::enforce {

Status KernelVethAttacher::Attach(int veth, int home_nic) {
  if (!programs_) {
    NETQOS_ASSIGN_OR_RETURN(programs_, bpf::VethPrograms::Load(options_));
  }
  int ifb = 0;
  if (home_nic > 0) {
    const std::string name = IfbNameFor(home_nic);
    ifb = static_cast<int>(::if_nametoindex(name.c_str()));
    // Not made yet (the NIC's first apply failed): the pod stays with the NIC's ingress
    // classification until a later pass finds it.
    if (ifb <= 0) return Unavailable("IFB " + name + " of its NIC is not there (yet)");
  }
  return bpf::AttachVeth(veth, ifb, *programs_);
}

Status KernelVethAttacher::Detach(int veth) { return bpf::DetachVeth(veth); }

}  // namespace netqos::enforce
