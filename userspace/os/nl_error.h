// The one place where libnl's -NLE_* codes (which are not errnos) become a Status. Every libnl
// call site in netqos reports failures through NlStatus so messages and codes stay uniform.
#pragma once

#include <string>

#include "common/status.h"

namespace netqos::os {

// `nle` is a libnl return value (0 or negative -NLE_*; the sign is ignored). Returns Ok for 0,
// otherwise "<what>: <nl_geterror text>" with a status code chosen from the NLE class
// (NLE_NOMEM → ResourceExhausted, NLE_PERM/NLE_NOACCESS → PermissionDenied, NLE_OBJ_NOTFOUND/
// NLE_NODEV → NotFound, NLE_AGAIN/NLE_BUSY → Unavailable, anything else → Internal).
Status NlStatus(int nle, const std::string& what);

}  // namespace netqos::os
