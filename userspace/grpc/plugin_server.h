// PluginServer: serves a set of gRPC services on <dir>/qrm_network_plugin_static.sock for each
// socket directory, and keeps serving them: if a socket file is deleted or replaced, or its
// directory is wiped, a watcher thread re-creates the directory and re-serves that socket within
// a second (the kubelet plugin watcher then re-registers us on the new socket).
#pragma once

#include <grpcpp/server.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "core/constants.h"
#include "grpc/file_identity.h"

namespace netqos::grpcadapter {

class DirWatcher;

class PluginServer {
 public:
  struct Options {
    std::string socket_file_name = core::kSocketFileName;
    std::chrono::milliseconds poll_interval{200};    // stat fallback when inotify misses
    std::chrono::milliseconds dial_timeout{5000};    // the GetInfo self-check after binding
    std::chrono::milliseconds shutdown_grace{1000};  // in-flight RPCs on a server being replaced
    // After a change is seen, wait for this much quiet (at most settle_max) before re-serving, so
    // an operator's `rm -rf` or `mv` of the directory finishes instead of racing with us.
    std::chrono::milliseconds settle{100};
    std::chrono::milliseconds settle_max{500};
  };

  // Serves `services` (not owned; they must outlive the server and include the
  // pluginregistration Registration service used for the self-check) on one socket per distinct
  // directory. Directories resolving to the same inode are served once. Fails, naming the socket,
  // if any socket cannot be served.
  static Result<std::unique_ptr<PluginServer>> Create(const std::vector<std::string>& dirs,
                                                      std::vector<grpc::Service*> services);
  static Result<std::unique_ptr<PluginServer>> Create(const std::vector<std::string>& dirs,
                                                      std::vector<grpc::Service*> services,
                                                      Options options);
  ~PluginServer();
  PluginServer(const PluginServer&) = delete;
  PluginServer& operator=(const PluginServer&) = delete;

  // Stops watching, shuts the servers down (in-flight RPCs get shutdown_grace), removes the socket
  // files that are still ours. Idempotent.
  void Stop();

  // The socket files being served, one per distinct directory, in the order given.
  std::vector<std::string> SocketPaths() const;
  // How many times a socket was re-served after a deletion or replacement.
  uint64_t reserve_count() const { return reserve_count_.load(); }

 private:
  struct Endpoint {
    std::string dir;
    std::string path;
    std::unique_ptr<grpc::Server> server;
    FileIdentity bound;      // the socket file we bound
    std::string last_error;  // last re-serve failure, logged once
  };

  PluginServer(std::vector<grpc::Service*> services, Options options);
  Status Serve(Endpoint& ep);
  void WatchLoop();
  bool Changed(const Endpoint& ep) const;
  void CheckEndpoint(Endpoint& ep);
  // Waits until the watched directories have been quiet for `settle`; false if stopping.
  bool Settle();

  std::vector<grpc::Service*> services_;
  Options options_;
  std::vector<Endpoint> endpoints_;
  std::unique_ptr<DirWatcher> watcher_;
  std::thread watch_thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> reserve_count_{0};
  uint64_t generation_ = 0;
  bool stopped_ = false;
};

}  // namespace netqos::grpcadapter
