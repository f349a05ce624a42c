// Byte-level checks of the nil vs empty hint-list encodings the kubelet tells apart.
#include <catch2/catch.hpp>
#include <string>

#include "core/constants.h"
#include "grpc/translate.h"

namespace netqos::grpcadapter {
namespace {

std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) out.push_back(static_cast<char>(b));
  return out;
}

std::string Len(size_t n) {
  REQUIRE(n < 128);  // single-byte varints keep the expectations readable
  return std::string(1, static_cast<char>(n));
}

const std::string kKey = core::kResourceName;

// The map entry as gogo marshals it: key only (nil value) or key plus value.
std::string NilEntry() { return Bytes({0x0a}) + Len(kKey.size()) + kKey; }
std::string EmptyEntry() { return NilEntry() + Bytes({0x12, 0x00}); }

core::HintsResponse Hints(std::optional<std::vector<core::TopologyHint>> hints) {
  core::HintsResponse r;
  r.resource_name = kKey;
  r.hints = std::move(hints);
  return r;
}

}  // namespace

TEST_CASE("container hints: nil encodes the entry key only", "[grpc][wire]") {
  pb::ResourceHintsResponse out;
  ToProto(pb::ResourceRequest{}, Hints(std::nullopt), &out);
  std::string wire;
  REQUIRE(out.SerializeToString(&wire));
  const std::string expected = Bytes({0x4a}) + Len(kKey.size()) + kKey +  // resource_name = 9
                               Bytes({0x52}) + Len(NilEntry().size()) + NilEntry();  // field 10
  CHECK(wire == expected);
  CHECK(wire.find(Bytes({0x12})) == std::string::npos);

  pb::ResourceHintsResponse parsed;
  REQUIRE(parsed.ParseFromString(wire));
  REQUIRE(parsed.resource_hints_size() == 1);
  CHECK_FALSE(parsed.resource_hints(0).has_value());
}

TEST_CASE("container hints: empty list encodes an empty value", "[grpc][wire]") {
  pb::ResourceHintsResponse out;
  ToProto(pb::ResourceRequest{}, Hints(std::vector<core::TopologyHint>{}), &out);
  std::string wire;
  REQUIRE(out.SerializeToString(&wire));
  const std::string expected = Bytes({0x4a}) + Len(kKey.size()) + kKey + Bytes({0x52}) +
                               Len(EmptyEntry().size()) + EmptyEntry();
  CHECK(wire == expected);
  CHECK(wire.substr(wire.size() - 2) == Bytes({0x12, 0x00}));

  pb::ResourceHintsResponse parsed;
  REQUIRE(parsed.ParseFromString(wire));
  REQUIRE(parsed.resource_hints_size() == 1);
  CHECK(parsed.resource_hints(0).has_value());
  CHECK(parsed.resource_hints(0).value().hints_size() == 0);
}

TEST_CASE("pod hints: nil and empty use field 7", "[grpc][wire]") {
  std::string wire;
  pb::PodResourceHintsResponse nil_out;
  ToProto(pb::PodResourceRequest{}, Hints(std::nullopt), &nil_out);
  REQUIRE(nil_out.SerializeToString(&wire));
  CHECK(wire == Bytes({0x32}) + Len(kKey.size()) + kKey + Bytes({0x3a}) + Len(NilEntry().size()) +
                    NilEntry());

  pb::PodResourceHintsResponse empty_out;
  ToProto(pb::PodResourceRequest{}, Hints(std::vector<core::TopologyHint>{}), &empty_out);
  REQUIRE(empty_out.SerializeToString(&wire));
  CHECK(wire == Bytes({0x32}) + Len(kKey.size()) + kKey + Bytes({0x3a}) + Len(EmptyEntry().size()) +
                    EmptyEntry());
}

TEST_CASE("non-empty hint lists round-trip in order", "[grpc][wire]") {
  std::vector<core::TopologyHint> hints = {{{0, 1}, true}, {{2, 3}, false}, {{0, 1, 2, 3}, false}};
  pb::ResourceHintsResponse out;
  ToProto(pb::ResourceRequest{}, Hints(hints), &out);
  std::string wire;
  REQUIRE(out.SerializeToString(&wire));
  pb::ResourceHintsResponse parsed;
  REQUIRE(parsed.ParseFromString(wire));
  REQUIRE(parsed.resource_hints_size() == 1);
  CHECK(parsed.resource_hints(0).key() == kKey);
  const auto& list = parsed.resource_hints(0).value();
  REQUIRE(list.hints_size() == 3);
  for (int i = 0; i < 3; ++i) CHECK(ToCore(list.hints(i)) == hints[static_cast<size_t>(i)]);

  // The first hint on the wire: 0x0a len {0x0a 0x02 0x00 0x01 (packed nodes) 0x10 0x01}.
  const std::string first_hint = Bytes({0x0a, 0x06, 0x0a, 0x02, 0x00, 0x01, 0x10, 0x01});
  CHECK(wire.find(NilEntry() + Bytes({0x12})) != std::string::npos);
  CHECK(wire.find(first_hint) != std::string::npos);
}

TEST_CASE("allocation: a nil hint element is sent as an empty TopologyHint", "[grpc][wire]") {
  core::AllocationResponse alloc;
  alloc.resource_name = kKey;
  alloc.has_allocation = true;
  pb::ResourceAllocationResponse out;
  ToProto(pb::ResourceRequest{}, alloc, &out);
  const auto& info = out.allocation_result().resource_allocation().at(kKey);
  std::string wire;
  REQUIRE(info.SerializeToString(&wire));
  // is_node_resource, is_scalar_resource, then resource_hints = 8 holding one empty element.
  CHECK(wire == Bytes({0x10, 0x01, 0x18, 0x01, 0x42, 0x02, 0x0a, 0x00}));
}

}  // namespace netqos::grpcadapter
