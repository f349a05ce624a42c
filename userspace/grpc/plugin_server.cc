#include "grpc/plugin_server.h"

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <set>
#include <utility>

#include "grpc/dir_watcher.h"
#include "grpc/registration_service.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace netqos::grpcadapter {
namespace {

std::string Errno(const std::string& what, int err) { return what + ": " + std::strerror(err); }

// mkdir -p with mode 0700 for every directory it creates (the kubelet, root, is the only client).
Status MakeDirs(const std::string& dir) {
  if (dir.empty()) return InvalidArgument("empty socket directory");
  std::string prefix;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    prefix = dir.substr(0, pos);
    if (prefix.empty()) continue;
    if (::mkdir(prefix.c_str(), 0700) == 0) {
      ::chmod(prefix.c_str(), 0700);  // whatever the umask
      continue;
    }
    const int err = errno;
    struct stat st {};
    // EEXIST, or e.g. EACCES/EROFS on an existing ancestor: fine as long as it is a directory.
    if (err != EEXIST && (::stat(prefix.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))) {
      return Internal(Errno("mkdir " + prefix, err));
    }
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return Internal(Errno("stat " + dir, errno));
  if (!S_ISDIR(st.st_mode)) return FailedPrecondition(dir + " is not a directory");
  return Status::Ok();
}

constexpr size_t kMaxSocketPath = sizeof(sockaddr_un::sun_path) - 1;

// Threads of the sync server kept polling for calls once they are idle. gRPC's default is 2: a
// thread that finishes a call while two others poll exits, and a call picked up by the last
// poller starts a new thread. A durable change holds its thread until its journal flush (group
// commit), so with concurrent callers about every other change cost a thread start and exit
// (1.0 to 1.3 clone3 per kubelet cycle with 16 clients on disk); keeping the threads cut the
// daemon's and clients' CPU per cycle by ~40 % on the 2-core benchmark VM (docs/benchmarks.md,
// "Group commit"). Idle pollers wait in gRPC's completion queue (one in epoll, the others on a
// condition variable), so more of them cost a stack each and next to no CPU; threads are still
// started only as calls overlap.
constexpr int kMaxPollers = 32;

// Self-check: a real GetInfo over a fresh connection (a private subchannel pool, so no connection
// to a server we are replacing is reused).
Status DialCheck(const std::string& path, std::chrono::milliseconds timeout) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto channel =
      grpc::CreateCustomChannel("unix:" + path, grpc::InsecureChannelCredentials(), args);
  auto stub = ::pluginregistration::Registration::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  ctx.AddMetadata(kSelfCheckMetadataKey, "1");  // not the kubelet: not counted as its contact
  // No wait_for_ready: the server listens before the socket is renamed into place, so a refused
  // connection means the file was removed again and the watcher will retry at once.
  ::pluginregistration::InfoRequest req;
  ::pluginregistration::PluginInfo info;
  grpc::Status s = stub->GetInfo(&ctx, req, &info);
  // UNIMPLEMENTED still proves the socket answers (a caller serving no Registration service).
  if (s.ok() || s.error_code() == grpc::StatusCode::UNIMPLEMENTED) return Status::Ok();
  return Unavailable("dial check of socket " + path + " failed: " + s.error_message());
}

}  // namespace

Result<std::unique_ptr<PluginServer>> PluginServer::Create(const std::vector<std::string>& dirs,
                                                           std::vector<grpc::Service*> services) {
  return Create(dirs, std::move(services), Options{});
}

Result<std::unique_ptr<PluginServer>> PluginServer::Create(const std::vector<std::string>& dirs,
                                                           std::vector<grpc::Service*> services,
                                                           Options options) {
  if (dirs.empty()) return InvalidArgument("no socket directories to serve on");
  std::unique_ptr<PluginServer> ps(new PluginServer(std::move(services), std::move(options)));
  std::set<std::pair<dev_t, ino_t>> seen;
  for (const auto& raw : dirs) {
    std::string dir = raw;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    NETQOS_RETURN_IF_ERROR(MakeDirs(dir).Wrap("socket directory " + dir));
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return Internal(Errno("stat " + dir, errno));
    if (!seen.insert({st.st_dev, st.st_ino}).second) {
      spdlog::warn("socket directory given twice, served once dir={}", dir);
      continue;
    }
    Endpoint ep;
    ep.dir = dir;
    ep.path = dir + "/" + ps->options_.socket_file_name;
    if (ep.path.size() > kMaxSocketPath) {
      return InvalidArgument("socket path " + ep.path + " is longer than " +
                             std::to_string(kMaxSocketPath) + " bytes");
    }
    ps->endpoints_.push_back(std::move(ep));
  }
  for (auto& ep : ps->endpoints_) {
    NETQOS_RETURN_IF_ERROR(ps->Serve(ep));
    spdlog::info("serving plugin socket path={}", ep.path);
  }
  std::vector<std::string> watched;
  for (const auto& ep : ps->endpoints_) watched.push_back(ep.dir);
  auto watcher = DirWatcher::Create(std::move(watched));
  if (!watcher.ok()) return watcher.status().Wrap("socket watcher");
  ps->watcher_ = std::move(watcher).value();
  ps->watch_thread_ = std::thread([p = ps.get()] { p->WatchLoop(); });
  return ps;
}

PluginServer::PluginServer(std::vector<grpc::Service*> services, Options options)
    : services_(std::move(services)), options_(std::move(options)) {}

PluginServer::~PluginServer() { Stop(); }

std::vector<std::string> PluginServer::SocketPaths() const {
  std::vector<std::string> out;
  for (const auto& ep : endpoints_) out.push_back(ep.path);
  return out;
}

// Binds a new server on a hidden temporary name and renames it over the socket path. The rename
// replaces a stale file atomically, and it matters for the server being replaced: gRPC unlinks a
// listener's own path when it shuts down, which would otherwise delete the new socket. The
// kubelet plugin watcher ignores dot-files, so it only ever sees the final name.
Status PluginServer::Serve(Endpoint& ep) {
  NETQOS_RETURN_IF_ERROR(MakeDirs(ep.dir).Wrap("socket directory " + ep.dir));
  const std::string tmp = ep.dir + "/.netqos." + std::to_string(::getpid()) + "." +
                          std::to_string(++generation_) + ".sock";
  if (tmp.size() > kMaxSocketPath) {
    return InvalidArgument("temporary socket path " + tmp + " is too long");
  }
  ::unlink(tmp.c_str());
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + tmp, grpc::InsecureServerCredentials());
  // No bandwidth-delay probing: it sizes HTTP/2 flow-control windows for long fat links, but
  // here every message is small and local, and each probe PING costs the kubelet's call another
  // wakeup on both sides (about half the round trip of a small RPC; docs/benchmarks.md).
  builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, kMaxPollers);
  for (auto* svc : services_) builder.RegisterService(svc);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) return Unavailable("cannot listen on unix socket " + ep.path);
  auto fail = [&](Status s) {
    server->Shutdown(std::chrono::system_clock::now());
    ::unlink(tmp.c_str());
    return s;
  };
  if (::chmod(tmp.c_str(), 0600) != 0) return fail(Internal(Errno("chmod " + tmp, errno)));
  if (::rename(tmp.c_str(), ep.path.c_str()) != 0) {
    return fail(Internal(Errno("rename " + tmp + " to " + ep.path, errno)));
  }
  const FileIdentity bound = IdentityOf(ep.path);
  if (bound == FileIdentity{}) return fail(Internal(Errno("stat " + ep.path, errno)));
  Status dial = DialCheck(ep.path, options_.dial_timeout);
  if (!dial.ok()) {
    if (IdentityOf(ep.path) == bound) ::unlink(ep.path.c_str());
    return fail(dial);
  }
  std::unique_ptr<grpc::Server> old = std::exchange(ep.server, std::move(server));
  ep.bound = bound;
  if (old) old->Shutdown(std::chrono::system_clock::now() + options_.shutdown_grace);
  return Status::Ok();
}

void PluginServer::CheckEndpoint(Endpoint& ep) {
  const FileIdentity now = IdentityOf(ep.path);
  if (now == ep.bound) return;  // e.g. renamed back into place during the settle wait
  std::string reason = "socket replaced";
  if (now == FileIdentity{}) {
    reason = ::access(ep.dir.c_str(), F_OK) == 0 ? "socket deleted" : "directory removed";
  }
  Status s = Serve(ep);
  if (s.ok()) {
    reserve_count_.fetch_add(1);
    ep.last_error.clear();
    spdlog::info("plugin socket re-served path={} reason=\"{}\"", ep.path, reason);
  } else if (s.message() != ep.last_error) {
    ep.last_error = s.message();
    spdlog::warn("cannot re-serve plugin socket path={} reason=\"{}\" error=\"{}\"; retrying",
                 ep.path, reason, s.message());
  }
}

bool PluginServer::Changed(const Endpoint& ep) const { return IdentityOf(ep.path) != ep.bound; }

bool PluginServer::Settle() {
  const auto deadline = std::chrono::steady_clock::now() + options_.settle_max;
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = watcher_->Wait(options_.settle);
    if (r == DirWatcher::WaitResult::kWoken || stopping_.load()) return false;
    if (r == DirWatcher::WaitResult::kTimeout) break;
  }
  return true;
}

void PluginServer::WatchLoop() {
  while (!stopping_.load()) {
    try {
      if (watcher_->Wait(options_.poll_interval) == DirWatcher::WaitResult::kWoken) break;
      if (stopping_.load()) break;
      bool changed = false;
      for (const auto& ep : endpoints_) changed = changed || Changed(ep);
      if (!changed) continue;
      if (!Settle()) break;
      for (auto& ep : endpoints_) CheckEndpoint(ep);
    } catch (const std::exception& e) {
      spdlog::warn("socket watcher error=\"{}\"", e.what());
    } catch (...) {
      spdlog::warn("socket watcher error=\"unknown exception\"");
    }
  }
}

void PluginServer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  stopping_.store(true);
  if (watcher_) watcher_->Wake();
  if (watch_thread_.joinable()) watch_thread_.join();
  const auto deadline = std::chrono::system_clock::now() + options_.shutdown_grace;
  for (auto& ep : endpoints_) {
    if (ep.server) ep.server->Shutdown(deadline);
  }
  for (auto& ep : endpoints_) {
    ep.server.reset();
    // Only remove the file if it is still the socket we bound: a successor may own it by now.
    if (ep.bound != FileIdentity{} && IdentityOf(ep.path) == ep.bound) ::unlink(ep.path.c_str());
    spdlog::info("stopped serving plugin socket path={}", ep.path);
  }
}

}  // namespace netqos::grpcadapter
