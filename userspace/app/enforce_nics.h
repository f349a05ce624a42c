// --enforce-nics: the NICs netqos may shape (install HTB/IFB on). Anything not listed is only
// classified and counted; its qdiscs are never touched.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "core/types.h"

namespace netqos::app {

struct EnforceNics {
  bool all = false;               // the single word "all": every NIC the topology lists
  std::vector<core::NicId> nics;  // in flag order; netns "" = the host namespace

  bool Contains(const core::NicId& nic) const;
  // Nothing to shape: classify and count only.
  bool empty() const { return !all && nics.empty(); }
  // The flag's items again ("all", "eth0", "ns2/eth2"), for logs.
  std::vector<std::string> Items() const;
  bool operator==(const EnforceNics&) const = default;
};

// Items are "name" (host namespace), "netns/name", or the single item "all". Rejected, with a
// message naming --enforce-nics and the item: an empty namespace or name, a name the kernel would
// refuse (longer than 15 characters, ".", "..", containing '/', ':' or whitespace), more than one
// '/', "all" together with names, and duplicates. An empty list is valid (shape nothing). Parsed
// once, when the flags are read (app/daemon_config.h); enforcement takes the result.
Result<EnforceNics> ParseEnforceNics(const std::vector<std::string>& items);

}  // namespace netqos::app
