#include "topology/nic_classifier.h"

#include <fnmatch.h>

#include <charconv>

#include "topology/sysfs_attr.h"

namespace netqos::topology {
namespace {

// Flag values may repeat and each may hold a comma-separated list; blanks are dropped.
std::vector<std::string> SplitItems(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const auto& value : values) {
    size_t pos = 0;
    while (pos <= value.size()) {
      size_t comma = value.find(',', pos);
      if (comma == std::string::npos) comma = value.size();
      std::string item = TrimWhitespace(value.substr(pos, comma - pos));
      if (!item.empty()) out.push_back(std::move(item));
      pos = comma + 1;
    }
  }
  return out;
}

// fnmatch treats a '[' without its ']' as a literal character, so "eth[0" would silently match
// only the name "eth[0". That is almost certainly a typo, so it is rejected up front.
bool BracketsBalanced(const std::string& glob) {
  for (size_t i = 0; i < glob.size(); ++i) {
    if (glob[i] == '\\') {
      ++i;  // escaped character
      continue;
    }
    if (glob[i] != '[') continue;
    size_t j = i + 1;
    if (j < glob.size() && (glob[j] == '!' || glob[j] == '^')) ++j;
    if (j < glob.size() && glob[j] == ']') ++j;  // a leading ']' is a member, not the end
    size_t close = glob.find(']', j);
    if (close == std::string::npos) return false;
    i = close;
  }
  return true;
}

Status ParseGlobs(const std::vector<std::string>& values, const char* flag,
                  std::vector<std::string>* out) {
  for (auto& glob : SplitItems(values)) {
    if (!BracketsBalanced(glob)) {
      return InvalidArgument(std::string(flag) + ": glob '" + glob + "' has an unbalanced '['");
    }
    out->push_back(std::move(glob));
  }
  return Status::Ok();
}

const std::string* FirstMatch(const std::vector<std::string>& globs, const std::string& name) {
  for (const auto& g : globs) {
    if (::fnmatch(g.c_str(), name.c_str(), 0) == 0) return &g;
  }
  return nullptr;
}

}  // namespace

Result<NicSelection> ParseNicSelection(const std::vector<std::string>& allow,
                                       const std::vector<std::string>& deny,
                                       const std::vector<std::string>& speed_overrides) {
  NicSelection sel;
  NETQOS_RETURN_IF_ERROR(ParseGlobs(allow, "--nic-allow", &sel.allow));
  NETQOS_RETURN_IF_ERROR(ParseGlobs(deny, "--nic-deny", &sel.deny));

  constexpr const char* kFlag = "--nic-speed-override";
  for (const auto& item : SplitItems(speed_overrides)) {
    const std::string bad = std::string(kFlag) + ": '" + item + "': ";
    size_t eq = item.rfind('=');
    if (eq == std::string::npos) return InvalidArgument(bad + "expected NAME=MBPS");
    std::string name = TrimWhitespace(item.substr(0, eq));
    std::string mbps_text = TrimWhitespace(item.substr(eq + 1));
    if (name.empty()) return InvalidArgument(bad + "empty NIC name");
    int64_t mbps = 0;
    const char* end = mbps_text.data() + mbps_text.size();
    auto [p, ec] = std::from_chars(mbps_text.data(), end, mbps);
    if (mbps_text.empty() || ec != std::errc() || p != end) {
      return InvalidArgument(bad + "speed '" + mbps_text + "' is not an integer number of Mbps");
    }
    if (mbps <= 0 || mbps > kMaxSpeedOverrideMbps) {
      return InvalidArgument(bad + "speed must be in (0, " + std::to_string(kMaxSpeedOverrideMbps) +
                             "] Mbps");
    }
    auto [it, inserted] = sel.speed_override.emplace(name, mbps);
    if (!inserted && it->second != mbps) {
      return InvalidArgument(bad + "'" + name + "' already has speed " +
                             std::to_string(it->second));
    }
  }
  return sel;
}

NicDecision ClassifyNic(const NicSelection& sel, const std::string& name, bool pci, bool bond) {
  if (const auto* g = FirstMatch(sel.deny, name)) {
    return {false, "denied by --nic-deny '" + *g + "'"};
  }
  if (pci) return {true, "PCI device"};
  if (bond) return {true, "bond"};
  if (const auto* g = FirstMatch(sel.allow, name)) {
    return {true, "allowed by --nic-allow '" + *g + "'"};
  }
  if (name == "lo") return {false, "loopback"};
  return {false, "not a PCI device or bond (virtual link)"};
}

int64_t EffectiveSpeed(const NicSelection& sel, const std::string& name, int64_t sysfs_speed) {
  auto it = sel.speed_override.find(name);
  return it == sel.speed_override.end() ? sysfs_speed : it->second;
}

}  // namespace netqos::topology
