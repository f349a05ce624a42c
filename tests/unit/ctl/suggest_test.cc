// "Did you mean": the edit distance and the choice of the closest command.
#include "ctl/suggest.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using netqos::ctl::ClosestName;
using netqos::ctl::EditDistance;

TEST_CASE("edit distance counts insertions, deletions, substitutions and adjacent swaps") {
  CHECK(EditDistance("", "") == 0);
  CHECK(EditDistance("status", "status") == 0);
  CHECK(EditDistance("statu", "status") == 1);
  CHECK(EditDistance("statuss", "status") == 1);
  CHECK(EditDistance("stotus", "status") == 1);
  CHECK(EditDistance("stauts", "status") == 1);  // a swap is one typo
  CHECK(EditDistance("kitten", "sitting") == 3);
  CHECK(EditDistance("", "top") == 3);
}

TEST_CASE("the closest command is suggested only when it is close") {
  const std::vector<std::string> names = {"status",   "classes",        "top",
                                          "cgroup",   "cgroup-mount",   "capacity",
                                          "topology", "topology-aware", "version"};
  CHECK(ClosestName("stauts", names) == "status");
  CHECK(ClosestName("clases", names) == "classes");
  CHECK(ClosestName("tpo", names) == "top");
  CHECK(ClosestName("cgruop", names) == "cgroup");
  CHECK(ClosestName("verison", names) == "version");
  CHECK(ClosestName("capacty", names) == "capacity");
  // A unique prefix too far by edits is still what was meant; a shared one is not.
  CHECK(ClosestName("capa", names) == "capacity");
  CHECK_FALSE(ClosestName("cg", names).has_value());
  // Nothing close: no suggestion rather than a wild one.
  CHECK_FALSE(ClosestName("frobnicate", names).has_value());
  CHECK_FALSE(ClosestName("x", names).has_value());
  CHECK_FALSE(ClosestName("", names).has_value());
}
