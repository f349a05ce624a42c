#include "topology/topology_file_source.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/bounded_file.h"
#include "common/json_depth.h"

namespace netqos::topology {
namespace {

using nlohmann::json;

// Strict field readers: a typo in a topology file must be an error, not a silently absent NIC.
class Reader {
 public:
  Reader(const json& obj, std::string where) : obj_(obj), where_(std::move(where)) {}

  Status CheckKeys(const std::set<std::string>& allowed) const {
    if (!obj_.is_object()) return InvalidArgument(where_ + ": expected a JSON object");
    for (const auto& [key, value] : obj_.items()) {
      if (!allowed.count(key)) {
        std::string list;
        for (const auto& k : allowed) list += (list.empty() ? "" : ", ") + k;
        return InvalidArgument(where_ + ": unknown field \"" + key + "\" (known: " + list + ")");
      }
    }
    return Status::Ok();
  }

  Result<std::string> String(const std::string& key, bool required, std::string def = "") const {
    auto it = obj_.find(key);
    if (it == obj_.end()) {
      if (required) return InvalidArgument(where_ + ": missing required field \"" + key + "\"");
      return def;
    }
    if (!it->is_string()) return InvalidArgument(where_ + "." + key + ": expected a string");
    return it->get<std::string>();
  }

  Result<int64_t> Int(const std::string& key, bool required, int64_t def, int64_t min,
                      int64_t max) const {
    auto it = obj_.find(key);
    if (it == obj_.end()) {
      if (required) return InvalidArgument(where_ + ": missing required field \"" + key + "\"");
      return def;
    }
    if (!it->is_number_integer())
      return InvalidArgument(where_ + "." + key + ": expected an integer");
    int64_t v =
        it->is_number_unsigned()
            ? (it->get<uint64_t>() > static_cast<uint64_t>(max) ? max + 1 : it->get<int64_t>())
            : it->get<int64_t>();
    if (v < min || v > max)
      return InvalidArgument(where_ + "." + key + ": " + it->dump() + " is out of range [" +
                             std::to_string(min) + ", " + std::to_string(max) + "]");
    return v;
  }

  Result<bool> Bool(const std::string& key, bool def) const {
    auto it = obj_.find(key);
    if (it == obj_.end()) return def;
    if (!it->is_boolean()) return InvalidArgument(where_ + "." + key + ": expected true or false");
    return it->get<bool>();
  }

  Result<std::vector<std::string>> Strings(const std::string& key) const {
    std::vector<std::string> out;
    auto it = obj_.find(key);
    if (it == obj_.end() || it->is_null()) return out;
    if (!it->is_array()) return InvalidArgument(where_ + "." + key + ": expected an array");
    for (const auto& v : *it) {
      if (!v.is_string())
        return InvalidArgument(where_ + "." + key + ": expected an array of strings");
      out.push_back(v.get<std::string>());
    }
    return out;
  }

 private:
  const json& obj_;
  std::string where_;
};

Result<core::Nic> ParseNic(const json& j, const std::string& where,
                           const std::string& default_netns_dir) {
  Reader r(j, where);
  NETQOS_RETURN_IF_ERROR(
      r.CheckKeys({"name", "netns", "netns_path", "speed_mbps", "numa_node", "enabled", "ipv4",
                   "ipv6", "ifindex", "pci_address", "healthy", "unhealthy_reason"}));
  core::Nic nic;
  NETQOS_ASSIGN_OR_RETURN(nic.id.name, r.String("name", true));
  if (nic.id.name.empty()) return InvalidArgument(where + ".name: must not be empty");
  NETQOS_ASSIGN_OR_RETURN(nic.id.netns, r.String("netns", false));
  NETQOS_ASSIGN_OR_RETURN(nic.netns_path, r.String("netns_path", false));
  if (!nic.id.netns.empty() && nic.netns_path.empty())
    nic.netns_path = (std::filesystem::path(default_netns_dir) / nic.id.netns).string();
  NETQOS_ASSIGN_OR_RETURN(nic.speed_mbps,
                          r.Int("speed_mbps", false, -1, -1, std::numeric_limits<int32_t>::max()));
  NETQOS_ASSIGN_OR_RETURN(int64_t numa, r.Int("numa_node", false, -1, -1, 1 << 20));
  nic.numa_node = static_cast<int>(numa);
  NETQOS_ASSIGN_OR_RETURN(int64_t ifindex,
                          r.Int("ifindex", false, 0, 0, std::numeric_limits<int32_t>::max()));
  nic.ifindex = static_cast<int>(ifindex);
  NETQOS_ASSIGN_OR_RETURN(nic.enabled, r.Bool("enabled", true));
  NETQOS_ASSIGN_OR_RETURN(nic.healthy, r.Bool("healthy", true));
  NETQOS_ASSIGN_OR_RETURN(nic.unhealthy_reason, r.String("unhealthy_reason", false));
  NETQOS_ASSIGN_OR_RETURN(nic.pci_address, r.String("pci_address", false));
  NETQOS_ASSIGN_OR_RETURN(nic.ipv4, r.Strings("ipv4"));
  NETQOS_ASSIGN_OR_RETURN(nic.ipv6, r.Strings("ipv6"));
  return nic;
}

}  // namespace

Result<core::Topology> ParseTopologyJson(const std::string& text, const std::string& origin,
                                         const std::string& default_netns_dir) {
  if (JsonTooDeep(text)) {
    return InvalidArgument("topology file " + origin + ": " + JsonTooDeepText());
  }
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e400
    return InvalidArgument("topology file " + origin + ": malformed JSON: " + e.what());
  }
  Reader top(doc, "topology file " + origin);
  NETQOS_RETURN_IF_ERROR(top.CheckKeys({"numa_nodes", "nics"}));
  core::Topology topo;
  if (auto it = doc.find("numa_nodes"); it != doc.end() && !it->is_null()) {
    if (!it->is_array())
      return InvalidArgument("topology file " + origin + ".numa_nodes: expected an array");
    for (size_t i = 0; i < it->size(); ++i) {
      std::string where = "topology file " + origin + ".numa_nodes[" + std::to_string(i) + "]";
      Reader r((*it)[i], where);
      NETQOS_RETURN_IF_ERROR(r.CheckKeys({"id", "socket"}));
      NETQOS_ASSIGN_OR_RETURN(int64_t id, r.Int("id", true, 0, 0, 1 << 20));
      // -1: a node without CPUs (core::kNoSocket).
      NETQOS_ASSIGN_OR_RETURN(int64_t socket, r.Int("socket", true, 0, core::kNoSocket, 1 << 20));
      topo.numa_nodes.push_back({static_cast<int>(id), static_cast<int>(socket)});
    }
  }
  if (auto it = doc.find("nics"); it != doc.end() && !it->is_null()) {
    if (!it->is_array())
      return InvalidArgument("topology file " + origin + ".nics: expected an array");
    for (size_t i = 0; i < it->size(); ++i) {
      std::string where = "topology file " + origin + ".nics[" + std::to_string(i) + "]";
      NETQOS_ASSIGN_OR_RETURN(core::Nic nic, ParseNic((*it)[i], where, default_netns_dir));
      topo.nics.push_back(std::move(nic));
    }
  }
  return topo;
}

Result<std::unique_ptr<TopologyFileSource>> TopologyFileSource::Create(
    std::string path, std::string default_netns_dir) {
  std::unique_ptr<TopologyFileSource> src(
      new TopologyFileSource(std::move(path), std::move(default_netns_dir)));
  auto first = src->Read();  // fail fast on a missing or broken file
  if (!first.ok()) return first.status();
  return src;
}

TopologyFileSource::TopologyFileSource(std::string path, std::string default_netns_dir)
    : path_(std::move(path)), default_netns_dir_(std::move(default_netns_dir)) {}

TopologyFileSource::~TopologyFileSource() {
  if (watch_) watch_->Wake();
  if (thread_.joinable()) thread_.join();
}

Result<core::Topology> TopologyFileSource::Read() {
  auto text = ReadFileAtMost(path_, kMaxTopologyFileBytes);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kOutOfRange) {
      return InvalidArgument("topology file " + text.status().message());
    }
    return NotFound("cannot read the topology file: " + text.status().message());
  }
  return ParseTopologyJson(*text, path_, default_netns_dir_);
}

Status TopologyFileSource::Watch(std::function<void(core::Topology)> on_change) {
  if (thread_.joinable()) return FailedPrecondition("topology file source already watched");
  NETQOS_ASSIGN_OR_RETURN(auto watch, os::InotifyWatch::Create());
  std::string dir = std::filesystem::path(path_).parent_path().string();
  if (dir.empty()) dir = ".";
  // Watch the directory, not the file: editors and `mv` replace the inode.
  auto wd = watch->Add(dir, IN_CLOSE_WRITE | IN_MOVED_TO);
  if (!wd.ok()) return wd.status();
  watch_ = std::move(watch);
  thread_ = std::thread([this, cb = std::move(on_change)] { WatchLoop(cb); });
  return Status::Ok();
}

void TopologyFileSource::WatchLoop(std::function<void(core::Topology)> on_change) {
  const std::string name = std::filesystem::path(path_).filename().string();
  for (;;) {
    bool relevant = false;
    auto outcome = watch_->Wait(std::chrono::milliseconds(-1), [&](const inotify_event& ev) {
      if (ev.len > 0 && name == ev.name) relevant = true;
    });
    if (!outcome.ok()) {
      spdlog::error("topology file watch stopped: {}", outcome.status().message());
      return;
    }
    if (*outcome == os::InotifyWatch::Outcome::kWoken) return;
    if (!relevant) continue;
    try {
      auto topo = Read();
      if (!topo.ok()) {
        spdlog::warn("topology file changed but cannot be used, keeping the previous one: {}",
                     topo.status().message());
        continue;
      }
      spdlog::info("topology file changed path={} nics={}", path_, topo->nics.size());
      on_change(std::move(*topo));
    } catch (const std::exception& e) {
      spdlog::error("topology file watch: {}", e.what());
    }
  }
}

}  // namespace netqos::topology
