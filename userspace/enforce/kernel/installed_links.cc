#include "enforce/kernel/installed_links.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/bounded_file.h"
#include "common/durable_file.h"
#include "common/json_depth.h"

namespace netqos::enforce {

Result<std::vector<InstalledLink>> LoadInstalledLinks(const std::string& path) {
  auto text = ReadFileAtMost(path, kMaxInstalledLinksBytes);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kOutOfRange) {
      return InvalidArgument("installed-links record " + text.status().message());
    }
    // Unreadable counts as absent, as it always has: the record only helps clean-up.
    return std::vector<InstalledLink>{};
  }
  if (JsonTooDeep(*text)) {
    return InvalidArgument("installed-links record " + path + ": " + JsonTooDeepText());
  }
  try {
    auto j = nlohmann::json::parse(*text);
    std::vector<InstalledLink> out;
    for (const auto& e : j.at("links")) {
      InstalledLink l;
      l.netns = e.value("netns", "");
      l.netns_path = e.value("netns_path", "");
      l.name = e.at("name").get<std::string>();
      l.forward_priority_before = e.value("forward_priority_before", -1);
      l.ifbs = e.value("ifbs", std::vector<std::string>{});
      l.mode = e.value("mode", "");
      if (e.contains("before")) {
        const auto& b = e.at("before");
        l.before.root_kind = b.value("root_kind", "");
        l.before.root_handle = b.value("root_handle", 0u);
        l.before.queue_kinds = b.value("queue_kinds", std::vector<std::string>{});
      }
      out.push_back(std::move(l));
    }
    return out;
  } catch (const std::exception& e) {
    return InvalidArgument("installed-links record " + path + " is not valid: " + e.what());
  }
}

Status SaveInstalledLinks(const std::string& path, const std::vector<InstalledLink>& links) {
  nlohmann::json j;
  j["links"] = nlohmann::json::array();
  for (const auto& l : links) {
    j["links"].push_back({{"netns", l.netns},
                          {"netns_path", l.netns_path},
                          {"name", l.name},
                          {"forward_priority_before", l.forward_priority_before},
                          {"ifbs", l.ifbs},
                          {"mode", l.mode},
                          {"before",
                           {{"root_kind", l.before.root_kind},
                            {"root_handle", l.before.root_handle},
                            {"queue_kinds", l.before.queue_kinds}}}});
  }
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  // Durable before it replaces the old record: a torn record would stop --uninstall halfway.
  return ReplaceFileDurably(path, j.dump(2) + "\n");
}

}  // namespace netqos::enforce
