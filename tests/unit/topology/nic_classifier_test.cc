// The NIC filter: default decisions, --nic-allow/--nic-deny globs, --nic-speed-override parsing.
#include "topology/nic_classifier.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using netqos::StatusCode;
using netqos::topology::ClassifyNic;
using netqos::topology::EffectiveSpeed;
using netqos::topology::NicDecision;
using netqos::topology::NicSelection;
using netqos::topology::ParseNicSelection;

namespace {

NicSelection MustParse(const std::vector<std::string>& allow, const std::vector<std::string>& deny,
                       const std::vector<std::string>& overrides = {}) {
  auto sel = ParseNicSelection(allow, deny, overrides);
  REQUIRE(sel.ok());
  return *sel;
}

}  // namespace

TEST_CASE("nic classifier: defaults count PCI devices and bonds only") {
  NicSelection sel;
  struct Case {
    const char* name;
    bool pci;
    bool bond;
    bool counted;
    const char* why;
  };
  const std::vector<Case> cases = {
      {"eth0", true, false, true, "PCI device"},
      {"bond0", false, true, true, "bond"},
      {"veth0", false, false, false, "not a PCI device or bond (virtual link)"},
      {"docker0", false, false, false, "not a PCI device or bond (virtual link)"},
      {"lo", false, false, false, "loopback"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    NicDecision d = ClassifyNic(sel, c.name, c.pci, c.bond);
    CHECK(d.counted == c.counted);
    CHECK(d.why == c.why);
  }
}

TEST_CASE("nic classifier: allow widens, deny narrows, deny wins") {
  NicSelection sel = MustParse({"veth*", "lo"}, {"eth1", "veth9?"});
  CHECK(ClassifyNic(sel, "veth0", false, false).counted);
  CHECK(ClassifyNic(sel, "veth0", false, false).why == "allowed by --nic-allow 'veth*'");
  CHECK(ClassifyNic(sel, "lo", false, false).counted);
  CHECK(ClassifyNic(sel, "lo", false, false).why == "allowed by --nic-allow 'lo'");
  CHECK_FALSE(ClassifyNic(sel, "tap0", false, false).counted);

  NicDecision denied_pci = ClassifyNic(sel, "eth1", true, false);
  CHECK_FALSE(denied_pci.counted);
  CHECK(denied_pci.why == "denied by --nic-deny 'eth1'");
  CHECK(ClassifyNic(sel, "eth0", true, false).counted);

  // Allowed by veth* and denied by veth9?: deny wins.
  NicDecision both = ClassifyNic(sel, "veth91", false, false);
  CHECK_FALSE(both.counted);
  CHECK(both.why == "denied by --nic-deny 'veth9?'");
  CHECK(ClassifyNic(sel, "veth9", false, false).counted);
}

TEST_CASE("nic classifier: deny can exclude bonds and everything") {
  NicSelection sel = MustParse({}, {"*"});
  CHECK_FALSE(ClassifyNic(sel, "bond0", false, true).counted);
  CHECK_FALSE(ClassifyNic(sel, "eth0", true, false).counted);
  CHECK(ClassifyNic(sel, "eth0", true, false).why == "denied by --nic-deny '*'");
}

TEST_CASE("nic classifier: bracket globs") {
  NicSelection sel = MustParse({"eth[2-3]", "ens[!0]", "x[]]y"}, {});
  CHECK(ClassifyNic(sel, "eth2", false, false).counted);
  CHECK_FALSE(ClassifyNic(sel, "eth4", false, false).counted);
  CHECK(ClassifyNic(sel, "ens1", false, false).counted);
  CHECK_FALSE(ClassifyNic(sel, "ens0", false, false).counted);
  CHECK(ClassifyNic(sel, "x]y", false, false).counted);
}

TEST_CASE("nic classifier: flag values split on commas, repeat, and drop blanks") {
  NicSelection sel = MustParse({"veth*, tap0", "", ",,", "dummy0"}, {" eth1 ,"});
  CHECK(sel.allow == std::vector<std::string>{"veth*", "tap0", "dummy0"});
  CHECK(sel.deny == std::vector<std::string>{"eth1"});
  CHECK(sel.speed_override.empty());
}

TEST_CASE("nic classifier: an unbalanced bracket is an error naming the flag") {
  auto a = ParseNicSelection({"ok*", "eth[0"}, {}, {});
  REQUIRE_FALSE(a.ok());
  CHECK(a.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(a.status().message(), Catch::Contains("--nic-allow"));
  CHECK_THAT(a.status().message(), Catch::Contains("eth[0"));

  auto d = ParseNicSelection({}, {"[!"}, {});
  REQUIRE_FALSE(d.ok());
  CHECK_THAT(d.status().message(), Catch::Contains("--nic-deny"));

  CHECK_FALSE(ParseNicSelection({"[]"}, {}, {}).ok());  // ']' right after '[' is a member
  CHECK(ParseNicSelection({"eth\\[0"}, {}, {}).ok());   // an escaped '[' is a literal
}

TEST_CASE("nic classifier: speed overrides") {
  NicSelection sel = MustParse({}, {}, {"veth0=10000", "veth1=25000,ens5 = 1000", "veth0=10000"});
  CHECK(sel.speed_override ==
        std::map<std::string, int64_t>{{"veth0", 10000}, {"veth1", 25000}, {"ens5", 1000}});
  CHECK(EffectiveSpeed(sel, "veth0", -1) == 10000);
  CHECK(EffectiveSpeed(sel, "ens5", 50000) == 1000);  // the override wins over sysfs
  CHECK(EffectiveSpeed(sel, "eth0", 25000) == 25000);
  CHECK(EffectiveSpeed(sel, "eth0", -1) == -1);
  CHECK(EffectiveSpeed(sel, "VETH0", 7) == 7);  // exact names only

  CHECK(MustParse({}, {}, {"big=10000000"}).speed_override.at("big") == 10'000'000);
}

TEST_CASE("nic classifier: bad speed overrides name the flag and the item") {
  const std::vector<std::string> bad = {
      "veth0",                       // no '='
      "=1000",                       // no name
      "veth0=",                      // no speed
      "veth0=0",                     // not positive
      "veth0=-5",                    // negative
      "veth0=10000001",              // too large
      "veth0=1e4",                   // not an integer
      "veth0=10 000",                // not an integer
      "veth0=99999999999999999999",  // overflows
  };
  for (const auto& item : bad) {
    INFO(item);
    auto sel = ParseNicSelection({}, {}, {item});
    REQUIRE_FALSE(sel.ok());
    CHECK(sel.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(sel.status().message(), Catch::Contains("--nic-speed-override"));
    CHECK_THAT(sel.status().message(), Catch::Contains(item));
  }
  auto conflict = ParseNicSelection({}, {}, {"veth0=1000", "veth0=2000"});
  REQUIRE_FALSE(conflict.ok());
  CHECK_THAT(conflict.status().message(), Catch::Contains("veth0"));
}
