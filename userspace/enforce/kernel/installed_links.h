// The record of what netqos installed on each NIC it shaped (JSON, written durably): the IFBs,
// the egress mode, the root qdisc layout found before the first change and the sysctl value
// replaced, so that `netqosd --uninstall` can give every NIC back what it had.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/status.h"
#include "shaping/netlink/queue_qdiscs.h"

namespace netqos::enforce {

struct InstalledLink {
  std::string netns;       // "" = host
  std::string netns_path;  // "" = host
  std::string name;
  int forward_priority_before = -1;  // sysctl value before netqos set it; -1 = untouched
  // IFBs created for this link. A NIC deleted and re-created gets a new ifindex and so a new
  // IFB; the earlier ones are removed when it is shaped again, or by --uninstall.
  std::vector<std::string> ifbs;
  std::string mode;  // "htb" or "edt": the egress mode last applied
  // The root qdisc layout before netqos first changed it (root_kind "" = unknown or none).
  shaping::QueueLayout before;
};

// The record holds one entry of about 250 bytes per NIC netqos shaped: even thousands of VFs
// stay far below this. A larger file was not written by netqos and is refused unread.
inline constexpr size_t kMaxInstalledLinksBytes = size_t{4} << 20;

// The record of installed links (JSON). A missing (or unreadable) file is an empty list; one over
// kMaxInstalledLinksBytes is InvalidArgument naming the file and the limit.
Result<std::vector<InstalledLink>> LoadInstalledLinks(const std::string& path);
Status SaveInstalledLinks(const std::string& path, const std::vector<InstalledLink>& links);

}  // namespace netqos::enforce
