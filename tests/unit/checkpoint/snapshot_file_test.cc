// The snapshot's text on its own (snapshot_file.h): what RenderSnapshot writes reads back the
// same by the fast path over its bytes and by the whole-document check, and a file that is not
// what was written is named for what is wrong.
#include "checkpoint/snapshot_file.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "checkpoint/katalyst_checksum.h"
#include "checkpoint/own_checksum.h"

namespace netqos::checkpoint {
namespace {

using nlohmann::json;

core::Snapshot TwoPods() {
  core::Snapshot s;
  for (const char* uid : {"uid-a", "uid-b"}) {
    core::AllocationInfo info;
    info.pod_uid = uid;
    info.pod_namespace = "ns";
    info.pod_name = uid;
    info.container_name = "main";
    info.container_type = "MAIN";
    info.egress = 100;
    info.ingress = 100;
    info.if_name = "eth0";
    info.ns_name = "";
    info.labels = {{"katalyst.kubewharf.io/qos_level", "shared_cores"}};
    info.qos_level = "shared_cores";
    info.net_class_id = "3";
    s.pod_entries[uid]["main"] = info;
  }
  s.machine_state[core::NicId{"", "eth0"}] = core::NicState{};
  return s;
}

TEST_CASE("a rendered snapshot parses back to its entries and seq, in both layouts",
          "[snapshot_file]") {
  for (KatalystLayout layout : {KatalystLayout::kV053, KatalystLayout::kHead}) {
    INFO(KatalystLayoutName(layout));
    const std::string text = RenderSnapshot(17, TwoPods(), layout, "/state/x");
    auto parsed = ParseSnapshot("/state/x", text, /*skip=*/false);
    REQUIRE(parsed.ok());
    CHECK(parsed->seq == 17);
    CHECK(parsed->pod_entries == TwoPods().pod_entries);
    CHECK_FALSE(parsed->katalyst);
    CHECK_FALSE(parsed->corruption_skipped);
    // The same document re-dumped with another key order misses the fast path over the bytes
    // and goes through the whole-document check, with the same result.
    json doc = json::parse(text);
    auto slow = ParseSnapshot("/state/x", doc.dump(2), false);
    REQUIRE(slow.ok());
    CHECK(slow->seq == 17);
    CHECK(slow->pod_entries == parsed->pod_entries);
  }
}

TEST_CASE("a changed entry fails netqos's checksum, or loads flagged with skip",
          "[snapshot_file]") {
  json doc = json::parse(RenderSnapshot(5, TwoPods(), KatalystLayout::kV053, "p"));
  doc["pod_entries"]["uid-a"]["main"]["egress"] = 100000;
  const std::string text = doc.dump();
  auto strict = ParseSnapshot("/state/x", text, false);
  REQUIRE_FALSE(strict.ok());
  CHECK(strict.status().code() == StatusCode::kDataLoss);
  CHECK_THAT(strict.status().message(),
             Catch::Contains("checkpoint /state/x failed its checksum") &&
                 Catch::Contains(kSkipCorruptionHint));
  auto skipped = ParseSnapshot("/state/x", text, true);
  REQUIRE(skipped.ok());
  CHECK(skipped->corruption_skipped);
  CHECK(skipped->pod_entries.at("uid-a").at("main").egress == 100000);
}

TEST_CASE("a file without the netqos member is Katalyst's, checked against its checksum",
          "[snapshot_file]") {
  json doc = json::parse(RenderSnapshot(5, TwoPods(), KatalystLayout::kV053, "p"));
  doc.erase("netqos");  // what Katalyst writes: its own checksum, which RenderSnapshot computed
  auto katalyst = ParseSnapshot("/state/x", doc.dump(), false);
  REQUIRE(katalyst.ok());
  CHECK(katalyst->katalyst);
  CHECK(katalyst->seq == 0);
  doc["checksum"] = 1;
  auto mismatch = ParseSnapshot("/state/x", doc.dump(), false);
  REQUIRE_FALSE(mismatch.ok());
  CHECK_THAT(mismatch.status().message(),
             Catch::Contains("was written by Katalyst and its Katalyst checksum did not match"));
}

TEST_CASE("the Katalyst checksum is that of the bytes written, whatever the names hold",
          "[snapshot_file]") {
  // Plain ASCII and valid non-ASCII are hashed as held; a literal U+FFFD and invalid UTF-8 (which
  // the file holds as U+FFFD) as they read back from the file.
  for (const std::string& name : {std::string("plain"), std::string("caf\u00e9 \u4e2d"),
                                  std::string("r\xef\xbf\xbd"
                                              "d"),
                                  std::string("bad\xff\xc3")}) {
    INFO(name);
    core::Snapshot snap = TwoPods();
    snap.pod_entries["uid-a"]["main"].pod_name = name;
    snap.pod_entries["uid-b"]["main"].labels["team"] = name;
    // Names that put a "netqos" member inside the entries, before and after the top-level one.
    core::AllocationInfo inner = snap.pod_entries["uid-a"]["main"];
    inner.pod_uid = "netqos";
    inner.container_name = "format";
    inner.labels["netqos"] = "{\"format\":2,";
    snap.pod_entries["netqos"]["format"] = inner;
    for (KatalystLayout layout : {KatalystLayout::kV053, KatalystLayout::kHead}) {
      INFO(KatalystLayoutName(layout));
      const std::string text = RenderSnapshot(5, snap, layout, "p");
      const json doc = json::parse(text);
      auto computed = KatalystChecksum(doc, layout);
      REQUIRE(computed.ok());
      CHECK(doc.at("checksum").get<uint64_t>() == computed.value());
      // The checksums are in the text as a dump of the whole document puts them.
      CHECK(CanonicalDump(doc) == text);
      auto parsed = ParseSnapshot("p", text, /*skip=*/false);
      REQUIRE(parsed.ok());
      CHECK_FALSE(parsed->corruption_skipped);
      CHECK(parsed->pod_entries.at("netqos").count("format") == 1);
    }
  }
}

TEST_CASE("malformed text, an unknown format and another policy are refused by name",
          "[snapshot_file]") {
  auto malformed = ParseSnapshot("/state/x", "{\"pod_entries\":", false);
  REQUIRE_FALSE(malformed.ok());
  CHECK(malformed.status().code() == StatusCode::kDataLoss);
  CHECK_THAT(malformed.status().message(),
             Catch::StartsWith("checkpoint /state/x is malformed and was left in place: "));

  json doc = json::parse(RenderSnapshot(5, TwoPods(), KatalystLayout::kV053, "p"));
  json future = doc;
  future["netqos"]["format"] = 99;
  auto unknown = ParseSnapshot("/state/x", future.dump(), true);
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(unknown.status().message(), Catch::Contains("has format 99"));

  json other = doc;
  other["policyName"] = "dynamic";
  // Re-signed, so that only the policy is wrong.
  other["netqos"].erase("checksum");
  json unsigned_doc = other;
  unsigned_doc.erase("checksum");
  other["netqos"]["checksum"] = Fnv1a64(CanonicalDump(unsigned_doc));
  auto refused = ParseSnapshot("/state/x", other.dump(), false);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.status().message(), Catch::Contains("written by policy \"dynamic\""));
  CHECK(ParseSnapshot("/state/x", other.dump(), true).ok());
}

}  // namespace
}  // namespace netqos::checkpoint
