#include "app/enforce_nics.h"

#include <algorithm>
#include <cctype>

namespace netqos::app {
namespace {

constexpr size_t kMaxIfNameLen = 15;  // IFNAMSIZ - 1

Status Bad(const std::string& item, const std::string& why) {
  return InvalidArgument("--enforce-nics: \"" + item + "\": " + why);
}

// The kernel's dev_valid_name(), so a bad name fails at startup rather than at the first netlink
// call.
Status CheckIfName(const std::string& item, const std::string& name) {
  if (name.empty()) return Bad(item, "empty interface name");
  if (name.size() > kMaxIfNameLen)
    return Bad(item, "interface name longer than " + std::to_string(kMaxIfNameLen) + " characters");
  if (name == "." || name == "..") return Bad(item, "\"" + name + "\" is not an interface name");
  for (char ch : name) {
    if (ch == ':' || std::isspace(static_cast<unsigned char>(ch)))
      return Bad(item, "interface names cannot contain ':' or whitespace");
  }
  return Status::Ok();
}

}  // namespace

bool EnforceNics::Contains(const core::NicId& nic) const {
  return all || std::find(nics.begin(), nics.end(), nic) != nics.end();
}

std::vector<std::string> EnforceNics::Items() const {
  if (all) return {"all"};
  std::vector<std::string> out;
  out.reserve(nics.size());
  for (const auto& n : nics) out.push_back(n.netns.empty() ? n.name : n.netns + "/" + n.name);
  return out;
}

Result<EnforceNics> ParseEnforceNics(const std::vector<std::string>& items) {
  EnforceNics out;
  for (const auto& item : items) {
    if (item == "all") {
      if (out.all) return Bad(item, "listed twice");
      if (std::any_of(items.begin(), items.end(), [](const std::string& i) { return i != "all"; }))
        return Bad(item, "\"all\" cannot be combined with interface names");
      out.all = true;
      continue;
    }
    core::NicId id;
    const auto slash = item.find('/');
    if (slash == std::string::npos) {
      id.name = item;
    } else {
      if (item.find('/', slash + 1) != std::string::npos)
        return Bad(item, "expected [netns/]name, found more than one '/'");
      id.netns = item.substr(0, slash);
      id.name = item.substr(slash + 1);
      if (id.netns.empty()) return Bad(item, "empty network namespace name before '/'");
    }
    NETQOS_RETURN_IF_ERROR(CheckIfName(item, id.name));
    if (out.Contains(id)) return Bad(item, "listed twice");
    out.nics.push_back(std::move(id));
  }
  return out;
}

}  // namespace netqos::app
