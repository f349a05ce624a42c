#include "ctl/connection.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>
#include <sys/stat.h>

#include <chrono>

#include "common/status.h"
#include "ctl/ctl.h"

namespace netqos::ctl {

std::unique_ptr<Connection> Connection::Open(const GlobalOptions& options, std::ostream& err) {
  struct stat st {};
  if (::stat(options.socket.c_str(), &st) != 0) {
    err << "netqosctl: daemon socket not found at " << options.socket
        << ": is netqosd running? (use --socket to point elsewhere)\n";
    return nullptr;
  }
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto channel =
      grpc::CreateCustomChannel("unix:" + options.socket, grpc::InsecureChannelCredentials(), args);
  return std::unique_ptr<Connection>(new Connection(std::move(channel), options.timeout_seconds));
}

void Connection::Prepare(grpc::ClientContext* ctx) const {
  const auto timeout = std::chrono::duration_cast<std::chrono::system_clock::duration>(
      std::chrono::duration<double>(timeout_seconds_));
  ctx->set_deadline(std::chrono::system_clock::now() + timeout);
}

int ReportRpcError(const std::string& rpc, const grpc::Status& status, std::ostream& err) {
  err << "netqosctl: " << rpc << ": "
      << StatusCodeName(static_cast<StatusCode>(status.error_code())) << ": "
      << status.error_message() << "\n";
  return kExitRpcError;
}

}  // namespace netqos::ctl
