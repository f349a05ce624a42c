#include "core/imported_netns.h"

namespace netqos::core {

Status ResolveImportedNetns(const std::vector<Nic>& nics,
                            const std::vector<std::pair<std::string, std::string>>& without_netns,
                            PodEntries& entries) {
  for (const auto& [uid, container] : without_netns) {
    auto pod = entries.find(uid);
    if (pod == entries.end()) continue;
    auto entry = pod->second.find(container);
    if (entry == pod->second.end()) continue;
    AllocationInfo& info = entry->second;
    std::vector<const Nic*> named;
    for (const Nic& nic : nics) {
      if (nic.id.name == info.if_name) named.push_back(&nic);
    }
    if (named.size() == 1) {
      info.ns_name = named.front()->id.netns;
      continue;
    }
    if (named.empty()) continue;
    std::string where;
    for (const Nic* nic : named) {
      where += (where.empty() ? "" : ", ") +
               (nic->id.netns.empty() ? std::string("the host") : "\"" + nic->id.netns + "\"");
    }
    return InvalidArgument("checkpoint entry of pod " + uid + " container \"" + container +
                           "\" names NIC " + info.if_name +
                           " without a namespace (written by Katalyst v0.5.3), and this node has "
                           "a NIC of that name in " +
                           where +
                           ": add \"ns_name\" to the entry, or import it where the name is unique");
  }
  return Status::Ok();
}

}  // namespace netqos::core
