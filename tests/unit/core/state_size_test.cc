#include "core/state_size.h"

#include <catch2/catch.hpp>
#include <string>

namespace netqos::core {
namespace {

TEST_CASE("a JSON string is counted at its longest encoding", "[state_size]") {
  CHECK(JsonStringBytes("") == 2);
  CHECK(JsonStringBytes("abc") == 5);
  CHECK(JsonStringBytes("a\"b\\c") == 2 + 5 + 2);
  CHECK(JsonStringBytes(std::string("\x01\n", 2)) == 2 + 12);
  // Two bytes of valid UTF-8 and one stray continuation byte: three each.
  CHECK(JsonStringBytes("\xc3\xa9\x80") == 2 + 9);
  CHECK(JsonStringBytes(std::string(1000, 'x')) == 1002);
}

TEST_CASE("metadata counts every label and annotation with its punctuation", "[state_size]") {
  CHECK(MetadataBytes({}, {}) == 0);
  // "k":"v", -> 3 + 3 + 2
  CHECK(MetadataBytes({{"k", "v"}}, {}) == 8);
  CHECK(MetadataBytes({{"k", "v"}}, {{"kk", "vv"}}) == 8 + 10);
}

TEST_CASE("an entry counts its strings, its map keys and its NIC twice", "[state_size]") {
  AllocationInfo info;
  const size_t empty = EntryBytes(info);
  // Eleven strings, the four written twice: 2 bytes each for the quotes.
  CHECK(empty == kEntryFixedBytes + 2 * (7 + 2 * 4));
  info.pod_uid = std::string(100, 'u');
  CHECK(EntryBytes(info) == empty + 200);
  info.annotations = {{"k", std::string(50, 'v')}};
  CHECK(EntryBytes(info) == empty + 200 + MetadataBytes({}, info.annotations));
  info.numa_nodes = {0, 1};
  CHECK(EntryBytes(info) == empty + 200 + MetadataBytes({}, info.annotations) + 44);
}

}  // namespace
}  // namespace netqos::core
