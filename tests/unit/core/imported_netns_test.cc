// Entries of a Katalyst v0.5.3 checkpoint name their NIC without a namespace.
#include "core/imported_netns.h"

#include <catch2/catch.hpp>

namespace netqos::core {
namespace {

Nic MakeNic(const std::string& netns, const std::string& name) {
  Nic n;
  n.id = {netns, name};
  return n;
}

AllocationInfo Entry(const std::string& if_name) {
  AllocationInfo info;
  info.if_name = if_name;
  info.egress = info.ingress = 100;
  return info;
}

TEST_CASE("imported entries get the namespace of the one NIC of their name", "[imported]") {
  const std::vector<Nic> nics = {MakeNic("", "eth0"), MakeNic("ns2", "eth2"), MakeNic("", "eth3"),
                                 MakeNic("ns3", "eth3")};
  PodEntries entries;
  entries["p1"]["c"] = Entry("eth2");
  entries["p2"]["c"] = Entry("eth0");
  entries["p3"]["c"] = Entry("eth9");
  entries["p4"]["c"] = Entry("eth2");  // not listed: left alone

  SECTION("unique names resolve; unknown ones stay where they were") {
    REQUIRE(
        ResolveImportedNetns(nics, {{"p1", "c"}, {"p2", "c"}, {"p3", "c"}, {"gone", "c"}}, entries)
            .ok());
    CHECK(entries["p1"]["c"].nic() == NicId{"ns2", "eth2"});
    CHECK(entries["p2"]["c"].nic() == NicId{"", "eth0"});
    CHECK(entries["p3"]["c"].nic() == NicId{"", "eth9"});
    CHECK(entries["p4"]["c"].nic() == NicId{"", "eth2"});
  }
  SECTION("a name in two namespaces is refused, naming the entry and both") {
    entries["p5"]["web"] = Entry("eth3");
    Status st = ResolveImportedNetns(nics, {{"p5", "web"}}, entries);
    REQUIRE(st.code() == StatusCode::kInvalidArgument);
    CHECK_THAT(st.message(), Catch::Contains("pod p5 container \"web\" names NIC eth3") &&
                                 Catch::Contains("in the host, \"ns3\""));
  }
}

}  // namespace
}  // namespace netqos::core
