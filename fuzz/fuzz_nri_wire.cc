// libFuzzer target: the NRI wire decoders (userspace/nri), on whatever a runtime, or anything
// else that reaches the NRI socket, may send. Input: the socket's bytes; its first byte chooses
// the chunk size the bytes are fed in (1-256), the rest is the stream.
//
// Invariants:
// - no crash, no exception, no unbounded buffering: an error is a named ResourceExhausted and
//   is returned again by every later call;
// - chunking changes nothing: the stream fed whole gives the same frames, messages and error;
// - what decodes re-encodes to exactly the bytes it came from, for mux frames and for the ttRPC
//   messages inside each connection's stream;
// - the call and reply decoders refuse with a named InvalidArgument (calls) or DataLoss (replies),
//   and a failed reply carries no payload.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "nri/big_endian.h"
#include "nri/mux_frame.h"
#include "nri/ttrpc_call.h"
#include "nri/ttrpc_frame.h"
#include "nri/v1alpha1/api.pb.h"

namespace {

using namespace netqos;
using namespace netqos::nri;

struct Decoded {
  std::vector<MuxFrame> frames;
  std::string mux_error;
  size_t mux_buffered = 0;
};

Decoded DecodeMux(std::string_view stream, size_t chunk) {
  Decoded out;
  MuxDecoder decoder;
  for (size_t at = 0; at < stream.size() && out.mux_error.empty(); at += chunk) {
    decoder.Feed(stream.substr(at, chunk));
    while (true) {
      auto next = decoder.Next();
      if (!next.ok()) {
        FUZZ_CHECK(next.status().code() == StatusCode::kResourceExhausted, "a named limit error");
        FUZZ_CHECK(!next.status().message().empty(), "errors say what failed");
        FUZZ_CHECK(decoder.Next().status().message() == next.status().message(), "sticky");
        out.mux_error = next.status().message();
        break;
      }
      if (!next->has_value()) break;
      FUZZ_CHECK((*next)->payload.size() <= kMaxMuxPayload, "frames respect the limit");
      out.frames.push_back(std::move(**next));
    }
    if (out.mux_error.empty()) {
      FUZZ_CHECK(decoder.buffered() < kMuxHeaderSize + kMaxMuxPayload + chunk, "bounded");
    }
  }
  out.mux_buffered = decoder.buffered();
  return out;
}

std::string ReencodeMux(const MuxFrame& frame) {
  if (frame.conn_id == kMuxReservedConnId) {
    FUZZ_CHECK(!EncodeMuxFrame(frame.conn_id, frame.payload).ok(), "id 0 is refused");
    std::string bytes;  // written by hand: the encoder refuses the reserved id
    AppendBigEndian32(frame.conn_id, bytes);
    AppendBigEndian32(static_cast<uint32_t>(frame.payload.size()), bytes);
    return bytes + frame.payload;
  }
  auto bytes = EncodeMuxFrame(frame.conn_id, frame.payload);
  FUZZ_CHECK(bytes.ok(), "a decoded frame encodes");
  return *bytes;
}

void CheckCall(const TtrpcMessage& message) {
  auto call = DecodeTtrpcRequest(message);
  if (!call.ok()) {
    FUZZ_CHECK(call.status().code() == StatusCode::kInvalidArgument, "a refused call is invalid");
    FUZZ_CHECK(!call.status().message().empty(), "errors say what failed");
  } else if (call->method == "Configure") {
    ::nri::pkg::api::v1alpha1::ConfigureRequest configure;
    (void)configure.ParseFromString(call->payload);
  }
  auto reply = DecodeTtrpcResponse(message);
  if (!reply.ok()) {
    FUZZ_CHECK(reply.status().code() == StatusCode::kDataLoss, "a bad reply is a protocol error");
    FUZZ_CHECK(!reply.status().message().empty(), "errors say what failed");
  } else {
    FUZZ_CHECK(reply->status.ok() || reply->payload.empty(), "a failed reply has no result");
    // Answering with the decoded status encodes, unless the reply was at the size limit already.
    FUZZ_CHECK(EncodeTtrpcResponse(message.stream_id, reply->status, reply->payload).ok() ||
                   message.data.size() > kMaxTtrpcMessage - 64,
               "a reply re-encodes");
  }
}

// The ttRPC messages of one connection's stream, checked; returns them with the error, if any.
std::vector<TtrpcMessage> DecodeTtrpc(std::string_view stream, size_t chunk, std::string& error) {
  std::vector<TtrpcMessage> messages;
  TtrpcDecoder decoder;
  for (size_t at = 0; at < stream.size() && error.empty(); at += chunk) {
    decoder.Feed(stream.substr(at, chunk));
    while (true) {
      auto next = decoder.Next();
      if (!next.ok()) {
        FUZZ_CHECK(next.status().code() == StatusCode::kResourceExhausted, "a named limit error");
        FUZZ_CHECK(decoder.Next().status().message() == next.status().message(), "sticky");
        error = next.status().message();
        break;
      }
      if (!next->has_value()) break;
      messages.push_back(std::move(**next));
    }
  }
  return messages;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = size_t{data[0]} + 1;
  const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);

  const Decoded whole = DecodeMux(stream, stream.size() + 1);
  const Decoded chunked = DecodeMux(stream, chunk);
  FUZZ_CHECK(whole.frames == chunked.frames, "chunking does not change the frames");
  FUZZ_CHECK(whole.mux_error == chunked.mux_error, "chunking does not change the error");

  std::string reencoded;
  std::map<uint32_t, std::string> streams;
  for (const auto& frame : whole.frames) {
    reencoded += ReencodeMux(frame);
    streams[frame.conn_id] += frame.payload;
  }
  FUZZ_CHECK(stream.substr(0, reencoded.size()) == reencoded, "frames re-encode to their bytes");
  if (whole.mux_error.empty()) {
    FUZZ_CHECK(reencoded.size() + whole.mux_buffered == stream.size(), "every byte accounted");
  }

  for (const auto& [conn_id, bytes] : streams) {
    std::string whole_error, chunked_error;
    const auto messages = DecodeTtrpc(bytes, bytes.size() + 1, whole_error);
    FUZZ_CHECK(DecodeTtrpc(bytes, chunk, chunked_error) == messages, "chunking changes nothing");
    FUZZ_CHECK(whole_error == chunked_error, "chunking does not change the error");
    std::string again;
    for (const auto& message : messages) {
      auto encoded = EncodeTtrpcMessage(message.stream_id, static_cast<TtrpcType>(message.type),
                                        message.flags, message.data);
      FUZZ_CHECK(encoded.ok(), "a decoded message encodes");
      again += *encoded;
      CheckCall(message);
    }
    FUZZ_CHECK(bytes.substr(0, again.size()) == again, "messages re-encode to their bytes");
  }
  return 0;
}
