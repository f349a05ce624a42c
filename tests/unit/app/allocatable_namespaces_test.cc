#include "app/allocatable_namespaces.h"

#include <catch2/catch.hpp>

using netqos::app::FilterAllocatableNamespaces;
using netqos::app::NamespaceAllocatable;

TEST_CASE("allocatable namespaces follow Katalyst's name/-name/* rules") {
  CHECK(NamespaceAllocatable("ns1", {"*"}));
  CHECK_FALSE(NamespaceAllocatable("ns1", {"*", "-ns1"}));
  CHECK_FALSE(NamespaceAllocatable("ns1", {"-ns1", "*"}));
  CHECK(NamespaceAllocatable("ns2", {"*", "-ns1"}));
  CHECK(NamespaceAllocatable("ns1", {"ns1"}));
  CHECK_FALSE(NamespaceAllocatable("ns2", {"ns1"}));
  CHECK_FALSE(NamespaceAllocatable("ns1", {}));
  CHECK(NamespaceAllocatable("", {}));  // the host namespace is always allocatable
  CHECK(NamespaceAllocatable("", {"-"}));
}

TEST_CASE("namespace filter drops only NICs of disabled namespaces") {
  netqos::core::Topology t;
  t.nics.push_back({});
  t.nics.back().id = {"", "eth0"};
  t.nics.push_back({});
  t.nics.back().id = {"ns1", "eth1"};
  t.nics.push_back({});
  t.nics.back().id = {"ns2", "eth2"};
  auto out = FilterAllocatableNamespaces(t, {"*", "-ns1"});
  REQUIRE(out.nics.size() == 2);
  CHECK(out.nics[0].id.name == "eth0");
  CHECK(out.nics[1].id.name == "eth2");
}
