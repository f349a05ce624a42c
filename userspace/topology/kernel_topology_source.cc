#include "topology/kernel_topology_source.h"

#include <net/if.h>
#include <spdlog/spdlog.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

#include "os/netns_exec.h"
#include "topology/netlink_links.h"
#include "topology/sysfs_cpu_topology.h"
#include "topology/sysfs_nic.h"

namespace netqos::topology {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using os::NetnsSysfs;
using os::RunInNetns;

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

// Katalyst's enable rule, extended for virtual links whose driver never reports an operstate.
bool LinkEnabled(const SysfsNic& s, const NlLink& l) {
  if (s.pci_enable) return *s.pci_enable;
  if (s.operstate == "unknown" && !s.pci) return (l.flags & IFF_UP) && (l.flags & IFF_RUNNING);
  return SysfsEnabled(s);
}

bool SameNic(const core::Nic& a, const core::Nic& b) {
  return a.id == b.id && a.ifindex == b.ifindex && a.speed_mbps == b.speed_mbps &&
         a.numa_node == b.numa_node && a.enabled == b.enabled && a.ipv4 == b.ipv4 &&
         a.ipv6 == b.ipv6 && a.netns_path == b.netns_path && a.pci_address == b.pci_address &&
         a.healthy == b.healthy && a.unhealthy_reason == b.unhealthy_reason;
}

// One info line per health-relevant change, key=value.
void LogTransitions(const core::Topology& before, const core::Topology& after) {
  std::map<core::NicId, const core::Nic*> old;
  for (const auto& n : before.nics) old[n.id] = &n;
  for (const auto& n : after.nics) {
    auto it = old.find(n.id);
    if (it == old.end()) {
      spdlog::info("nic appeared netns={} name={} ifindex={} enabled={} ipv4={} ipv6={}",
                   n.id.netns, n.id.name, n.ifindex, n.enabled, Join(n.ipv4), Join(n.ipv6));
      continue;
    }
    const core::Nic& o = *it->second;
    old.erase(it);
    if (o.enabled != n.enabled)
      spdlog::info("nic link {} netns={} name={} ifindex={}", n.enabled ? "up" : "down", n.id.netns,
                   n.id.name, n.ifindex);
    if (o.ipv4 != n.ipv4 || o.ipv6 != n.ipv6) {
      const bool had = !o.ipv4.empty() || !o.ipv6.empty();
      const bool has = !n.ipv4.empty() || !n.ipv6.empty();
      const char* what = had == has ? "changed" : (has ? "gained" : "lost");
      spdlog::info("nic addresses {} netns={} name={} ipv4={} ipv6={} old_ipv4={} old_ipv6={}",
                   what, n.id.netns, n.id.name, Join(n.ipv4), Join(n.ipv6), Join(o.ipv4),
                   Join(o.ipv6));
    }
    if (o.ifindex != n.ifindex || o.speed_mbps != n.speed_mbps)
      spdlog::info("nic attributes changed netns={} name={} ifindex={} speed_mbps={}", n.id.netns,
                   n.id.name, n.ifindex, n.speed_mbps);
  }
  for (const auto& [id, n] : old)
    spdlog::info("nic vanished netns={} name={} ifindex={}", id.netns, id.name, n->ifindex);
}

// Links of one namespace, read from inside it.
Status ReadNamespaceLinks(const std::string& ns_name, const std::string& ns_path,
                          const std::string& sysfs, const NicSelection& sel,
                          std::vector<LinkReport>* out) {
  NETQOS_ASSIGN_OR_RETURN(std::vector<NlLink> nl_links, DumpLinks());
  NETQOS_ASSIGN_OR_RETURN(std::vector<std::string> names, ListNetDevices(sysfs));
  const std::set<std::string> bonds = ReadBondingMasters(sysfs);
  std::map<std::string, const NlLink*> by_name;
  for (const auto& l : nl_links) by_name[l.name] = &l;
  for (const auto& name : names) {
    auto it = by_name.find(name);
    if (it == by_name.end()) continue;  // vanished (or appeared) between the two reads
    auto sys = ReadSysfsNic(sysfs, name, bonds);
    if (!sys.ok()) continue;  // vanished mid-read; the next change notification re-reads
    const NlLink& l = *it->second;
    NicDecision decision = ClassifyNic(sel, name, sys->pci, sys->bond);
    LinkReport r;
    r.netns = ns_name;
    r.name = name;
    r.ifindex = l.ifindex;
    r.counted = decision.counted;
    r.why = std::move(decision.why);
    r.nic.id = core::NicId{ns_name, name};
    r.nic.ifindex = l.ifindex;
    r.nic.speed_mbps = EffectiveSpeed(sel, name, sys->speed_mbps);
    r.nic.numa_node = sys->numa_node;
    r.nic.enabled = LinkEnabled(*sys, l);
    r.nic.ipv4 = l.ipv4;
    r.nic.ipv6 = l.ipv6;
    r.nic.netns_path = ns_path;
    r.nic.pci_address = sys->pci_address;
    r.nic.healthy = true;
    out->push_back(std::move(r));
  }
  return Status::Ok();
}

struct NsIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const NsIdentity&) const = default;
};

std::optional<NsIdentity> IdentityOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return NsIdentity{st.st_dev, st.st_ino};
}

// A change-notification socket bound to one namespace.
struct Monitor {
  NsIdentity identity;
  NlSockPtr sock;
};

}  // namespace

bool SameTopology(const core::Topology& a, const core::Topology& b) {
  if (a.numa_nodes.size() != b.numa_nodes.size() || a.nics.size() != b.nics.size()) return false;
  for (size_t i = 0; i < a.numa_nodes.size(); ++i) {
    if (a.numa_nodes[i].id != b.numa_nodes[i].id ||
        a.numa_nodes[i].socket != b.numa_nodes[i].socket)
      return false;
  }
  for (size_t i = 0; i < a.nics.size(); ++i) {
    if (!SameNic(a.nics[i], b.nics[i])) return false;
  }
  return true;
}

Result<std::unique_ptr<KernelTopologySource>> KernelTopologySource::Create(Options options) {
  std::unique_ptr<KernelTopologySource> src(new KernelTopologySource(std::move(options)));
  auto first = src->Discover();
  if (!first.ok()) return first.status();
  return src;
}

KernelTopologySource::KernelTopologySource(Options options) : options_(std::move(options)) {}

KernelTopologySource::~KernelTopologySource() {
  if (watch_) watch_->Wake();
  if (thread_.joinable()) thread_.join();
}

std::vector<KernelTopologySource::Namespace> KernelTopologySource::ListNamespaces() const {
  std::vector<Namespace> out;
  if (!options_.multi_ns) return out;
  std::set<std::string> seen_dirs;
  std::set<std::string> seen_names;
  for (const auto& dir : options_.netns_dirs) {
    std::error_code ec;
    fs::path real = fs::canonical(dir, ec);
    if (ec || !seen_dirs.insert(real.string()).second) continue;  // missing or a duplicate
    std::vector<Namespace> here;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code type_ec;
      if (it->is_directory(type_ec)) continue;
      std::string name = it->path().filename().string();
      here.push_back({name, (fs::path(dir) / name).string()});
    }
    for (auto& ns : here) {
      // The same name in two different directories would make two NICs with one id.
      if (seen_names.insert(ns.name).second) out.push_back(std::move(ns));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const Namespace& a, const Namespace& b) { return a.name < b.name; });
  return out;
}

void KernelTopologySource::RecordNamespaceErrors(const std::vector<std::string>& errors) {
  std::set<std::string> now(errors.begin(), errors.end());
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& e : now) {
    if (!logged_errors_.count(e)) spdlog::warn("network namespace skipped error=\"{}\"", e);
  }
  logged_errors_ = std::move(now);
}

Result<DiscoveryReport> KernelTopologySource::Discover() {
  DiscoveryReport report;
  NETQOS_ASSIGN_OR_RETURN(report.topology.numa_nodes, ReadNumaNodes(options_.sysfs_root));

  Status host = RunInNetns("", [&](const std::string&) {
    return ReadNamespaceLinks("", "", options_.sysfs_root, options_.selection, &report.links);
  });
  if (!host.ok()) return host.Wrap("host network namespace");

  for (const auto& ns : ListNamespaces()) {
    std::vector<LinkReport> links;
    Status st = RunInNetns(ns.path, [&](const std::string& sysfs) {
      return ReadNamespaceLinks(ns.name, ns.path, sysfs, options_.selection, &links);
    });
    if (!st.ok()) {
      report.namespace_errors.push_back("network namespace " + ns.path + ": " + st.message());
      continue;
    }
    for (auto& l : links) report.links.push_back(std::move(l));
  }
  RecordNamespaceErrors(report.namespace_errors);

  for (const auto& l : report.links) {
    if (l.counted) report.topology.nics.push_back(l.nic);
  }
  return report;
}

Result<core::Topology> KernelTopologySource::Read() {
  NETQOS_ASSIGN_OR_RETURN(DiscoveryReport report, Discover());
  std::lock_guard<std::mutex> lock(mu_);
  last_read_ = report.topology;
  return std::move(report.topology);
}

// The watch thread's state and its phases: inotify on the namespace directories, one netlink
// link monitor per namespace, and the debounce / retry / resync deadlines that decide when to
// discover again.
class KernelTopologySource::Watcher {
 public:
  Watcher(KernelTopologySource& src, std::function<void(core::Topology)> on_change)
      : src_(src), on_change_(std::move(on_change)) {}

  void Run();

 private:
  static constexpr std::chrono::milliseconds kFirstRetry{250};
  // Deadlines; kNever when not armed (std::optional here trips GCC 12's maybe-uninitialized).
  static constexpr Clock::time_point kNever = Clock::time_point::max();

  void WatchDirs();
  bool SyncMonitors();
  void DropStaleMonitors(const std::map<std::string, std::string>& wanted);
  void Rediscover();
  // Waits for the next event or deadline; false when the watch must end.
  bool WaitOnce(bool* event);
  void AfterWait(bool event);

  KernelTopologySource& src_;
  const std::function<void(core::Topology)> on_change_;
  std::set<std::string> watched_dirs_;       // realpaths
  std::map<std::string, Monitor> monitors_;  // namespace name ("" = host) -> socket
  core::Topology delivered_;
  bool have_delivered_ = false;
  std::string last_error_;
  Clock::time_point pending_ = kNever;  // end of the debounce window
  Clock::time_point retry_ = kNever;    // re-enter namespaces that failed
  std::chrono::milliseconds backoff_ = kFirstRetry;
  Clock::time_point next_resync_{};
};

// inotify on the namespace directories: bind-mount files appear and disappear there.
void KernelTopologySource::Watcher::WatchDirs() {
  if (!src_.watch_->has_inotify() || !src_.options_.multi_ns) return;
  for (const auto& dir : src_.options_.netns_dirs) {
    std::error_code ec;
    fs::path real = fs::canonical(dir, ec);
    if (ec) {
      // /run/netns is created by the first `ip netns add`: watch the parent until it exists
      // (inotify_add_watch on an already watched inode just updates that watch).
      fs::path parent = fs::canonical(fs::path(dir).parent_path(), ec);
      if (!ec) (void)src_.watch_->Add(parent.string(), IN_CREATE | IN_MOVED_TO | IN_ONLYDIR);
      continue;
    }
    if (watched_dirs_.count(real.string())) continue;
    if (src_.watch_->Add(real.string(), IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO).ok()) {
      watched_dirs_.insert(real.string());
    }
  }
}

// Drops the sockets of vanished or replaced namespaces: an open socket keeps a namespace (and its
// veth peers) alive. The host's stays.
void KernelTopologySource::Watcher::DropStaleMonitors(
    const std::map<std::string, std::string>& wanted) {
  for (auto it = monitors_.begin(); it != monitors_.end();) {
    if (it->first.empty()) {
      ++it;
      continue;
    }
    auto w = wanted.find(it->first);
    auto id = w == wanted.end() ? std::nullopt : IdentityOf(w->second);
    if (!id || !(*id == it->second.identity)) {
      it = monitors_.erase(it);
    } else {
      ++it;
    }
  }
}

// Returns false when some namespace could not be entered (it may still be half-created).
bool KernelTopologySource::Watcher::SyncMonitors() {
  bool all_ok = true;
  if (!monitors_.count("")) {
    auto sock = OpenLinkMonitor();
    if (sock.ok()) {
      monitors_[""] = Monitor{{}, std::move(*sock)};
    } else {
      all_ok = false;
      spdlog::warn("kernel topology watch: host monitor socket error=\"{}\"",
                   sock.status().message());
    }
  }
  std::map<std::string, std::string> wanted;  // name -> path
  for (auto& ns : src_.ListNamespaces()) wanted[ns.name] = ns.path;
  DropStaleMonitors(wanted);
  for (const auto& [name, path] : wanted) {
    if (monitors_.count(name)) continue;
    Monitor m;
    Status st = RunInNetns(
        path,
        [&](const std::string&) -> Status {
          struct stat st_ns {};
          if (::stat("/proc/thread-self/ns/net", &st_ns) != 0)
            return Internal(std::string("stat(/proc/thread-self/ns/net): ") + std::strerror(errno));
          m.identity = NsIdentity{st_ns.st_dev, st_ns.st_ino};
          NETQOS_ASSIGN_OR_RETURN(m.sock, OpenLinkMonitor());
          return Status::Ok();
        },
        NetnsSysfs::kNone);
    if (st.ok()) {
      monitors_[name] = std::move(m);
    } else {
      all_ok = false;  // Discover() records and logs the error
    }
  }
  return all_ok;
}

void KernelTopologySource::Watcher::Rediscover() {
  auto report = src_.Discover();
  if (!report.ok()) {
    if (report.status().message() != last_error_) {
      last_error_ = report.status().message();
      spdlog::warn(
          "kernel topology rediscovery failed, keeping the previous topology "
          "error=\"{}\"",
          last_error_);
    }
    return;
  }
  last_error_.clear();
  if (!have_delivered_) {  // nobody has seen a topology yet: this one is the baseline
    delivered_ = report->topology;
    have_delivered_ = true;
    return;
  }
  if (SameTopology(delivered_, report->topology)) return;
  LogTransitions(delivered_, report->topology);
  delivered_ = report->topology;
  try {  // a throwing subscriber must not end the watch
    on_change_(std::move(report->topology));
  } catch (const std::exception& e) {
    spdlog::error("kernel topology subscriber failed error=\"{}\"", e.what());
  } catch (...) {
    spdlog::error("kernel topology subscriber failed error=unknown");
  }
}

bool KernelTopologySource::Watcher::WaitOnce(bool* event) {
  const Clock::time_point deadline = std::min({next_resync_, pending_, retry_});
  auto wait = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  const std::chrono::milliseconds timeout(std::clamp<long long>(wait, 0, 60'000));

  std::vector<int> sockets;
  std::vector<std::string> order;
  for (const auto& [name, m] : monitors_) {
    sockets.push_back(NlSocketFd(m.sock));
    order.push_back(name);
  }
  std::vector<bool> readable;
  bool dirs_changed = false;
  auto outcome = src_.watch_->Wait(
      timeout, [&](const inotify_event&) { dirs_changed = true; }, sockets, &readable);
  if (!outcome.ok()) {
    spdlog::error("kernel topology watch stopped error=\"{}\"", outcome.status().message());
    return false;
  }
  if (*outcome == os::InotifyWatch::Outcome::kWoken) return false;
  if (dirs_changed) {  // namespaces came or went: retry promptly again
    backoff_ = kFirstRetry;
    retry_ = kNever;
  }
  *event = dirs_changed;
  for (size_t i = 0; i < order.size() && i < readable.size(); ++i) {
    if (!readable[i]) continue;
    *event = true;
    if (!DrainLinkMonitor(monitors_[order[i]].sock)) monitors_.erase(order[i]);  // reopened
  }
  return true;
}

void KernelTopologySource::Watcher::AfterWait(bool event) {
  const Clock::time_point now = Clock::now();
  if (event && pending_ == kNever) pending_ = now + src_.options_.debounce;
  if (now < pending_ && now < retry_ && now < next_resync_) return;
  pending_ = kNever;
  WatchDirs();
  if (SyncMonitors()) {
    retry_ = kNever;
    backoff_ = kFirstRetry;
  } else {
    // A namespace file appears before ip-netns bind-mounts over it, and the mount makes no
    // inotify event: look again soon, backing off for files that are simply not namespaces.
    retry_ = now + backoff_;
    backoff_ = std::min<std::chrono::milliseconds>(backoff_ * 2, src_.options_.resync);
  }
  next_resync_ = now + src_.options_.resync;
  Rediscover();
}

void KernelTopologySource::Watcher::Run() {
  WatchDirs();
  SyncMonitors();
  {
    std::lock_guard<std::mutex> lock(src_.mu_);
    if (src_.last_read_) {
      delivered_ = *src_.last_read_;
      have_delivered_ = true;
    }
  }
  Rediscover();
  next_resync_ = Clock::now() + src_.options_.resync;
  for (;;) {
    bool event = false;
    if (!WaitOnce(&event)) return;
    AfterWait(event);
  }
}

Status KernelTopologySource::Watch(std::function<void(core::Topology)> on_change) {
  if (thread_.joinable()) return FailedPrecondition("kernel topology source already watched");
  // inotify on the namespace directories: bind-mount files appear and disappear there. Without
  // it (out of instances) namespaces are re-listed at the retry and resync deadlines only.
  NETQOS_ASSIGN_OR_RETURN(watch_, os::InotifyWatch::Create(os::InotifyWatch::Inotify::kOptional));
  if (!watch_->has_inotify()) {
    spdlog::warn(
        "kernel topology watch: no inotify instance (fs.inotify.max_user_instances?); namespaces "
        "are re-listed only at resync");
  }
  try {
    thread_ = std::thread([this, cb = std::move(on_change)] {
      try {
        Watcher(*this, cb).Run();
      } catch (const std::exception& e) {
        spdlog::error("kernel topology watch stopped error=\"{}\"", e.what());
      } catch (...) {
        spdlog::error("kernel topology watch stopped error=unknown");
      }
    });
  } catch (const std::system_error& e) {
    return Internal(std::string("starting the kernel topology watch thread: ") + e.what());
  }
  return Status::Ok();
}

}  // namespace netqos::topology
