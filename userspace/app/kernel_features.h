// What the running kernel can do that netqos's datapath depends on, decided from its release
// ("6.1.0-27-amd64") where a runtime probe would need a device of its own. The versions are what
// the kernel lab (docs/kernel-lab.md) proved, not guesses: a kernel that is not known good is
// treated as not good.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace netqos::app {

struct KernelVersion {
  int major = 0;
  int minor = 0;
};

// "6.1.0-27-amd64" -> {6, 1}; nullopt when it does not start with <major>.<minor>.
std::optional<KernelVersion> ParseKernelRelease(std::string_view release);

// Whether an IFB passes on packets a tc program bpf_redirect()s to it. Debian's 5.10 and 6.1
// drop every one of them (rx_dropped; tests/kernels/ifb_redirect_probe.sh), 6.12 passes them;
// in between is unproven, so not assumed.
bool IfbTakesBpfRedirects(const KernelVersion& v);

// The running kernel's release (uname -r).
std::string RunningKernelRelease();

}  // namespace netqos::app
