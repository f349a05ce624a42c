#include "os/nl_error.h"

#include <netlink/errno.h>

#include <cstdlib>

namespace netqos::os {

Status NlStatus(int nle, const std::string& what) {
  if (nle == 0) return Status::Ok();
  const int code = std::abs(nle);
  std::string message = what + ": " + nl_geterror(code);
  switch (code) {
    case NLE_NOMEM:
      return ResourceExhausted(std::move(message));
    case NLE_PERM:
    case NLE_NOACCESS:
      return Status(StatusCode::kPermissionDenied, std::move(message));
    case NLE_OBJ_NOTFOUND:
    case NLE_NODEV:
      return NotFound(std::move(message));
    case NLE_AGAIN:
    case NLE_BUSY:
      return Unavailable(std::move(message));
    default:
      return Internal(std::move(message));
  }
}

}  // namespace netqos::os
