// Connection: the channel to netqosd's socket, the per-call deadline, and how an RPC failure is
// reported ("netqosctl: <rpc>: <CODE>: <message>", exit code 1).
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include <memory>
#include <ostream>
#include <string>

namespace netqos::ctl {

struct GlobalOptions {
  std::string socket;
  bool json = false;
  double timeout_seconds = 10;
};

class Connection {
 public:
  // nullptr (after printing why to `err`) if the socket file does not exist.
  static std::unique_ptr<Connection> Open(const GlobalOptions& options, std::ostream& err);

  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  // Sets the deadline from --timeout.
  void Prepare(grpc::ClientContext* ctx) const;

 private:
  Connection(std::shared_ptr<grpc::Channel> channel, double timeout_seconds)
      : channel_(std::move(channel)), timeout_seconds_(timeout_seconds) {}
  std::shared_ptr<grpc::Channel> channel_;
  double timeout_seconds_;
};

// Prints the failure and returns kExitRpcError.
int ReportRpcError(const std::string& rpc, const grpc::Status& status, std::ostream& err);

}  // namespace netqos::ctl
