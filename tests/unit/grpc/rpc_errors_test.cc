// Error mapping at the RPC boundary: netqos::Status -> grpc::Status, and the catch-all.
#include <catch2/catch.hpp>
#include <stdexcept>

#include "grpc/grpc_status.h"
#include "grpc/rpc_guard.h"

namespace netqos::grpcadapter {

TEST_CASE("every status code maps to the same gRPC code with the same message", "[grpc][errors]") {
  CHECK(ToGrpcStatus(Status::Ok()).ok());
  for (int code = 1; code <= 15; ++code) {
    Status s(static_cast<StatusCode>(code), "msg " + std::to_string(code));
    grpc::Status g = ToGrpcStatus(s);
    CHECK(static_cast<int>(g.error_code()) == code);
    CHECK(g.error_message() == s.message());
  }
  CHECK(ToGrpcStatus(ResourceExhausted("x")).error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(ToGrpcStatus(InvalidArgument("x")).error_code() == grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_CASE("a throwing handler becomes INTERNAL", "[grpc][errors]") {
  auto s = RunGuarded("Allocate", []() -> grpc::Status { throw std::runtime_error("boom"); });
  CHECK(s.error_code() == grpc::StatusCode::INTERNAL);
  CHECK(s.error_message() == "Allocate: internal error: boom");

  auto u = RunGuarded("RemovePod", []() -> grpc::Status { throw 42; });
  CHECK(u.error_code() == grpc::StatusCode::INTERNAL);

  auto ok = RunGuarded("GetInfo", [] { return grpc::Status::OK; });
  CHECK(ok.ok());
}

}  // namespace netqos::grpcadapter
