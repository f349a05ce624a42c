// NRI's mux framing: the header's layout and byte order, the reserved id, the size limit, and
// the incremental decoder fed in every possible split.
#include "nri/mux_frame.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

using netqos::StatusCode;
using netqos::nri::EncodeMuxFrame;
using netqos::nri::EncodeMuxFrames;
using netqos::nri::kMaxMuxPayload;
using netqos::nri::MuxDecoder;
using netqos::nri::MuxFrame;

namespace {

std::string Encoded(uint32_t conn_id, const std::string& payload) {
  auto bytes = EncodeMuxFrame(conn_id, payload);
  INFO(bytes.status().message());
  REQUIRE(bytes.ok());
  return *bytes;
}

// Every frame the decoder yields, failing the test on an error.
std::vector<MuxFrame> Drain(MuxDecoder& decoder) {
  std::vector<MuxFrame> frames;
  while (true) {
    auto next = decoder.Next();
    INFO(next.status().message());
    REQUIRE(next.ok());
    if (!next->has_value()) return frames;
    frames.push_back(std::move(**next));
  }
}

// A header announcing `length` bytes on `conn_id`, written out by hand.
std::string Header(uint32_t conn_id, uint32_t length) {
  std::string h;
  for (uint32_t v : {conn_id, length}) {
    for (int shift = 24; shift >= 0; shift -= 8)
      h.push_back(static_cast<char>((v >> shift) & 0xff));
  }
  return h;
}

}  // namespace

TEST_CASE("nri mux: a frame is connection id then length, both big-endian", "[nri]") {
  const std::string bytes = Encoded(0x01020304, "abc");
  CHECK(bytes == std::string("\x01\x02\x03\x04\x00\x00\x00\x03"
                             "abc",
                             11));
  CHECK(Encoded(2, "") == std::string("\x00\x00\x00\x02\x00\x00\x00\x00", 8));
}

TEST_CASE("nri mux: connection id 0 is reserved for the encoder", "[nri]") {
  auto frame = EncodeMuxFrame(0, "x");
  REQUIRE_FALSE(frame.ok());
  CHECK(frame.status().message() == "mux connection id 0 is reserved");
  auto frames = EncodeMuxFrames(0, "x");
  REQUIRE_FALSE(frames.ok());
  CHECK(frames.status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("nri mux: the decoder still frames a reserved or unknown id, for the caller to drop",
          "[nri]") {
  MuxDecoder decoder;
  decoder.Feed(Header(0, 2) + "zz" + Header(7, 1) + "y" + Encoded(1, "ok"));
  auto frames = Drain(decoder);
  REQUIRE(frames.size() == 3);
  CHECK(frames[0] == MuxFrame{0, "zz"});
  CHECK(frames[1] == MuxFrame{7, "y"});
  CHECK(frames[2] == MuxFrame{1, "ok"});
  CHECK_FALSE(netqos::nri::IsKnownMuxConnId(frames[0].conn_id));
  CHECK_FALSE(netqos::nri::IsKnownMuxConnId(frames[1].conn_id));
  CHECK(netqos::nri::IsKnownMuxConnId(frames[2].conn_id));
}

TEST_CASE("nri mux: frames split at every byte boundary decode the same", "[nri]") {
  const std::string stream = Encoded(1, "first") + Encoded(2, "") + Encoded(2, "second payload");
  const std::vector<MuxFrame> want = {{1, "first"}, {2, ""}, {2, "second payload"}};
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    INFO("cut at " << cut);
    MuxDecoder decoder;
    decoder.Feed(stream.substr(0, cut));
    auto frames = Drain(decoder);
    decoder.Feed(stream.substr(cut));
    for (auto& f : Drain(decoder)) frames.push_back(std::move(f));
    CHECK(frames == want);
    CHECK(decoder.buffered() == 0);
  }
  // One byte at a time.
  MuxDecoder decoder;
  std::vector<MuxFrame> frames;
  for (char c : stream) {
    decoder.Feed(std::string(1, c));
    for (auto& f : Drain(decoder)) frames.push_back(std::move(f));
  }
  CHECK(frames == want);
}

TEST_CASE("nri mux: a truncated frame waits for the rest", "[nri]") {
  const std::string frame = Encoded(2, "payload");
  MuxDecoder decoder;
  decoder.Feed(frame.substr(0, frame.size() - 1));
  CHECK(Drain(decoder).empty());
  CHECK(decoder.buffered() == frame.size() - 1);
  decoder.Feed(frame.substr(frame.size() - 1));
  auto frames = Drain(decoder);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].payload == "payload");
}

TEST_CASE("nri mux: a length above the limit ends the stream with an error naming it", "[nri]") {
  MuxDecoder decoder;
  decoder.Feed(Encoded(1, "fine") + Header(2, kMaxMuxPayload + 1) + "more");
  auto first = decoder.Next();
  REQUIRE(first.ok());
  REQUIRE(first->has_value());
  auto bad = decoder.Next();
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == StatusCode::kResourceExhausted);
  CHECK(bad.status().message() == "mux frame on connection 2 of 4194315 bytes exceeds 4194314");
  // No resynchronisation: the error stays, whatever comes next.
  decoder.Feed(Encoded(1, "later"));
  auto again = decoder.Next();
  REQUIRE_FALSE(again.ok());
  CHECK(again.status().message() == bad.status().message());
}

TEST_CASE("nri mux: a frame of exactly the limit is accepted", "[nri]") {
  const std::string payload(kMaxMuxPayload, 'p');
  MuxDecoder decoder;
  decoder.Feed(Encoded(1, payload));
  auto frames = Drain(decoder);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].payload.size() == kMaxMuxPayload);
  auto too_big = EncodeMuxFrame(1, payload + "q");
  REQUIRE_FALSE(too_big.ok());
  CHECK(too_big.status().message() == "mux frame of 4194315 bytes exceeds 4194314");
}

TEST_CASE("nri mux: a long write is cut into frames of the limit, as NRI's writer does", "[nri]") {
  std::string stream(2 * static_cast<size_t>(kMaxMuxPayload) + 5, '\0');
  for (size_t i = 0; i < stream.size(); ++i) stream[i] = static_cast<char>(i * 7);
  auto bytes = EncodeMuxFrames(2, stream);
  REQUIRE(bytes.ok());
  MuxDecoder decoder;
  decoder.Feed(*bytes);
  auto frames = Drain(decoder);
  REQUIRE(frames.size() == 3);
  CHECK(frames[0].payload.size() == kMaxMuxPayload);
  CHECK(frames[1].payload.size() == kMaxMuxPayload);
  CHECK(frames[2].payload.size() == 5);
  CHECK(frames[0].payload + frames[1].payload + frames[2].payload == stream);
  // An empty write is one empty frame.
  auto empty = EncodeMuxFrames(1, "");
  REQUIRE(empty.ok());
  CHECK(*empty == Encoded(1, ""));
}
