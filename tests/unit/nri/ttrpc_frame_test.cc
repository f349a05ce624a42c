// ttRPC's message framing: the 10-byte header's layout and byte order, the 4 MiB limit, and the
// incremental decoder fed in every possible split.
#include "nri/ttrpc_frame.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "nri/mux_frame.h"

using netqos::StatusCode;
using netqos::nri::EncodeTtrpcMessage;
using netqos::nri::kMaxTtrpcMessage;
using netqos::nri::kTtrpcFlagNoData;
using netqos::nri::kTtrpcFlagRemoteClosed;
using netqos::nri::TtrpcDecoder;
using netqos::nri::TtrpcMessage;
using netqos::nri::TtrpcType;

namespace {

std::string Encoded(uint32_t stream_id, TtrpcType type, uint8_t flags, const std::string& data) {
  auto bytes = EncodeTtrpcMessage(stream_id, type, flags, data);
  INFO(bytes.status().message());
  REQUIRE(bytes.ok());
  return *bytes;
}

std::vector<TtrpcMessage> Drain(TtrpcDecoder& decoder) {
  std::vector<TtrpcMessage> messages;
  while (true) {
    auto next = decoder.Next();
    INFO(next.status().message());
    REQUIRE(next.ok());
    if (!next->has_value()) return messages;
    messages.push_back(std::move(**next));
  }
}

std::string BigEndian(uint32_t v) {
  std::string out;
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((v >> shift) & 0xff));
  return out;
}

}  // namespace

TEST_CASE("nri ttrpc: the header is length, stream id (big-endian), type and flags", "[nri]") {
  const std::string bytes = Encoded(0x0a0b0c0d, TtrpcType::kResponse, 0x05, "hi");
  CHECK(bytes == std::string("\x00\x00\x00\x02\x0a\x0b\x0c\x0d\x02\x05hi", 12));
  CHECK(Encoded(1, TtrpcType::kRequest, 0, "").size() == netqos::nri::kTtrpcHeaderSize);
}

TEST_CASE("nri ttrpc: type names, known and unknown", "[nri]") {
  CHECK(netqos::nri::TtrpcTypeName(1) == "request");
  CHECK(netqos::nri::TtrpcTypeName(2) == "response");
  CHECK(netqos::nri::TtrpcTypeName(3) == "data");
  CHECK(netqos::nri::TtrpcTypeName(0x7f) == "type 0x7f");
}

TEST_CASE("nri ttrpc: messages split at every byte boundary decode the same", "[nri]") {
  const std::string stream =
      Encoded(1, TtrpcType::kRequest, 0, "call") +
      Encoded(3, TtrpcType::kData, kTtrpcFlagRemoteClosed | kTtrpcFlagNoData, "") +
      Encoded(2, TtrpcType::kResponse, 0, std::string(300, 'r'));
  const std::vector<TtrpcMessage> want = {
      {1, 1, 0, "call"}, {3, 3, 0x5, ""}, {2, 2, 0, std::string(300, 'r')}};
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    INFO("cut at " << cut);
    TtrpcDecoder decoder;
    decoder.Feed(stream.substr(0, cut));
    auto messages = Drain(decoder);
    decoder.Feed(stream.substr(cut));
    for (auto& m : Drain(decoder)) messages.push_back(std::move(m));
    CHECK(messages == want);
    CHECK(decoder.buffered() == 0);
  }
}

TEST_CASE("nri ttrpc: a truncated message waits for the rest", "[nri]") {
  const std::string message = Encoded(5, TtrpcType::kRequest, 0, "abcdef");
  TtrpcDecoder decoder;
  decoder.Feed(message.substr(0, 9));  // not even a whole header
  CHECK(Drain(decoder).empty());
  decoder.Feed(message.substr(9, 4));  // header, part of the data
  CHECK(Drain(decoder).empty());
  CHECK(decoder.buffered() == 13);
  decoder.Feed(message.substr(13));
  auto messages = Drain(decoder);
  REQUIRE(messages.size() == 1);
  CHECK(messages[0].data == "abcdef");
}

TEST_CASE("nri ttrpc: an unknown type is delivered, not refused", "[nri]") {
  TtrpcDecoder decoder;
  decoder.Feed(BigEndian(1) + BigEndian(9) + std::string("\x09\x00", 2) + "x");
  auto messages = Drain(decoder);
  REQUIRE(messages.size() == 1);
  CHECK(messages[0] == TtrpcMessage{9, 9, 0, "x"});
}

TEST_CASE("nri ttrpc: a length above 4 MiB ends the stream with an error naming it", "[nri]") {
  TtrpcDecoder decoder;
  decoder.Feed(BigEndian(5000000) + BigEndian(7) + std::string("\x01\x00", 2));
  auto bad = decoder.Next();
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == StatusCode::kResourceExhausted);
  CHECK(bad.status().message() == "ttrpc request on stream 7 of 5000000 bytes exceeds 4194304");
  decoder.Feed(Encoded(9, TtrpcType::kRequest, 0, "later"));
  CHECK_FALSE(decoder.Next().ok());
}

TEST_CASE("nri ttrpc: exactly 4 MiB is accepted, one byte more is refused", "[nri]") {
  const std::string data(kMaxTtrpcMessage, 'd');
  TtrpcDecoder decoder;
  decoder.Feed(Encoded(1, TtrpcType::kRequest, 0, data));
  auto messages = Drain(decoder);
  REQUIRE(messages.size() == 1);
  CHECK(messages[0].data.size() == kMaxTtrpcMessage);
  auto too_big = EncodeTtrpcMessage(1, TtrpcType::kResponse, 0, data + "x");
  REQUIRE_FALSE(too_big.ok());
  CHECK(too_big.status().message() == "ttrpc response of 4194305 bytes exceeds 4194304");
}

TEST_CASE("nri ttrpc: the largest message fits one mux frame", "[nri]") {
  CHECK(netqos::nri::kTtrpcHeaderSize + kMaxTtrpcMessage == netqos::nri::kMaxMuxPayload);
}
