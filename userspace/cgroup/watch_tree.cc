#include "cgroup/watch_tree.h"

#include <algorithm>
#include <cstring>

namespace netqos::cgroup {

const WatchTree::Node* WatchTree::Find(int wd) const {
  const auto it = nodes_.find(wd);
  return it == nodes_.end() ? nullptr : &it->second;
}

std::vector<int>::const_iterator WatchTree::LowerBound(const Node& parent,
                                                       std::string_view name) const {
  return std::lower_bound(parent.children.begin(), parent.children.end(), name,
                          [this](int child, std::string_view n) { return Name(child) < n; });
}

bool WatchTree::Add(int parent, std::string_view name, int wd) {
  if (nodes_.count(wd) != 0) return false;
  Node* up = nullptr;
  std::vector<int>::const_iterator at;
  if (parent != kNone) {
    const auto it = nodes_.find(parent);
    if (it == nodes_.end()) return false;
    up = &it->second;
    at = LowerBound(*up, name);
    if (at != up->children.end() && Name(*at) == name) return false;
  }
  Node node;
  node.parent = parent;
  node.name = std::make_unique<char[]>(name.size() + 1);
  std::memcpy(node.name.get(), name.data(), name.size());
  nodes_.emplace(wd, std::move(node));  // unordered_map: `up` stays valid
  if (up != nullptr) up->children.insert(at, wd);
  return true;
}

int WatchTree::Child(int parent, std::string_view name) const {
  const Node* up = Find(parent);
  if (up == nullptr) return kNone;
  const auto at = LowerBound(*up, name);
  return at != up->children.end() && Name(*at) == name ? *at : kNone;
}

std::vector<int> WatchTree::Children(int wd) const {
  const Node* node = Find(wd);
  return node == nullptr ? std::vector<int>{} : node->children;
}

int WatchTree::Parent(int wd) const {
  const Node* node = Find(wd);
  return node == nullptr ? kNone : node->parent;
}

std::string_view WatchTree::Name(int wd) const {
  const Node* node = Find(wd);
  return node == nullptr ? std::string_view() : std::string_view(node->name.get());
}

std::string WatchTree::Path(int wd) const {
  std::vector<std::string_view> parts;
  size_t size = 0;
  for (const Node* node = Find(wd); node != nullptr; node = Find(node->parent)) {
    parts.emplace_back(node->name.get());
    size += parts.back().size() + 1;
  }
  std::string path;
  path.reserve(size);
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    if (!path.empty()) path += '/';
    path += *it;
  }
  return path;
}

// Children in reverse name order, each subtree before its root: the order the kernel removes a
// tree in (rm -r), and the one the path-keyed watcher reported.
void WatchTree::Collect(int wd, const std::string& path, std::vector<Removed>* out) const {
  const Node* node = Find(wd);
  if (node == nullptr) return;
  for (auto it = node->children.rbegin(); it != node->children.rend(); ++it) {
    Collect(*it, path + "/" + std::string(Name(*it)), out);
  }
  out->push_back({wd, path});
}

std::vector<WatchTree::Removed> WatchTree::RemoveSubtree(int wd) {
  std::vector<Removed> out;
  const Node* node = Find(wd);
  if (node == nullptr) return out;
  Collect(wd, Path(wd), &out);
  if (const auto up = nodes_.find(node->parent); up != nodes_.end()) {
    auto& siblings = up->second.children;
    const auto at = LowerBound(up->second, Name(wd));
    if (at != siblings.end() && *at == wd) siblings.erase(at);
  }
  for (const auto& r : out) nodes_.erase(r.wd);
  return out;
}

}  // namespace netqos::cgroup
