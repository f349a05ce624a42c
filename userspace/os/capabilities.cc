#include "os/capabilities.h"

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace netqos::os {

Result<std::uint64_t> EffectiveCapabilities() {
  // Version 3: two 32-bit words, enough for every capability up to 63. glibc has no wrapper.
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, data) != 0) {
    const int err = errno;
    return Status(StatusCode::kInternal, std::string("capget: ") + std::strerror(err) + " (errno " +
                                             std::to_string(err) + ")");
  }
  return static_cast<std::uint64_t>(data[0].effective) |
         (static_cast<std::uint64_t>(data[1].effective) << 32);
}

}  // namespace netqos::os
