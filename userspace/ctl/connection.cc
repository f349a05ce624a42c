#include "ctl/connection.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>

#include "common/status.h"
#include "common/terminal_text.h"
#include "ctl/ctl.h"

namespace netqos::ctl {

std::unique_ptr<Connection> Connection::Open(const GlobalOptions& options, std::ostream& err) {
  std::string error;
  auto conn = Open(options, &error);
  if (!conn) err << "netqosctl: " << error << "\n";
  return conn;
}

std::unique_ptr<Connection> Connection::Open(const GlobalOptions& options, std::string* error) {
  struct stat st {};
  if (::stat(options.socket.c_str(), &st) != 0) {
    const int stat_errno = errno;
    *error = "daemon socket not found at " + options.socket +
             ": is netqosd running? (use --socket to point elsewhere)";
    if (stat_errno == EACCES) {
      *error = "cannot reach the daemon socket " + options.socket +
               ": permission denied: run netqosctl as root";
    }
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

std::string DescribeRpcError(const std::string& rpc, const grpc::Status& status,
                             const std::string& socket) {
  const std::string code = StatusCodeName(static_cast<StatusCode>(status.error_code()));
  const std::string& msg = status.error_message();
  const std::string where = socket.empty() ? std::string("the socket") : socket;
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    if (msg.find("Permission denied") != std::string::npos) {
      return rpc + ": " + code + ": permission denied on " + where + ": run netqosctl as root";
    }
    if (msg.find("Connection refused") != std::string::npos) {
      // A socket file without a daemon behind it, e.g. after kill -9.
      return rpc + ": " + code + ": nothing answers on " + where +
             " (connection refused): is netqosd running? (use --socket to point elsewhere)";
    }
    return rpc + ": " + code + ": " + msg + " (is netqosd running on " + where +
           "? use --socket to point elsewhere)";
  }
  std::string out = rpc + ": " + code + ": " + msg;
  if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    out += " (netqosd is older than netqosctl: upgrade it)";
  }
  return out;
}

int ReportRpcError(const std::string& rpc, const grpc::Status& status, std::ostream& err) {
  // The daemon's message may quote a pod's names and annotations.
  err << "netqosctl: " << TerminalText(DescribeRpcError(rpc, status, "")) << "\n";
  return kExitRpcError;
}

}  // namespace netqos::ctl
