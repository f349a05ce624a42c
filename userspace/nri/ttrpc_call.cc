#include "nri/ttrpc_call.h"

#include <string>

#include "ttrpc/request.pb.h"

namespace netqos::nri {
namespace {

// gRPC's codes 0-15 are StatusCode's; anything else (16, Unauthenticated, or a code from a
// newer peer) is kept in the message and reported as kUnknown.
Status StatusFromWire(const netqos::ttrpc::Status& wire) {
  const int32_t code = wire.code();
  if (code == 0) return Status::Ok();
  if (code > 0 && code <= static_cast<int32_t>(StatusCode::kDataLoss)) {
    return Status(static_cast<StatusCode>(code), wire.message());
  }
  return Status(StatusCode::kUnknown,
                "status code " + std::to_string(code) + ": " + wire.message());
}

// The envelope `message` carries, which must be a `want` (a Request or a Response), parsed into
// `out`. A failure is reported with the caller's `code`: a broken reply is data lost on our side,
// a broken call the peer's invalid argument.
Status ParseEnvelope(const TtrpcMessage& message, TtrpcType want, StatusCode code,
                     google::protobuf::MessageLite* out) {
  const std::string where = "ttrpc stream " + std::to_string(message.stream_id);
  const std::string what = want == TtrpcType::kRequest ? "request" : "response";
  if (message.type != static_cast<uint8_t>(want)) {
    return Status(code,
                  where + ": got a " + TtrpcTypeName(message.type) + " message, want a " + what);
  }
  if (!out->ParseFromString(message.data)) {
    return Status(code, where + ": " + what + " of " + std::to_string(message.data.size()) +
                            " bytes does not parse");
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> EncodeTtrpcRequest(uint32_t stream_id, std::string_view service,
                                       std::string_view method,
                                       const google::protobuf::MessageLite& argument,
                                       std::chrono::nanoseconds timeout) {
  netqos::ttrpc::Request request;
  request.set_service(std::string(service));
  request.set_method(std::string(method));
  if (!argument.SerializeToString(request.mutable_payload())) {
    return InvalidArgument("ttrpc request " + std::string(service) + "/" + std::string(method) +
                           ": argument " + argument.GetTypeName() + " does not serialize");
  }
  request.set_timeout_nano(timeout.count());
  return EncodeTtrpcMessage(stream_id, TtrpcType::kRequest, 0, request.SerializeAsString());
}

Result<TtrpcReply> DecodeTtrpcResponse(const TtrpcMessage& message) {
  netqos::ttrpc::Response response;
  if (Status st = ParseEnvelope(message, TtrpcType::kResponse, StatusCode::kDataLoss, &response);
      !st.ok()) {
    return st;
  }
  TtrpcReply reply;
  reply.stream_id = message.stream_id;
  reply.status = StatusFromWire(response.status());
  if (reply.status.ok()) reply.payload = std::move(*response.mutable_payload());
  return reply;
}

Result<TtrpcCall> DecodeTtrpcRequest(const TtrpcMessage& message) {
  netqos::ttrpc::Request request;
  if (Status st =
          ParseEnvelope(message, TtrpcType::kRequest, StatusCode::kInvalidArgument, &request);
      !st.ok()) {
    return st;
  }
  if (message.stream_id % 2 != 1) {
    return InvalidArgument("ttrpc stream " + std::to_string(message.stream_id) +
                           ": a client's stream id must be odd");
  }
  TtrpcCall call;
  call.stream_id = message.stream_id;
  call.service = std::move(*request.mutable_service());
  call.method = std::move(*request.mutable_method());
  call.payload = std::move(*request.mutable_payload());
  call.timeout = std::chrono::nanoseconds(request.timeout_nano());
  for (auto& kv : *request.mutable_metadata()) {
    call.metadata.emplace_back(std::move(*kv.mutable_key()), std::move(*kv.mutable_value()));
  }
  return call;
}

Result<std::string> EncodeTtrpcResponse(uint32_t stream_id, const Status& status,
                                        std::string_view payload) {
  netqos::ttrpc::Response response;
  // ttRPC's server always sets the status, OK included; its client accepts it missing too.
  response.mutable_status()->set_code(static_cast<int32_t>(status.code()));
  if (status.ok()) {
    response.set_payload(std::string(payload));
  } else {
    response.mutable_status()->set_message(status.message());
  }
  return EncodeTtrpcMessage(stream_id, TtrpcType::kResponse, 0, response.SerializeAsString());
}

Result<std::string> EncodeTtrpcResponse(uint32_t stream_id,
                                        const google::protobuf::MessageLite& result) {
  std::string payload;
  if (!result.SerializeToString(&payload)) {
    return InvalidArgument("ttrpc response on stream " + std::to_string(stream_id) + ": " +
                           result.GetTypeName() + " does not serialize");
  }
  return EncodeTtrpcResponse(stream_id, Status::Ok(), payload);
}

}  // namespace netqos::nri
