// Connection: the channel to netqosd's socket, the per-call deadline, and how an RPC failure is
// reported ("netqosctl: <rpc>: <CODE>: <message>", exit code 1).
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include <memory>
#include <ostream>
#include <string>

#include "ctl/output_format.h"

namespace netqos::ctl {

struct GlobalOptions {
  std::string socket;
  OutputFormat format = OutputFormat::kTable;  // -o (--json = -o json)
  double timeout_seconds = 10;

  bool structured() const { return IsStructured(format); }
  bool wide() const { return format == OutputFormat::kWide; }
};

class Connection {
 public:
  // nullptr (after printing why to `err`) if the socket file does not exist.
  static std::unique_ptr<Connection> Open(const GlobalOptions& options, std::ostream& err);
  // nullptr, with why and what to do in *error (no "netqosctl: " prefix), if it does not exist.
  static std::unique_ptr<Connection> Open(const GlobalOptions& options, std::string* error);

  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  // Sets the deadline from --timeout.
  void Prepare(grpc::ClientContext* ctx) const;

 private:
  Connection(std::shared_ptr<grpc::Channel> channel, double timeout_seconds)
      : channel_(std::move(channel)), timeout_seconds_(timeout_seconds) {}
  std::shared_ptr<grpc::Channel> channel_;
  double timeout_seconds_;
};

// Prints the failure and returns kExitRpcError. UNAVAILABLE (nobody answers on the socket) adds
// what to check.
int ReportRpcError(const std::string& rpc, const grpc::Status& status, std::ostream& err);
// "<rpc>: <CODE>: <message>" plus the same hint, without the prefix or newline.
std::string DescribeRpcError(const std::string& rpc, const grpc::Status& status,
                             const std::string& socket);

}  // namespace netqos::ctl
