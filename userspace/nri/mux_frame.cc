#include "nri/mux_frame.h"

#include <algorithm>
#include <utility>

#include "nri/big_endian.h"

namespace netqos::nri {
namespace {

void AppendFrame(uint32_t conn_id, std::string_view payload, std::string& out) {
  AppendBigEndian32(conn_id, out);
  AppendBigEndian32(static_cast<uint32_t>(payload.size()), out);
  out.append(payload.data(), payload.size());
}

Status CheckConnId(uint32_t conn_id) {
  if (conn_id == kMuxReservedConnId) {
    return InvalidArgument("mux connection id 0 is reserved");
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> EncodeMuxFrame(uint32_t conn_id, std::string_view payload) {
  NETQOS_RETURN_IF_ERROR(CheckConnId(conn_id));
  if (payload.size() > kMaxMuxPayload) {
    return InvalidArgument("mux frame of " + std::to_string(payload.size()) + " bytes exceeds " +
                           std::to_string(kMaxMuxPayload));
  }
  std::string out;
  out.reserve(kMuxHeaderSize + payload.size());
  AppendFrame(conn_id, payload, out);
  return out;
}

Result<std::string> EncodeMuxFrames(uint32_t conn_id, std::string_view stream) {
  NETQOS_RETURN_IF_ERROR(CheckConnId(conn_id));
  std::string out;
  do {
    const size_t n = std::min<size_t>(stream.size(), kMaxMuxPayload);
    AppendFrame(conn_id, stream.substr(0, n), out);
    stream.remove_prefix(n);
  } while (!stream.empty());
  return out;
}

Result<std::optional<MuxFrame>> MuxDecoder::Next() {
  if (!error_.ok()) return error_;
  const std::string_view bytes = queue_.View();
  if (bytes.size() < kMuxHeaderSize) return std::optional<MuxFrame>();
  const uint32_t conn_id = LoadBigEndian32(bytes);
  const uint32_t length = LoadBigEndian32(bytes.substr(4));
  if (length > kMaxMuxPayload) {
    error_ = ResourceExhausted("mux frame on connection " + std::to_string(conn_id) + " of " +
                               std::to_string(length) + " bytes exceeds " +
                               std::to_string(kMaxMuxPayload));
    return error_;
  }
  if (bytes.size() - kMuxHeaderSize < length) return std::optional<MuxFrame>();
  MuxFrame frame{conn_id, std::string(bytes.substr(kMuxHeaderSize, length))};
  queue_.Consume(kMuxHeaderSize + length);
  return std::optional<MuxFrame>(std::move(frame));
}

}  // namespace netqos::nri
