// A hand-built HTTP/2 client for gRPC over a unix socket, for the fault tests: it writes the
// bytes of a unary call frame by frame, so a test can stop anywhere (mid-preface, mid-HEADERS,
// inside a DATA frame, after a gRPC length prefix promising more than follows) and close or keep
// the connection, as a client killed at that moment would. Headers are HPACK literals without
// indexing or Huffman coding (RFC 7541 6.2.2), which every decoder must accept.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace netqos::e2e {

class RawH2Connection {
 public:
  explicit RawH2Connection(const std::string& socket_path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw std::runtime_error("socket: " + std::string(std::strerror(errno)));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", socket_path.c_str());
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      const std::string err = std::strerror(errno);
      ::close(fd_);
      throw std::runtime_error("connect " + socket_path + ": " + err);
    }
  }
  ~RawH2Connection() { Close(); }
  RawH2Connection(const RawH2Connection&) = delete;
  RawH2Connection& operator=(const RawH2Connection&) = delete;

  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  // Writes all of `bytes` (the daemon may already have closed: errors are ignored, as a dying
  // client would not notice either).
  void Send(const std::string& bytes) {
    size_t off = 0;
    while (fd_ >= 0 && off < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      off += static_cast<size_t>(n);
    }
  }

  // Reads whatever arrives within `ms` (for a control case that wants an answer).
  std::string Receive(int ms) {
    timeval tv{ms / 1000, (ms % 1000) * 1000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    std::string out;
    char buf[4096];
    for (;;) {
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }

 private:
  int fd_ = -1;
};

struct RawH2 {
  static std::string Preface() { return "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"; }

  static std::string Frame(uint8_t type, uint8_t flags, uint32_t stream,
                           const std::string& payload) {
    std::string f;
    const auto len = static_cast<uint32_t>(payload.size());
    f.push_back(static_cast<char>((len >> 16) & 0xff));
    f.push_back(static_cast<char>((len >> 8) & 0xff));
    f.push_back(static_cast<char>(len & 0xff));
    f.push_back(static_cast<char>(type));
    f.push_back(static_cast<char>(flags));
    for (int shift : {24, 16, 8, 0}) f.push_back(static_cast<char>((stream >> shift) & 0xff));
    return f + payload;
  }
  static std::string Settings() { return Frame(0x4, 0, 0, ""); }

  // HPACK "literal header field without indexing, new name", lengths < 127.
  static std::string Literal(const std::string& name, const std::string& value) {
    if (name.size() > 126 || value.size() > 126) throw std::logic_error("header too long");
    std::string out(1, '\0');
    out.push_back(static_cast<char>(name.size()));
    out += name;
    out.push_back(static_cast<char>(value.size()));
    return out + value;
  }

  // HEADERS (END_HEADERS) opening a gRPC call of `method` ("/pkg.Service/Method").
  static std::string Headers(uint32_t stream, const std::string& method) {
    const std::string block = Literal(":method", "POST") + Literal(":scheme", "http") +
                              Literal(":path", method) + Literal(":authority", "localhost") +
                              Literal("content-type", "application/grpc") +
                              Literal("te", "trailers");
    return Frame(0x1, 0x4, stream, block);
  }

  // A gRPC length-prefixed message (uncompressed) around a serialized protobuf.
  static std::string GrpcMessage(const std::string& proto, uint32_t claimed_len) {
    std::string out(1, '\0');
    for (int shift : {24, 16, 8, 0})
      out.push_back(static_cast<char>((claimed_len >> shift) & 0xff));
    return out + proto;
  }
  static std::string GrpcMessage(const std::string& proto) {
    return GrpcMessage(proto, static_cast<uint32_t>(proto.size()));
  }

  // DATA with END_STREAM.
  static std::string Data(uint32_t stream, const std::string& payload, bool end_stream = true) {
    return Frame(0x0, end_stream ? 0x1 : 0, stream, payload);
  }
};

}  // namespace netqos::e2e
