#include "app/nic_health_checkers.h"

#include <algorithm>

namespace netqos::app {

namespace {

constexpr char kIp[] = "ip";

bool Named(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

}  // namespace

Result<NicHealthCheckers> ParseNicHealthCheckers(const std::vector<std::string>& list) {
  for (const std::string& item : list) {
    const std::string name = !item.empty() && item[0] == '-' ? item.substr(1) : item;
    // Katalyst ignores a name it does not know; a typo here would silently turn a check off.
    if (item != "*" && name != kIp) {
      return InvalidArgument("--network-resource-plugin-nic-health-checkers: unknown checker \"" +
                             item + "\" (known: ip; \"-ip\" turns it off, \"*\" turns all on)");
    }
  }
  NicHealthCheckers out;
  if (Named(list, kIp)) {
    out.ip = true;
  } else if (Named(list, std::string("-") + kIp)) {
    out.ip = false;
  } else {
    out.ip = Named(list, "*");
  }
  return out;
}

}  // namespace netqos::app
