// Unary ttRPC calls in both directions over the framing of ttrpc_frame.h: netqos calls NRI's
// Runtime service (it is the client on kRuntimeServiceConnId) and serves NRI's Plugin service
// (it is the server on kPluginServiceConnId). The envelope is proto/ttrpc/request.proto; an
// error travels as a gRPC-style status in the Response. Pure: no I/O.
#pragma once

#include <google/protobuf/message_lite.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "nri/ttrpc_frame.h"

namespace netqos::nri {

// A call as its server receives it.
struct TtrpcCall {
  uint32_t stream_id = 0;
  std::string service;                  // e.g. "nri.pkg.api.v1alpha1.Plugin"
  std::string method;                   // e.g. "Configure"
  std::string payload;                  // the serialized argument
  std::chrono::nanoseconds timeout{0};  // 0: the caller set no deadline
  std::vector<std::pair<std::string, std::string>> metadata;
};

// The answer to a call as its client receives it: `status` is the callee's verdict (OK, or the
// error it returned), `payload` the serialized result when OK.
struct TtrpcReply {
  uint32_t stream_id = 0;
  Status status;
  std::string payload;
};

// Client side: a Request message calling `service`/`method` with `argument`. Unary calls carry
// no flags. InvalidArgument when the encoded request exceeds kMaxTtrpcMessage.
Result<std::string> EncodeTtrpcRequest(uint32_t stream_id, std::string_view service,
                                       std::string_view method,
                                       const google::protobuf::MessageLite& argument,
                                       std::chrono::nanoseconds timeout = {});

// Client side: the reply carried by `message`. The Result fails (DataLoss) only when the message
// is not a well-formed Response; an error returned by the callee is the reply's status.
Result<TtrpcReply> DecodeTtrpcResponse(const TtrpcMessage& message);

// Server side: the call carried by `message`. InvalidArgument when it is not a Request, comes
// on an even stream id (ttRPC's clients number their streams 1, 3, 5, ...) or does not parse:
// ttRPC's server answers each of these with that status on the same stream id, and so should
// the caller. (That stream ids only grow is a property of the connection, checked above this.)
Result<TtrpcCall> DecodeTtrpcRequest(const TtrpcMessage& message);

// Server side: the Response finishing `stream_id`, carrying `status` and, when it is OK,
// `payload`. InvalidArgument when the encoded response exceeds kMaxTtrpcMessage.
Result<std::string> EncodeTtrpcResponse(uint32_t stream_id, const Status& status,
                                        std::string_view payload = {});
Result<std::string> EncodeTtrpcResponse(uint32_t stream_id,
                                        const google::protobuf::MessageLite& result);

}  // namespace netqos::nri
