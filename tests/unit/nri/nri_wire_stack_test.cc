// The whole stack as it meets the NRI socket: NRI messages in ttRPC calls in mux frames, both
// connections interleaved on one byte stream, read back in arbitrary chunks.
#include <google/protobuf/util/message_differencer.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "nri/mux_frame.h"
#include "nri/ttrpc_call.h"
#include "nri/ttrpc_frame.h"
#include "nri/v1alpha1/api.pb.h"

using google::protobuf::util::MessageDifferencer;
using netqos::nri::kPluginServiceConnId;
using netqos::nri::kRuntimeServiceConnId;
using netqos::nri::TtrpcMessage;

namespace api = nri::pkg::api::v1alpha1;

namespace {

std::string Ok(netqos::Result<std::string> bytes) {
  INFO(bytes.status().message());
  REQUIRE(bytes.ok());
  return std::move(bytes).value();
}

// What one side reads: the socket's bytes in chunks of `chunk`, demultiplexed by connection id
// and framed as ttRPC messages per connection.
std::map<uint32_t, std::vector<TtrpcMessage>> Read(const std::string& socket_bytes, size_t chunk) {
  netqos::nri::MuxDecoder mux;
  std::map<uint32_t, netqos::nri::TtrpcDecoder> streams;
  std::map<uint32_t, std::vector<TtrpcMessage>> messages;
  for (size_t at = 0; at < socket_bytes.size(); at += chunk) {
    mux.Feed(std::string_view(socket_bytes).substr(at, chunk));
    while (true) {
      auto frame = mux.Next();
      REQUIRE(frame.ok());
      if (!frame->has_value()) break;
      auto& decoder = streams[(*frame)->conn_id];
      decoder.Feed((*frame)->payload);
      while (true) {
        auto message = decoder.Next();
        REQUIRE(message.ok());
        if (!message->has_value()) break;
        messages[(*frame)->conn_id].push_back(std::move(**message));
      }
    }
  }
  CHECK(mux.buffered() == 0);
  for (auto& [id, decoder] : streams) CHECK(decoder.buffered() == 0);
  return messages;
}

}  // namespace

TEST_CASE("nri wire: registration and Configure survive mux and ttRPC in any chunking", "[nri]") {
  // The plugin (netqos) registers on the Runtime service's connection ...
  api::RegisterPluginRequest registration;
  registration.set_plugin_name("netqos");
  registration.set_plugin_idx("05");
  registration.set_nri_version("v0.12.2");
  // ... and the runtime configures it on the Plugin service's connection.
  api::ConfigureRequest configure;
  configure.set_config("{\"mode\":\"enforce\"}");
  configure.set_runtime_name("containerd");
  configure.set_runtime_version("2.1.0");
  configure.set_registration_timeout(5000);
  configure.set_request_timeout(2000);
  configure.set_nri_version("v0.12.2");

  const std::string socket_bytes =
      Ok(netqos::nri::EncodeMuxFrames(
          kRuntimeServiceConnId,
          Ok(netqos::nri::EncodeTtrpcRequest(1, "nri.pkg.api.v1alpha1.Runtime", "RegisterPlugin",
                                             registration, std::chrono::seconds(5))))) +
      Ok(netqos::nri::EncodeMuxFrames(
          kPluginServiceConnId,
          Ok(netqos::nri::EncodeTtrpcRequest(1, "nri.pkg.api.v1alpha1.Plugin", "Configure",
                                             configure, std::chrono::seconds(2)))));

  for (size_t chunk : {size_t{1}, size_t{3}, size_t{7}, size_t{64}, socket_bytes.size()}) {
    INFO("chunks of " << chunk);
    auto messages = Read(socket_bytes, chunk);
    REQUIRE(messages.size() == 2);

    REQUIRE(messages[kRuntimeServiceConnId].size() == 1);
    auto register_call = netqos::nri::DecodeTtrpcRequest(messages[kRuntimeServiceConnId][0]);
    REQUIRE(register_call.ok());
    CHECK(register_call->service == "nri.pkg.api.v1alpha1.Runtime");
    CHECK(register_call->method == "RegisterPlugin");
    CHECK(register_call->timeout == std::chrono::seconds(5));
    api::RegisterPluginRequest registration_back;
    REQUIRE(registration_back.ParseFromString(register_call->payload));
    CHECK(MessageDifferencer::Equals(registration_back, registration));

    REQUIRE(messages[kPluginServiceConnId].size() == 1);
    auto configure_call = netqos::nri::DecodeTtrpcRequest(messages[kPluginServiceConnId][0]);
    REQUIRE(configure_call.ok());
    CHECK(configure_call->method == "Configure");
    api::ConfigureRequest configure_back;
    REQUIRE(configure_back.ParseFromString(configure_call->payload));
    CHECK(MessageDifferencer::Equals(configure_back, configure));
  }
}

TEST_CASE("nri wire: a ttRPC message cut over several mux frames is reassembled", "[nri]") {
  // Go's ttRPC writes through a 4096-byte buffer, so a larger message reaches the mux as several
  // writes, each its own frame, possibly interleaved with the other connection's frames.
  api::ConfigureRequest configure;
  configure.set_config(std::string(10000, 'x'));
  const std::string message =
      Ok(netqos::nri::EncodeTtrpcRequest(3, "nri.pkg.api.v1alpha1.Plugin", "Configure", configure));
  api::Empty empty;
  const std::string other = Ok(netqos::nri::EncodeTtrpcResponse(1, empty));
  const std::string socket_bytes =
      Ok(netqos::nri::EncodeMuxFrame(kPluginServiceConnId, message.substr(0, 4096))) +
      Ok(netqos::nri::EncodeMuxFrame(kRuntimeServiceConnId, other)) +
      Ok(netqos::nri::EncodeMuxFrame(kPluginServiceConnId, message.substr(4096)));

  auto messages = Read(socket_bytes, 1000);
  REQUIRE(messages[kPluginServiceConnId].size() == 1);
  REQUIRE(messages[kRuntimeServiceConnId].size() == 1);
  auto call = netqos::nri::DecodeTtrpcRequest(messages[kPluginServiceConnId][0]);
  REQUIRE(call.ok());
  api::ConfigureRequest back;
  REQUIRE(back.ParseFromString(call->payload));
  CHECK(back.config() == configure.config());
  auto reply = netqos::nri::DecodeTtrpcResponse(messages[kRuntimeServiceConnId][0]);
  REQUIRE(reply.ok());
  CHECK(reply->status.ok());
}
