// Helpers for tests that talk gRPC over real unix sockets.
#pragma once

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <chrono>
#include <string>
#include <thread>

#include "pluginregistration/v1/api.grpc.pb.h"

namespace netqos::testing {

// A channel with its own subchannel pool, so it never reuses a connection to a socket inode that
// has since been replaced.
inline std::shared_ptr<grpc::Channel> FreshChannel(const std::string& socket_path) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel("unix:" + socket_path, grpc::InsecureChannelCredentials(), args);
}

inline grpc::Status CallGetInfo(const std::string& socket_path,
                                ::pluginregistration::PluginInfo* out,
                                std::chrono::milliseconds timeout = std::chrono::seconds(2)) {
  auto stub = ::pluginregistration::Registration::NewStub(FreshChannel(socket_path));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  return stub->GetInfo(&ctx, ::pluginregistration::InfoRequest{}, out);
}

inline bool IsSocket(const std::string& path, ino_t* ino = nullptr) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  if (ino) *ino = st.st_ino;
  return true;
}

// Polls `pred` every 10 ms until it holds or `limit` passes; returns the time it took, or
// limit + 1 ms if it never held.
template <typename Pred>
std::chrono::milliseconds WaitFor(Pred pred, std::chrono::milliseconds limit) {
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    if (pred()) return elapsed;
    if (elapsed > limit) return limit + std::chrono::milliseconds(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace netqos::testing
