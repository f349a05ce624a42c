// The cgroup watcher's tree of watch descriptors, without inotify: descriptors are chosen by the
// test, so a descriptor the kernel would hand out again can be given again here.
#include "cgroup/watch_tree.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace {

using netqos::cgroup::WatchTree;

std::vector<std::string> Paths(const std::vector<WatchTree::Removed>& removed) {
  std::vector<std::string> out;
  for (const auto& r : removed) out.push_back(r.path);
  return out;
}

// /r (1) with a/b/c/d (2..5), a/b2 (6), a-x (7), ab (8), ab/c (9), a0 (10).
WatchTree Sample() {
  WatchTree t;
  REQUIRE(t.Add(WatchTree::kNone, "/r", 1));
  REQUIRE(t.Add(1, "a", 2));
  REQUIRE(t.Add(2, "b", 3));
  REQUIRE(t.Add(3, "c", 4));
  REQUIRE(t.Add(4, "d", 5));
  REQUIRE(t.Add(2, "b2", 6));
  REQUIRE(t.Add(1, "a-x", 7));
  REQUIRE(t.Add(1, "ab", 8));
  REQUIRE(t.Add(8, "c", 9));
  REQUIRE(t.Add(1, "a0", 10));
  return t;
}

TEST_CASE("WatchTree builds a path from the names up to the top node") {
  WatchTree t = Sample();
  CHECK(t.Path(1) == "/r");
  CHECK(t.Path(5) == "/r/a/b/c/d");
  CHECK(t.Path(9) == "/r/ab/c");
  CHECK(t.Path(42).empty());
  CHECK(t.Parent(5) == 4);
  CHECK(t.Parent(1) == WatchTree::kNone);
  CHECK(t.Name(7) == "a-x");
}

TEST_CASE("WatchTree finds a child by name among siblings added in any order") {
  WatchTree t;
  REQUIRE(t.Add(WatchTree::kNone, "/r", 1));
  const std::vector<std::string> names = {"m", "b", "zz", "a", "ab", "a-b", "z", "c"};
  for (size_t i = 0; i < names.size(); ++i) REQUIRE(t.Add(1, names[i], static_cast<int>(10 + i)));
  for (size_t i = 0; i < names.size(); ++i) {
    INFO(names[i]);
    CHECK(t.Child(1, names[i]) == static_cast<int>(10 + i));
  }
  CHECK(t.Child(1, "a0") == WatchTree::kNone);
  CHECK(t.Child(1, "") == WatchTree::kNone);
  CHECK(t.Child(99, "a") == WatchTree::kNone);
  // Ordered by name: a, a-b, ab, b, c, m, z, zz.
  CHECK(t.Children(1) == std::vector<int>{13, 15, 14, 11, 17, 10, 16, 12});
}

TEST_CASE("WatchTree refuses a descriptor it holds, an unknown parent and a name taken") {
  WatchTree t = Sample();
  CHECK_FALSE(t.Add(1, "new", 5));    // 5 is /r/a/b/c/d
  CHECK_FALSE(t.Add(99, "new", 50));  // no parent 99
  CHECK_FALSE(t.Add(1, "a", 51));     // /r/a is 2
  CHECK(t.Path(5) == "/r/a/b/c/d");
  CHECK(t.Child(1, "a") == 2);
  CHECK_FALSE(t.Contains(50));
  CHECK_FALSE(t.Contains(51));
  CHECK(t.size() == 10);
}

TEST_CASE(
    "WatchTree removes a deep subtree, each directory after its subdirectories, and only it") {
  WatchTree t = Sample();
  const auto removed = t.RemoveSubtree(2);
  CHECK(Paths(removed) ==
        std::vector<std::string>{"/r/a/b2", "/r/a/b/c/d", "/r/a/b/c", "/r/a/b", "/r/a"});
  std::vector<int> wds;
  for (const auto& r : removed) wds.push_back(r.wd);
  CHECK(wds == std::vector<int>{6, 5, 4, 3, 2});
  for (int wd : {2, 3, 4, 5, 6}) CHECK_FALSE(t.Contains(wd));
  // The siblings whose names start with "a" stay, with their subtrees and paths.
  CHECK(t.Child(1, "a") == WatchTree::kNone);
  CHECK(t.Children(1) == std::vector<int>{7, 10, 8});
  CHECK(t.Path(9) == "/r/ab/c");
  CHECK(t.size() == 5);
  CHECK(t.RemoveSubtree(2).empty());  // gone already
}

TEST_CASE("WatchTree: a subtree removed from a sibling named as a prefix leaves the prefix") {
  WatchTree t = Sample();
  CHECK(Paths(t.RemoveSubtree(8)) == std::vector<std::string>{"/r/ab/c", "/r/ab"});
  CHECK(t.Child(1, "a") == 2);
  CHECK(t.Path(5) == "/r/a/b/c/d");
  CHECK(t.size() == 8);
}

TEST_CASE("WatchTree: a descriptor given again after its removal is a new directory") {
  WatchTree t = Sample();
  REQUIRE(t.RemoveSubtree(3).size() == 3);  // /r/a/b with c (4) and d (5)
  // The kernel hands out 3 again, for a directory elsewhere, and 4 for one under it.
  REQUIRE(t.Add(8, "again", 3));
  CHECK(t.Path(3) == "/r/ab/again");
  CHECK(t.Children(3).empty());  // not the old c and d
  CHECK(t.Child(2, "b") == WatchTree::kNone);
  CHECK(t.Children(2) == std::vector<int>{6});
  REQUIRE(t.Add(3, "x", 4));
  CHECK(t.Path(4) == "/r/ab/again/x");
  CHECK(Paths(t.RemoveSubtree(8)) ==
        std::vector<std::string>{"/r/ab/c", "/r/ab/again/x", "/r/ab/again", "/r/ab"});
  CHECK(t.Path(6) == "/r/a/b2");
}

TEST_CASE("WatchTree removing a top node empties its whole tree") {
  WatchTree t = Sample();
  CHECK(t.RemoveSubtree(1).size() == 10);
  CHECK(t.size() == 0);
  REQUIRE(t.Add(WatchTree::kNone, "/r", 1));  // the root, back
  CHECK(t.Children(1).empty());
}

}  // namespace
