// The journal's records on their own (journal_record.h): what a line holds, and each way a line
// can be wrong, named.
#include "checkpoint/journal_record.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "checkpoint/own_checksum.h"
#include "unit/checkpoint/full_allocation.h"

namespace netqos::checkpoint {
namespace {

using nlohmann::json;

// FullInfo, with a value a line must escape (a newline, quotes).
core::AllocationInfo Info() {
  core::AllocationInfo info = testing::FullInfo();
  info.annotations["k"] = "v\n\"quoted\"";
  return info;
}

json Line(const std::string& text) {
  REQUIRE(!text.empty());
  REQUIRE(text.back() == '\n');
  return json::parse(text.substr(0, text.size() - 1));
}

TEST_CASE("a set and a remove record round-trip through one line each", "[journal_record]") {
  const std::string set = EncodeRecord(41, core::SetAllocation{Info()});
  CHECK(set.find('\n') == set.size() - 1);  // one line: strings are escaped
  auto rec = DecodeRecord(Line(set));
  REQUIRE(rec.ok());
  CHECK(rec->seq == 41);
  CHECK(std::get<core::SetAllocation>(rec->change).info == Info());

  auto removed = DecodeRecord(Line(EncodeRecord(42, core::RemovePodEntries{"uid-1"})));
  REQUIRE(removed.ok());
  CHECK(removed->seq == 42);
  CHECK(std::get<core::RemovePodEntries>(removed->change).pod_uid == "uid-1");
}

TEST_CASE("a record that is not what was written is refused, naming what is wrong",
          "[journal_record]") {
  const json good = Line(EncodeRecord(7, core::SetAllocation{Info()}));
  // Re-signs a changed record, so that only the change itself is wrong.
  auto resign = [](json j) {
    j.erase("crc");
    j["crc"] = Fnv1a64(CanonicalDump(j));
    return j;
  };
  struct Case {
    const char* name;
    json line;
    const char* message;
  };
  json flipped = good;
  flipped["seq"] = 8;
  json no_seq = good;
  no_seq.erase("seq");
  json zero_seq = good;
  zero_seq["seq"] = 0;
  json bad_op = good;
  bad_op["op"] = "truncate";
  json no_alloc = good;
  no_alloc.erase("alloc");
  json remove_without_uid = good;
  remove_without_uid["op"] = "remove_pod";
  json no_crc = good;
  no_crc.erase("crc");
  const Case cases[] = {
      {"a changed field under the old crc", flipped, "crc mismatch (stored "},
      {"no crc", no_crc, "missing or malformed crc"},
      {"no seq", resign(no_seq), "missing or malformed seq"},
      {"seq 0", resign(zero_seq), "missing or malformed seq"},
      {"an unknown op", resign(bad_op), "unknown op \"truncate\""},
      {"a set without alloc", resign(no_alloc), "set record without alloc"},
      {"a remove without pod_uid", resign(remove_without_uid),
       "remove_pod record without a string pod_uid"},
      {"not an object", json::array({1, 2}), "expected an object, got array"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    auto rec = DecodeRecord(c.line);
    REQUIRE_FALSE(rec.ok());
    CHECK(rec.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(rec.status().message(), Catch::Contains(c.message));
  }
}

TEST_CASE("segment names carry their first sequence number in 20 digits", "[journal_record]") {
  const std::string name = SegmentFileName(123);
  CHECK(name == "network_plugin_state.wal.00000000000000000123");
  uint64_t first = 0;
  REQUIRE(ParseSegmentName(name, &first));
  CHECK(first == 123);
  REQUIRE(ParseSegmentName(SegmentFileName(UINT64_MAX), &first));
  CHECK(first == UINT64_MAX);
  for (const char* other : {"network_plugin_state", "network_plugin_state.wal.123",
                            "network_plugin_state.wal.0000000000000000012x",
                            "network_plugin_state.wal.99999999999999999999",  // > UINT64_MAX
                            ".network_plugin_state.tmp-1-2"}) {
    INFO(other);
    CHECK_FALSE(ParseSegmentName(other, &first));
  }
}

TEST_CASE("replaying records sets, overwrites and removes entries", "[journal_record]") {
  core::PodEntries entries;
  core::AllocationInfo info = Info();
  ApplyChange(core::SetAllocation{info}, &entries);
  info.egress = 900;
  ApplyChange(core::SetAllocation{info}, &entries);
  REQUIRE(entries.at("uid-1").at("main").egress == 900);
  ApplyChange(core::RemovePodEntries{"uid-1"}, &entries);
  CHECK(entries.empty());
}

}  // namespace
}  // namespace netqos::checkpoint
