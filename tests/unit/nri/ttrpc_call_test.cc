// The ttRPC call envelope in both directions, checked against bytes written out by hand from
// the protobuf wire format (so that a wrong field number or type in proto/ttrpc fails here),
// and the errors of a malformed call or reply.
#include "nri/ttrpc_call.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "nri/v1alpha1/api.pb.h"
#include "ttrpc/request.pb.h"

using netqos::Status;
using netqos::StatusCode;
using netqos::nri::DecodeTtrpcRequest;
using netqos::nri::DecodeTtrpcResponse;
using netqos::nri::EncodeTtrpcRequest;
using netqos::nri::EncodeTtrpcResponse;
using netqos::nri::TtrpcMessage;
using netqos::nri::TtrpcType;

namespace api = nri::pkg::api::v1alpha1;

namespace {

constexpr char kRuntime[] = "nri.pkg.api.v1alpha1.Runtime";

// The message a decoder would return for `bytes` (a whole encoded message).
TtrpcMessage Framed(const std::string& bytes) {
  netqos::nri::TtrpcDecoder decoder;
  decoder.Feed(bytes);
  auto next = decoder.Next();
  REQUIRE(next.ok());
  REQUIRE(next->has_value());
  REQUIRE(decoder.buffered() == 0);
  return **next;
}

TtrpcMessage Message(uint32_t stream_id, TtrpcType type, std::string data) {
  return {stream_id, static_cast<uint8_t>(type), 0, std::move(data)};
}

std::string Response(int32_t code, const std::string& message, const std::string& payload) {
  netqos::ttrpc::Response response;
  response.mutable_status()->set_code(code);
  response.mutable_status()->set_message(message);
  response.set_payload(payload);
  return response.SerializeAsString();
}

}  // namespace

TEST_CASE("nri ttrpc call: a RegisterPlugin request is byte for byte the wire format", "[nri]") {
  api::RegisterPluginRequest argument;
  argument.set_plugin_name("netqos");
  argument.set_plugin_idx("10");
  auto bytes =
      EncodeTtrpcRequest(1, kRuntime, "RegisterPlugin", argument, std::chrono::nanoseconds(300));
  REQUIRE(bytes.ok());
  const std::string want = std::string(
                               "\x00\x00\x00\x3f"  // data length 63
                               "\x00\x00\x00\x01"  // stream 1
                               "\x01\x00",         // request, no flags
                               10) +
                           "\x0a\x1c" + kRuntime +     // 1: service
                           "\x12\x0eRegisterPlugin" +  // 2: method
                           "\x1a\x0c" +
                           "\x0a\x06netqos\x12\x02"
                           "10" +           // 3: payload
                           "\x20\xac\x02";  // 4: timeout_nano 300
  CHECK(*bytes == want);
}

TEST_CASE("nri ttrpc call: responses are byte for byte the wire format", "[nri]") {
  auto ok = EncodeTtrpcResponse(3, api::Empty());
  REQUIRE(ok.ok());
  // An OK status is sent present but empty, as ttRPC's server does; the empty result is omitted.
  CHECK(*ok == std::string("\x00\x00\x00\x02\x00\x00\x00\x03\x02\x00\x0a\x00", 12));

  auto failed = EncodeTtrpcResponse(5, Status(StatusCode::kNotFound, "no"), "ignored");
  REQUIRE(failed.ok());
  CHECK(*failed == std::string("\x00\x00\x00\x08\x00\x00\x00\x05\x02\x00"
                               "\x0a\x06\x08\x05\x12\x02no",
                               18));
}

TEST_CASE("nri ttrpc call: a served call round-trips with its deadline and metadata", "[nri]") {
  netqos::ttrpc::Request request;
  request.set_service("nri.pkg.api.v1alpha1.Plugin");
  request.set_method("Shutdown");
  request.set_payload("\x01\x02");
  request.set_timeout_nano(2'000'000'000);
  auto* kv = request.add_metadata();
  kv->set_key("k");
  kv->set_value("v");
  auto call = DecodeTtrpcRequest(Message(7, TtrpcType::kRequest, request.SerializeAsString()));
  INFO(call.status().message());
  REQUIRE(call.ok());
  CHECK(call->stream_id == 7);
  CHECK(call->service == "nri.pkg.api.v1alpha1.Plugin");
  CHECK(call->method == "Shutdown");
  CHECK(call->payload == "\x01\x02");
  CHECK(call->timeout == std::chrono::seconds(2));
  REQUIRE(call->metadata.size() == 1);
  CHECK(call->metadata[0] == std::pair<std::string, std::string>("k", "v"));
}

TEST_CASE("nri ttrpc call: the server refuses what ttRPC's server refuses", "[nri]") {
  auto even = DecodeTtrpcRequest(Message(2, TtrpcType::kRequest, ""));
  REQUIRE_FALSE(even.ok());
  CHECK(even.status().code() == StatusCode::kInvalidArgument);
  CHECK(even.status().message() == "ttrpc stream 2: a client's stream id must be odd");

  auto data = DecodeTtrpcRequest(Message(3, TtrpcType::kData, ""));
  REQUIRE_FALSE(data.ok());
  CHECK(data.status().message() == "ttrpc stream 3: got a data message, want a request");

  auto garbage = DecodeTtrpcRequest(Message(5, TtrpcType::kRequest, "\xff"));
  REQUIRE_FALSE(garbage.ok());
  CHECK(garbage.status().code() == StatusCode::kInvalidArgument);
  CHECK(garbage.status().message() == "ttrpc stream 5: request of 1 bytes does not parse");

  // An empty request is a valid (if useless) one: every field at its default.
  auto empty = DecodeTtrpcRequest(Message(1, TtrpcType::kRequest, ""));
  REQUIRE(empty.ok());
  CHECK(empty->method.empty());
}

TEST_CASE("nri ttrpc call: a reply carries the callee's status apart from protocol errors",
          "[nri]") {
  SECTION("no status at all is success") {
    netqos::ttrpc::Response response;
    response.set_payload("result");
    auto reply =
        DecodeTtrpcResponse(Message(1, TtrpcType::kResponse, response.SerializeAsString()));
    REQUIRE(reply.ok());
    CHECK(reply->status.ok());
    CHECK(reply->payload == "result");
  }
  SECTION("a gRPC code is kept with its message") {
    auto reply = DecodeTtrpcResponse(Message(3, TtrpcType::kResponse, Response(9, "not yet", "")));
    REQUIRE(reply.ok());
    CHECK(reply->stream_id == 3);
    CHECK(reply->status.code() == StatusCode::kFailedPrecondition);
    CHECK(reply->status.message() == "not yet");
  }
  SECTION("a code outside StatusCode is Unknown and named") {
    auto reply = DecodeTtrpcResponse(Message(3, TtrpcType::kResponse, Response(16, "who", "")));
    REQUIRE(reply.ok());
    CHECK(reply->status.code() == StatusCode::kUnknown);
    CHECK(reply->status.message() == "status code 16: who");
  }
  SECTION("a request where a response belongs is a protocol error") {
    auto reply = DecodeTtrpcResponse(Message(3, TtrpcType::kRequest, ""));
    REQUIRE_FALSE(reply.ok());
    CHECK(reply.status().code() == StatusCode::kDataLoss);
    CHECK(reply.status().message() == "ttrpc stream 3: got a request message, want a response");
  }
  SECTION("bytes that do not parse are a protocol error") {
    auto reply = DecodeTtrpcResponse(Message(3, TtrpcType::kResponse, "\x0a\x05"));
    REQUIRE_FALSE(reply.ok());
    CHECK(reply.status().message() == "ttrpc stream 3: response of 2 bytes does not parse");
  }
}

TEST_CASE("nri ttrpc call: what the server encodes the client decodes", "[nri]") {
  api::ConfigureResponse result;
  result.set_events(0x5a);
  auto ok = EncodeTtrpcResponse(9, result);
  REQUIRE(ok.ok());
  auto reply = DecodeTtrpcResponse(Framed(*ok));
  REQUIRE(reply.ok());
  REQUIRE(reply->status.ok());
  api::ConfigureResponse back;
  REQUIRE(back.ParseFromString(reply->payload));
  CHECK(back.events() == 0x5a);

  auto failed = EncodeTtrpcResponse(11, Status(StatusCode::kUnavailable, "busy"), "dropped");
  REQUIRE(failed.ok());
  auto error = DecodeTtrpcResponse(Framed(*failed));
  REQUIRE(error.ok());
  CHECK(error->status.code() == StatusCode::kUnavailable);
  CHECK(error->status.message() == "busy");
  CHECK(error->payload.empty());
}

TEST_CASE("nri ttrpc call: a request or response above 4 MiB is refused by name", "[nri]") {
  api::ConfigureRequest huge;
  huge.set_config(std::string(netqos::nri::kMaxTtrpcMessage, 'c'));
  auto request = EncodeTtrpcRequest(1, "nri.pkg.api.v1alpha1.Plugin", "Configure", huge);
  REQUIRE_FALSE(request.ok());
  CHECK(request.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(request.status().message(), Catch::Matchers::StartsWith("ttrpc request of ") &&
                                             Catch::Matchers::EndsWith(" bytes exceeds 4194304"));
  auto response = EncodeTtrpcResponse(1, Status::Ok(), huge.config());
  REQUIRE_FALSE(response.ok());
  CHECK_THAT(response.status().message(), Catch::Matchers::StartsWith("ttrpc response of "));
}
