// RunGuarded: the catch-all every RPC handler runs inside. No exception may cross into gRPC's
// threads; anything thrown becomes INTERNAL and is logged once, here, at warn.
#pragma once

#include <grpcpp/support/status.h>
#include <spdlog/spdlog.h>

#include <exception>
#include <string>

namespace netqos::grpcadapter {

template <typename Fn>
grpc::Status RunGuarded(const char* rpc, Fn&& fn) noexcept {
  try {
    return fn();
  } catch (const std::exception& e) {
    spdlog::warn("rpc failed rpc={} code=INTERNAL error=\"unexpected exception: {}\"", rpc,
                 e.what());
    return grpc::Status(grpc::StatusCode::INTERNAL,
                        std::string(rpc) + ": internal error: " + e.what());
  } catch (...) {
    spdlog::warn("rpc failed rpc={} code=INTERNAL error=\"unknown exception\"", rpc);
    return grpc::Status(grpc::StatusCode::INTERNAL, std::string(rpc) + ": internal error");
  }
}

}  // namespace netqos::grpcadapter
