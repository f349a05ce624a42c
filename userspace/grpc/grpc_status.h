// netqos::Status -> grpc::Status. The codes are numerically identical by construction
// (common/status.h), so the mapping keeps both the code and the message.
#pragma once

#include <grpcpp/support/status.h>

#include "common/status.h"

namespace netqos::grpcadapter {

inline grpc::Status ToGrpcStatus(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), status.message());
}

}  // namespace netqos::grpcadapter
