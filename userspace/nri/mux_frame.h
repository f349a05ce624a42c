// NRI's connection multiplexer, the outermost layer on the NRI socket: it carries several
// logical byte streams over one unix-socket connection, each chunk of a stream framed as
//   [connection id: 4 bytes, big-endian][payload length: 4 bytes, big-endian][payload]
// Frame boundaries mean nothing to the streams inside: a ttRPC message may span frames, so the
// payloads of one connection id are concatenated before ttRPC decoding. Pure: no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "nri/byte_queue.h"

namespace netqos::nri {

inline constexpr size_t kMuxHeaderSize = 8;

// Connection id 0 is reserved by NRI; the mux refuses to open it.
inline constexpr uint32_t kMuxReservedConnId = 0;
// The plugin serves NRI's Plugin service (Configure, Synchronize, the pod and container events)
// on this connection and the runtime is the ttRPC client.
inline constexpr uint32_t kPluginServiceConnId = 1;
// The runtime serves NRI's Runtime service (RegisterPlugin, UpdateContainers) on this connection
// and the plugin is the ttRPC client.
inline constexpr uint32_t kRuntimeServiceConnId = 2;

// The largest payload a frame may carry: one whole ttRPC message (10-byte header + 4 MiB), the
// size at which NRI's writer cuts a longer write into several frames. NRI's reader checks no
// limit, but a peer that announces more is broken or hostile, and honouring it would mean
// buffering up to 4 GiB before the frame is complete.
inline constexpr uint32_t kMaxMuxPayload = 10 + (4u << 20);

struct MuxFrame {
  uint32_t conn_id = 0;
  std::string payload;

  bool operator==(const MuxFrame&) const = default;
};

// One frame carrying `payload` on `conn_id`. InvalidArgument for the reserved id 0 or a payload
// larger than kMaxMuxPayload (split it with EncodeMuxFrames).
Result<std::string> EncodeMuxFrame(uint32_t conn_id, std::string_view payload);

// The bytes of `stream` on `conn_id` as frames of at most kMaxMuxPayload bytes each, as NRI's
// writer sends a long write (an empty stream is one empty frame). InvalidArgument for id 0.
Result<std::string> EncodeMuxFrames(uint32_t conn_id, std::string_view stream);

// Splits the bytes read from the NRI socket, fed in chunks of any size, into frames. Frames of
// every connection id are returned, the reserved one included: NRI drops frames for a
// connection no one opened, and so should the caller (IsKnownMuxConnId).
class MuxDecoder {
 public:
  void Feed(std::string_view bytes) { queue_.Append(bytes); }

  // The next complete frame, std::nullopt when more bytes are needed, or the error that ended
  // the stream: a frame whose length exceeds kMaxMuxPayload (ResourceExhausted). Nothing after a
  // bad header can be framed again, so the error is returned by every later call.
  Result<std::optional<MuxFrame>> Next();

  // Bytes fed and not yet returned as frames (a partial frame at the end of the stream).
  size_t buffered() const { return queue_.size(); }

 private:
  ByteQueue queue_;
  Status error_;
};

// Whether NRI opens `conn_id` (the Plugin and Runtime service connections).
constexpr bool IsKnownMuxConnId(uint32_t conn_id) {
  return conn_id == kPluginServiceConnId || conn_id == kRuntimeServiceConnId;
}

}  // namespace netqos::nri
