// WatchTree: the directories a CgroupWatcher watches, one node per inotify watch descriptor. A
// node keeps its parent's descriptor and its own name, not its path: a kubelet's cgroup paths
// share long prefixes, and a node holds 20,000 of them at 10,000 containers. Paths are built on
// demand by walking up to a node without a parent, whose name is its full path. Pure: no I/O.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace netqos::cgroup {

class WatchTree {
 public:
  static constexpr int kNone = -1;

  // Adds `wd` as the child `name` of `parent`, or, with parent kNone, as a top node whose name is
  // its full path. False (and nothing changed) when `wd` is in the tree already, `parent` is not,
  // or `parent` has a child of that name.
  [[nodiscard]] bool Add(int parent, std::string_view name, int wd);

  bool Contains(int wd) const { return nodes_.count(wd) != 0; }
  size_t size() const { return nodes_.size(); }

  // The child of `parent` named `name`, or kNone. O(log children).
  int Child(int parent, std::string_view name) const;
  // The children of `wd`, ordered by name (empty when `wd` is not in the tree).
  std::vector<int> Children(int wd) const;
  // kNone for a top node or a descriptor not in the tree.
  int Parent(int wd) const;
  std::string_view Name(int wd) const;
  // The full path of `wd` ("" when it is not in the tree). O(depth).
  std::string Path(int wd) const;

  struct Removed {
    int wd;
    std::string path;
  };
  // Takes `wd` and everything under it out of the tree and returns them, each directory after
  // its subdirectories. Costs the subtree, not the tree. Empty when `wd` is not in the tree.
  std::vector<Removed> RemoveSubtree(int wd);

 private:
  struct Node {
    int parent = kNone;
    std::unique_ptr<char[]> name;  // NUL-terminated: 8 bytes instead of a std::string's 32
    std::vector<int> children;     // ordered by name, for Child()'s binary search
  };

  const Node* Find(int wd) const;
  // Position in `parent.children` of the first child whose name is not less than `name`.
  std::vector<int>::const_iterator LowerBound(const Node& parent, std::string_view name) const;
  void Collect(int wd, const std::string& path, std::vector<Removed>* out) const;

  std::unordered_map<int, Node> nodes_;
};

}  // namespace netqos::cgroup
