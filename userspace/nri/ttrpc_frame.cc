#include "nri/ttrpc_frame.h"

#include <cstdio>
#include <utility>

#include "nri/big_endian.h"

namespace netqos::nri {

std::string TtrpcTypeName(uint8_t type) {
  switch (static_cast<TtrpcType>(type)) {
    case TtrpcType::kRequest:
      return "request";
    case TtrpcType::kResponse:
      return "response";
    case TtrpcType::kData:
      return "data";
  }
  char text[16];
  std::snprintf(text, sizeof(text), "type 0x%02x", type);
  return text;
}

Result<std::string> EncodeTtrpcMessage(uint32_t stream_id, TtrpcType type, uint8_t flags,
                                       std::string_view data) {
  if (data.size() > kMaxTtrpcMessage) {
    return InvalidArgument("ttrpc " + TtrpcTypeName(static_cast<uint8_t>(type)) + " of " +
                           std::to_string(data.size()) + " bytes exceeds " +
                           std::to_string(kMaxTtrpcMessage));
  }
  std::string out;
  out.reserve(kTtrpcHeaderSize + data.size());
  AppendBigEndian32(static_cast<uint32_t>(data.size()), out);
  AppendBigEndian32(stream_id, out);
  out.push_back(static_cast<char>(type));
  out.push_back(static_cast<char>(flags));
  out.append(data.data(), data.size());
  return out;
}

Result<std::optional<TtrpcMessage>> TtrpcDecoder::Next() {
  if (!error_.ok()) return error_;
  const std::string_view bytes = queue_.View();
  if (bytes.size() < kTtrpcHeaderSize) return std::optional<TtrpcMessage>();
  const uint32_t length = LoadBigEndian32(bytes);
  const uint32_t stream_id = LoadBigEndian32(bytes.substr(4));
  const auto type = static_cast<uint8_t>(bytes[8]);
  if (length > kMaxTtrpcMessage) {
    error_ = ResourceExhausted("ttrpc " + TtrpcTypeName(type) + " on stream " +
                               std::to_string(stream_id) + " of " + std::to_string(length) +
                               " bytes exceeds " + std::to_string(kMaxTtrpcMessage));
    return error_;
  }
  if (bytes.size() - kTtrpcHeaderSize < length) return std::optional<TtrpcMessage>();
  TtrpcMessage message{stream_id, type, static_cast<uint8_t>(bytes[9]),
                       std::string(bytes.substr(kTtrpcHeaderSize, length))};
  queue_.Consume(kTtrpcHeaderSize + length);
  return std::optional<TtrpcMessage>(std::move(message));
}

}  // namespace netqos::nri
