// ttRPC's message framing, the layer inside one mux connection: every message is
//   [data length: 4 bytes][stream id: 4 bytes][type: 1 byte][flags: 1 byte][data]
// with both 32-bit fields big-endian and the data at most 4 MiB. Pure: no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "nri/byte_queue.h"

namespace netqos::nri {

inline constexpr size_t kTtrpcHeaderSize = 10;
// ttRPC's limit on a message's data, header excluded; its sender refuses to send more and its
// receiver rejects more (exactly 4 MiB is allowed).
inline constexpr uint32_t kMaxTtrpcMessage = 4u << 20;

// The message types. A unary call is one Request from the client (odd stream id) and one
// Response from the server on the same stream id; Data belongs to streaming calls, which NRI
// does not use.
enum class TtrpcType : uint8_t { kRequest = 1, kResponse = 2, kData = 3 };

// Flags of streaming calls; a unary request and every response carry none.
inline constexpr uint8_t kTtrpcFlagRemoteClosed = 0x1;
inline constexpr uint8_t kTtrpcFlagRemoteOpen = 0x2;
inline constexpr uint8_t kTtrpcFlagNoData = 0x4;

struct TtrpcMessage {
  uint32_t stream_id = 0;
  // Raw, so that a type this code does not know is still delivered (ttRPC's server ignores one
  // for forward compatibility); compare with TtrpcType.
  uint8_t type = 0;
  uint8_t flags = 0;
  std::string data;

  bool operator==(const TtrpcMessage&) const = default;
};

// "request", "response", "data" or "type 0x07".
std::string TtrpcTypeName(uint8_t type);

// The header and data of one message. InvalidArgument when the data exceeds kMaxTtrpcMessage.
Result<std::string> EncodeTtrpcMessage(uint32_t stream_id, TtrpcType type, uint8_t flags,
                                       std::string_view data);

// Splits the byte stream of one mux connection, fed in chunks of any size, into messages.
class TtrpcDecoder {
 public:
  void Feed(std::string_view bytes) { queue_.Append(bytes); }

  // The next complete message, std::nullopt when more bytes are needed, or the error that ended
  // the stream: a length above kMaxTtrpcMessage (ResourceExhausted). ttRPC's own receiver skips
  // such a message and answers it with an error, but its sender never produces one, so a peer
  // that does is broken: the error is returned by every later call and the caller closes the
  // connection.
  Result<std::optional<TtrpcMessage>> Next();

  // Bytes fed and not yet returned as messages.
  size_t buffered() const { return queue_.size(); }

 private:
  ByteQueue queue_;
  Status error_;
};

}  // namespace netqos::nri
