// The runtime's side of an NRI socket, for tests: it listens on a real unix socket, accepts the
// plugin and speaks NRI's mux and ttRPC with the wire layer netqos uses (nri/), playing
// containerd's part: it serves RegisterPlugin on connection 2 and calls the Plugin service on
// connection 1.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "nri/mux_frame.h"
#include "nri/ttrpc_call.h"
#include "nri/ttrpc_frame.h"
#include "nri/v1alpha1/api.pb.h"

namespace netqos::nri_test {

class FakeNriRuntime {
 public:
  FakeNriRuntime() {
    char dir[] = "/tmp/netqos-nri-XXXXXX";
    REQUIRE(mkdtemp(dir) != nullptr);
    dir_ = dir;
    path_ = dir_ + "/nri.sock";
    Listen();
  }
  ~FakeNriRuntime() {
    CloseConnection();
    if (listen_fd_ >= 0) close(listen_fd_);
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  const std::string& path() const { return path_; }

  // A runtime restart: the listening socket goes away, then a new one appears at the same path.
  void Restart() {
    CloseConnection();
    close(listen_fd_);
    unlink(path_.c_str());
    Listen();
  }

  void Accept(std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    pollfd p{listen_fd_, POLLIN, 0};
    REQUIRE(poll(&p, 1, static_cast<int>(timeout.count())) == 1);
    fd_ = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    REQUIRE(fd_ >= 0);
    closed_ = false;
    mux_ = nri::MuxDecoder();
    conns_.clear();
    next_stream_ = 1;
  }

  void CloseConnection() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

  void SendRaw(std::string_view bytes) {
    REQUIRE(send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(bytes.size()));
  }

  // The next ttRPC message on `conn_id`, or nullopt if none came within `timeout` or the plugin
  // closed the connection (closed() then says so).
  std::optional<nri::TtrpcMessage> Next(
      uint32_t conn_id, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      Pump();
      auto message = conns_[conn_id].Next();
      REQUIRE(message.ok());
      if (*message) return std::move(**message);
      if (closed_) return std::nullopt;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{fd_, POLLIN, 0};
      poll(&p, 1, static_cast<int>(left.count()));
    }
  }

  // Waits for the plugin's RegisterPlugin and answers it with `status`.
  ::nri::pkg::api::v1alpha1::RegisterPluginRequest ServeRegister(
      const Status& status = Status::Ok()) {
    auto message = Next(nri::kRuntimeServiceConnId);
    REQUIRE(message.has_value());
    auto call = nri::DecodeTtrpcRequest(*message);
    REQUIRE(call.ok());
    CHECK(call->service == "nri.pkg.api.v1alpha1.Runtime");
    CHECK(call->method == "RegisterPlugin");
    ::nri::pkg::api::v1alpha1::RegisterPluginRequest request;
    REQUIRE(request.ParseFromString(call->payload));
    auto reply = nri::EncodeTtrpcResponse(call->stream_id, status);
    REQUIRE(reply.ok());
    SendOn(nri::kRuntimeServiceConnId, *reply);
    return request;
  }

  // Accepts the plugin, serves its registration and configures it with `request_timeout_ms`
  // (0: none sent, as NRI before v0.12); the Configure reply.
  ::nri::pkg::api::v1alpha1::ConfigureResponse Handshake(
      int64_t request_timeout_ms = 2000,
      std::chrono::milliseconds accept_timeout = std::chrono::seconds(5)) {
    Accept(accept_timeout);
    ServeRegister();
    ::nri::pkg::api::v1alpha1::ConfigureRequest configure;
    configure.set_runtime_name("fake-runtime");
    configure.set_runtime_version("1.0");
    configure.set_registration_timeout(5000);
    configure.set_request_timeout(request_timeout_ms);
    auto reply = Reply(Call("Configure", configure));
    REQUIRE(reply.has_value());
    INFO(reply->status.message());
    REQUIRE(reply->status.ok());
    ::nri::pkg::api::v1alpha1::ConfigureResponse response;
    REQUIRE(response.ParseFromString(reply->payload));
    return response;
  }

  // Calls `method` of the Plugin service; returns the stream id to await the reply on.
  uint32_t Call(const std::string& method, const google::protobuf::MessageLite& argument) {
    const uint32_t stream = next_stream_;
    next_stream_ += 2;
    auto request = nri::EncodeTtrpcRequest(stream, "nri.pkg.api.v1alpha1.Plugin", method, argument,
                                           std::chrono::seconds(2));
    REQUIRE(request.ok());
    SendOn(nri::kPluginServiceConnId, *request);
    return stream;
  }

  // A request whose payload is `payload` as is (not necessarily a valid message).
  uint32_t CallRaw(const std::string& method, const std::string& payload) {
    const uint32_t stream = next_stream_;
    next_stream_ += 2;
    // The envelope by hand: ttRPC's Request{service=1, method=2, payload=3}.
    std::string envelope;
    AppendField(1, "nri.pkg.api.v1alpha1.Plugin", envelope);
    AppendField(2, method, envelope);
    AppendField(3, payload, envelope);
    auto message = nri::EncodeTtrpcMessage(stream, nri::TtrpcType::kRequest, 0, envelope);
    REQUIRE(message.ok());
    SendOn(nri::kPluginServiceConnId, *message);
    return stream;
  }

  // The reply to `stream` on connection 1.
  std::optional<nri::TtrpcReply> Reply(
      uint32_t stream, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    auto message = Next(nri::kPluginServiceConnId, timeout);
    if (!message) return std::nullopt;
    auto reply = nri::DecodeTtrpcResponse(*message);
    REQUIRE(reply.ok());
    CHECK(reply->stream_id == stream);
    return std::move(*reply);
  }

  // Whether the plugin closed the connection within `timeout` (reading and dropping its bytes).
  bool WaitClosed(std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!closed_ && std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      poll(&p, 1, 50);
      Pump();
    }
    return closed_;
  }

 private:
  static void AppendField(int number, const std::string& bytes, std::string& out) {
    out.push_back(static_cast<char>((number << 3) | 2));
    size_t n = bytes.size();
    while (n >= 0x80) {
      out.push_back(static_cast<char>((n & 0x7f) | 0x80));
      n >>= 7;
    }
    out.push_back(static_cast<char>(n));
    out += bytes;
  }

  void Listen() {
    listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(listen_fd_ >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
    REQUIRE(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    REQUIRE(listen(listen_fd_, 4) == 0);
    closed_ = false;
  }

  void SendOn(uint32_t conn_id, const std::string& ttrpc_bytes) {
    auto frames = nri::EncodeMuxFrames(conn_id, ttrpc_bytes);
    REQUIRE(frames.ok());
    SendRaw(*frames);
  }

  // Reads what is there without blocking and splits it into the connections' streams.
  void Pump() {
    char buffer[65536];
    for (;;) {
      const ssize_t n = recv(fd_, buffer, sizeof(buffer), MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        closed_ = true;
        return;
      }
      if (n < 0) return;
      mux_.Feed(std::string_view(buffer, static_cast<size_t>(n)));
      for (;;) {
        auto frame = mux_.Next();
        REQUIRE(frame.ok());
        if (!*frame) break;
        conns_[(*frame)->conn_id].Feed((*frame)->payload);
      }
    }
  }

  std::string dir_;
  std::string path_;
  int listen_fd_ = -1;
  int fd_ = -1;
  bool closed_ = false;
  uint32_t next_stream_ = 1;
  nri::MuxDecoder mux_;
  std::map<uint32_t, nri::TtrpcDecoder> conns_;
};

}  // namespace netqos::nri_test
