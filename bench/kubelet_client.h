// The kubelet side of the benchmarks: a resourceplugin/v1alpha1 client on netqosd's unix socket
// (the requests are built like the e2e tests build them, tests/e2e/kubelet_harness.h), and the
// real netqosd binary started on it and stopped again, whatever happens (SIGKILL on scope exit).
#pragma once

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "bench_support.h"
#include "e2e/kubelet_harness.h"  // Req, kResource, kQosKey
#include "support/process.h"      // DaemonProcess

namespace netqos::bench {

namespace rp = ::resourceplugin::v1alpha1;
namespace reg = ::pluginregistration;

// A private directory under `parent`, removed with its contents on scope exit.
class ScopedDir {
 public:
  explicit ScopedDir(const std::string& parent, const std::string& stem = "nqbench") {
    std::string tmpl = parent + "/" + stem + ".XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp " + tmpl);
    path_ = tmpl;
  }
  ~ScopedDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScopedDir(const ScopedDir&) = delete;
  ScopedDir& operator=(const ScopedDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string PluginSocket(const std::string& sock_dir) {
  return sock_dir + "/qrm_network_plugin_static.sock";
}

// One connection to the plugin socket, as the kubelet keeps one.
class KubeletClient {
 public:
  explicit KubeletClient(const std::string& socket)
      : channel_(grpc::CreateChannel("unix://" + socket, grpc::InsecureChannelCredentials())),
        plugin_(rp::ResourcePlugin::NewStub(channel_)),
        registration_(reg::Registration::NewStub(channel_)) {}

  bool Serving(std::chrono::milliseconds timeout = 500ms) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + timeout);
    reg::InfoRequest req;
    reg::PluginInfo info;
    return registration_->GetInfo(&ctx, req, &info).ok();
  }

  // The cheapest RPC the plugin serves (a few constant fields): the transport's round trip.
  grpc::Status Options() {
    grpc::ClientContext ctx;
    Deadline(&ctx);
    rp::Empty req;
    rp::ResourcePluginOptions resp;
    return plugin_->GetResourcePluginOptions(&ctx, req, &resp);
  }

  grpc::Status Hints(const rp::ResourceRequest& req, rp::ResourceHintsResponse* out = nullptr) {
    grpc::ClientContext ctx;
    Deadline(&ctx);
    rp::ResourceHintsResponse resp;
    return plugin_->GetTopologyHints(&ctx, req, out ? out : &resp);
  }
  grpc::Status Allocate(const rp::ResourceRequest& req,
                        rp::ResourceAllocationResponse* out = nullptr) {
    grpc::ClientContext ctx;
    Deadline(&ctx);
    rp::ResourceAllocationResponse resp;
    return plugin_->Allocate(&ctx, req, out ? out : &resp);
  }
  grpc::Status RemovePod(const std::string& uid) {
    grpc::ClientContext ctx;
    Deadline(&ctx);
    rp::RemovePodRequest req;
    req.set_pod_uid(uid);
    rp::RemovePodResponse resp;
    return plugin_->RemovePod(&ctx, req, &resp);
  }

 private:
  static void Deadline(grpc::ClientContext* ctx) {
    // Generous: a full-rewrite baseline at 10,000 containers takes a while per call.
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  }

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<rp::ResourcePlugin::Stub> plugin_;
  std::unique_ptr<reg::Registration::Stub> registration_;
};

// A shared_cores container request for `mbps`, in the kubelet's shape.
inline rp::ResourceRequest ContainerRequest(const std::string& pod_uid, const std::string& pod_name,
                                            const std::string& container, double mbps,
                                            const std::string& pod_namespace = "bench") {
  rp::ResourceRequest r =
      e2e::Req::Container(pod_uid, rp::ContainerType::MAIN, "shared_cores", mbps);
  r.set_pod_name(pod_name);
  r.set_pod_namespace(pod_namespace);
  r.set_container_name(container);
  return r;
}

inline void Check(const grpc::Status& st, const std::string& what) {
  if (!st.ok()) throw std::runtime_error(what + ": " + st.error_message());
}

// The netqosd binary the benches run: the one built beside them, or NETQOS_BENCH_NETQOSD (another
// build's, to compare two daemons back to back on the same machine state).
inline std::string NetqosdPath() {
  const char* p = std::getenv("NETQOS_BENCH_NETQOSD");
  return p != nullptr && *p != '\0' ? p : NETQOSD_PATH;
}

// The real netqosd: started by the constructor (which returns once the plugin socket answers
// GetInfo), SIGTERMed by Stop() (final snapshot) and SIGKILLed on scope exit if still running.
class Netqosd {
 public:
  Netqosd(std::vector<std::string> flags, const std::string& sock_dir, const std::string& log,
          std::chrono::seconds start_timeout = std::chrono::seconds(60))
      : socket_(PluginSocket(sock_dir)), log_(log) {
    flags.insert(flags.begin(), {NetqosdPath(), "--qrm-socket-dirs=" + sock_dir});
    const auto t0 = Clock::now();
    proc_ = std::make_unique<testing::DaemonProcess>(flags, log);
    while (true) {
      if (!proc_->Running()) throw std::runtime_error("netqosd exited at start:\n" + proc_->Log());
      // A new channel per attempt: one that found the socket refusing (a previous daemon's file)
      // could wait out gRPC's reconnect backoff and add it to the figure.
      if (std::filesystem::exists(socket_) && KubeletClient(socket_).Serving()) break;
      if (Clock::now() - t0 > start_timeout) {
        throw std::runtime_error("netqosd did not serve within " +
                                 std::to_string(start_timeout.count()) + " s:\n" + proc_->Log());
      }
      CheckInterrupted();
      std::this_thread::sleep_for(5ms);
    }
    start_ms_ = Seconds(Clock::now() - t0) * 1000;
  }
  Netqosd(const Netqosd&) = delete;
  Netqosd& operator=(const Netqosd&) = delete;

  const std::string& socket() const { return socket_; }
  pid_t pid() const { return proc_->pid(); }
  double start_ms() const { return start_ms_; }
  std::string Log() const { return proc_->Log(); }
  bool Running() { return proc_->Running(); }

  // Graceful stop; throws if netqosd does not exit 0.
  void Stop() {
    const int code = proc_->Stop(SIGTERM, std::chrono::seconds(120));
    if (code != 0) {
      throw std::runtime_error("netqosd exited " + std::to_string(code) + " on SIGTERM:\n" +
                               proc_->Log());
    }
  }

 private:
  std::string socket_;
  std::string log_;
  std::unique_ptr<testing::DaemonProcess> proc_;
  double start_ms_ = 0;
};

}  // namespace netqos::bench
