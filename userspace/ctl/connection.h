// Connection: the channel to netqosd's socket, the per-call deadline, and how an RPC failure is
// reported ("netqosctl: <rpc>: <CODE>: <message>", exit code 1).
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include <memory>
#include <ostream>
#include <string>
#include <type_traits>

#include "ctl/ctl.h"
#include "ctl/output_format.h"

namespace netqos::ctl {

struct GlobalOptions {
  std::string socket;
  OutputFormat format = OutputFormat::kTable;  // -o (--json = -o json)
  double timeout_seconds = 10;

  bool structured() const { return IsStructured(format); }
  bool wide() const { return format == OutputFormat::kWide; }
};

// Prints the failure and returns kExitRpcError. UNAVAILABLE (nobody answers on the socket) adds
// what to check.
int ReportRpcError(const std::string& rpc, const grpc::Status& status, std::ostream& err);

class Connection {
 public:
  // nullptr (after printing why to `err`) if the socket file does not exist.
  static std::unique_ptr<Connection> Open(const GlobalOptions& options, std::ostream& err);
  // nullptr, with why and what to do in *error (no "netqosctl: " prefix), if it does not exist.
  static std::unique_ptr<Connection> Open(const GlobalOptions& options, std::string* error);

  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  // Sets the deadline from --timeout.
  void Prepare(grpc::ClientContext* ctx) const;

  // One unary RPC of `Service` (e.g. Call<admin::Admin>("GetTopology",
  // &admin::Admin::Stub::GetTopology, {}, &resp, err)) with --timeout's deadline: kExitOk with
  // *response filled in, or ReportRpcError's exit code once its line is printed.
  template <typename Service, typename Request, typename Response>
  int Call(const std::string& rpc,
           grpc::Status (Service::Stub::*method)(grpc::ClientContext*, const Request&, Response*),
           const std::type_identity_t<Request>& request, Response* response,
           std::ostream& err) const {
    auto stub = Service::NewStub(channel_);
    grpc::ClientContext ctx;
    Prepare(&ctx);
    const grpc::Status s = ((*stub).*method)(&ctx, request, response);
    return s.ok() ? kExitOk : ReportRpcError(rpc, s, err);
  }

 private:
  Connection(std::shared_ptr<grpc::Channel> channel, double timeout_seconds)
      : channel_(std::move(channel)), timeout_seconds_(timeout_seconds) {}
  std::shared_ptr<grpc::Channel> channel_;
  double timeout_seconds_;
};

// "<rpc>: <CODE>: <message>" plus the same hint, without the prefix or newline.
std::string DescribeRpcError(const std::string& rpc, const grpc::Status& status,
                             const std::string& socket);

// CallOnce: Connection::Open, then one Call; what a command that makes one RPC needs.
template <typename Service, typename Request, typename Response>
int CallOnce(const GlobalOptions& g, const std::string& rpc,
             grpc::Status (Service::Stub::*method)(grpc::ClientContext*, const Request&, Response*),
             const std::type_identity_t<Request>& request, Response* response, std::ostream& err) {
  auto conn = Connection::Open(g, err);
  if (!conn) return kExitRpcError;
  return conn->Call<Service>(rpc, method, request, response, err);
}

}  // namespace netqos::ctl
