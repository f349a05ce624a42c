// RunGuarded: the catch-all every RPC handler runs inside. No exception may cross into gRPC's
// threads; anything thrown becomes INTERNAL and is logged once, here, at warn. RunObserved also
// reports the call's code and duration to a service::RpcObserver (metrics).
#pragma once

#include <grpcpp/support/status.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <exception>
#include <string>
#include <string_view>
#include <utility>

#include "common/status.h"
#include "service/rpc_observer.h"

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

// RunGuarded, timed and reported to `observer` (may be null) as (rpc, code name, seconds); a
// failure also with its message and `reallocation` (see RpcObserver::ObserveFailure).
template <typename Fn>
grpc::Status RunObserved(const char* rpc, service::RpcObserver* observer, Fn&& fn,
                         std::string_view reallocation = {}) noexcept {
  const auto start = std::chrono::steady_clock::now();
  grpc::Status status = RunGuarded(rpc, std::forward<Fn>(fn));
  if (observer != nullptr) {
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    if (!status.ok()) observer->ObserveFailure(rpc, status.error_message(), reallocation);
    observer->Observe(rpc, StatusCodeName(static_cast<StatusCode>(status.error_code())),
                      took.count());
  }
  return status;
}

}  // namespace netqos::grpcadapter
