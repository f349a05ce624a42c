// The enforcement subcommands: status, classes, top, cgroup, cgroup-mount. Most ask the daemon
// (admin RPCs) and read the pinned maps directly (bpf/pinned_maps.h), and work with whichever
// side answers.
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "bpf/cgroup_id.h"
#include "bpf/format_pin.h"
#include "bpf/pinned_maps.h"
#include "cgroup/fs/cgroup_library.h"
#include "cgroup/fs/mount_detect.h"
#include "ctl/cgroup_explain.h"
#include "ctl/class_rows.h"
#include "ctl/commands.h"
#include "ctl/ctl.h"
#include "ctl/status_view.h"
#include "ctl/top_view.h"
#include "netqos/admin/v1/admin.grpc.pb.h"
#include "render/counters_proto.h"
#include "render/table.h"

namespace netqos::ctl {
namespace {

namespace admin = ::netqos::admin::v1;
using Clock = std::chrono::steady_clock;

// The name joins and status must not stall a refreshing `top` for the full --timeout.
constexpr double kQuickTimeoutSeconds = 3;
// Refreshes a TX TREND sparkline spans (at the default 1 s interval, the last 24 seconds).
constexpr size_t kSparklineWidth = 24;
// A node has thousands of cgroups, not millions: the walk for an id stops here.
constexpr size_t kMaxCgroupWalk = 1000000;

template <typename Response, typename Call>
std::optional<Response> TryRpc(const GlobalOptions& g, double timeout, const char* rpc, Call call,
                               std::string* error) {
  GlobalOptions quick = g;
  quick.timeout_seconds = std::min(g.timeout_seconds, timeout);
  auto conn = Connection::Open(quick, error);
  if (!conn) return std::nullopt;
  auto stub = admin::Admin::NewStub(conn->channel());
  grpc::ClientContext ctx;
  conn->Prepare(&ctx);
  Response resp;
  grpc::Status s = call(*stub, &ctx, &resp);
  if (!s.ok()) {
    *error = DescribeRpcError(rpc, s, g.socket);
    return std::nullopt;
  }
  return resp;
}

std::optional<admin::GetStatusResponse> TryStatus(const GlobalOptions& g, std::string* error) {
  return TryRpc<admin::GetStatusResponse>(
      g, g.timeout_seconds, "GetStatus",
      [](admin::Admin::Stub& stub, grpc::ClientContext* ctx, admin::GetStatusResponse* resp) {
        return stub.GetStatus(ctx, admin::GetStatusRequest{}, resp);
      },
      error);
}

std::optional<admin::ListClassesResponse> TryListClasses(const GlobalOptions& g,
                                                         bool without_counters, double timeout,
                                                         std::string* error) {
  return TryRpc<admin::ListClassesResponse>(
      g, timeout, "ListClasses",
      [without_counters](admin::Admin::Stub& stub, grpc::ClientContext* ctx,
                         admin::ListClassesResponse* resp) {
        admin::ListClassesRequest req;
        req.set_without_counters(without_counters);
        return stub.ListClasses(ctx, req, resp);
      },
      error);
}

// --bpf-pin-dir, else where the daemon says it pins, else the default.
std::string ResolvePinDir(const std::string& flag, const std::string& daemon_pin_dir) {
  if (!flag.empty()) return flag;
  if (!daemon_pin_dir.empty()) return daemon_pin_dir;
  return kDefaultPinDir;
}

// Reads the classes and both counter maps; false (with *error set) on failure.
bool ReadPinned(const bpf::PinnedMaps& maps, PinnedSnapshot* snap, std::string* error) {
  auto classes = maps.Classes();
  auto containers = maps.AllContainerCounters();
  auto class_counters = maps.AllClassCounters();
  for (const Status& st : {classes.status(), containers.status(), class_counters.status()}) {
    if (!st.ok()) {
      *error = DescribePinError(st, maps.pin_dir());
      return false;
    }
  }
  snap->classes = std::move(classes).value();
  snap->container_counters = std::move(containers).value();
  snap->class_counters = std::move(class_counters).value();
  return true;
}

// The cgroup2 mount point netqos uses (cgroup/fs/mount_detect.h), "" if there is none.
std::string Cgroup2Mount() {
  auto mount = cgroup::DetectCgroup2Mount();
  return mount.ok() ? *mount : std::string();
}

// The directory under `root` whose inode is `id`, "" if none (bounded walk).
std::string FindCgroupById(const std::string& root, uint64_t id) {
  std::string found;
  (void)cgroup::WalkCgroupDirs(root, kMaxCgroupWalk, [&](const std::string& dir) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) == 0 && st.st_ino == id) found = dir;
    return found.empty();
  });
  return found;
}

bool IsTerminal(const std::ostream& out) {
  return out.rdbuf() == std::cout.rdbuf() && ::isatty(STDOUT_FILENO) == 1;
}

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double MonotonicSeconds() {
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

}  // namespace

int CmdStatus(const GlobalOptions& g, const std::string& pin_dir_flag, std::ostream& out,
              std::ostream& /*err*/) {
  StatusInput in;
  in.socket = g.socket;
  in.daemon = TryStatus(g, &in.daemon_error);
  in.pins = bpf::InspectPinDir(
      ResolvePinDir(pin_dir_flag, in.daemon ? in.daemon->enforcement().pin_dir() : ""));
  in.wide = g.wide();
  if (!in.daemon && in.pins.exists) {
    // The daemon reports every stamp it uses; without it, the pin directory's is read here (the
    // state directory's path is the daemon's flag, unknown here).
    FormatStampReading r{"pin_dir", in.pins.pin_dir + "/" + bpf::kFormatPinName, std::nullopt, ""};
    auto stamp = bpf::ReadFormatPin(in.pins.pin_dir);
    if (stamp.ok()) {
      r.stamp = *stamp;
    } else {
      r.error = stamp.status().message();
    }
    in.pin_stamp = std::move(r);
  }
  if (g.structured()) {
    out << DocumentText(g.format, StatusJson(in));
  } else {
    PrintStatus(in, out);
  }
  // The output already says why; the exit code tells scripts the daemon is not answering.
  return in.daemon ? kExitOk : kExitRpcError;
}

int CmdClasses(const GlobalOptions& g, const std::string& pin_dir_flag, std::ostream& out,
               std::ostream& err) {
  std::string daemon_error;
  auto daemon = TryListClasses(g, false, g.timeout_seconds, &daemon_error);
  ClassSources sources;
  sources.pin_dir = ResolvePinDir(pin_dir_flag, daemon ? daemon->pin_dir() : "");
  sources.daemon_reached = daemon.has_value();
  if (daemon) sources.mode = daemon->mode();

  PinnedSnapshot snap;
  std::string pin_error;
  auto maps = bpf::PinnedMaps::Open(sources.pin_dir);
  if (maps.ok()) {
    sources.pinned_read = ReadPinned(**maps, &snap, &pin_error);
  } else {
    pin_error = DescribePinError(maps.status(), sources.pin_dir);
  }
  if (!daemon && !sources.pinned_read) {
    err << "netqosctl: " << daemon_error << "\nnetqosctl: " << pin_error << "\n";
    return kExitRpcError;
  }
  if (!daemon) {
    sources.note = "pod and container names need the daemon: " + daemon_error;
  } else if (!sources.pinned_read &&
             !(sources.mode == "none" && maps.status().code() == StatusCode::kNotFound)) {
    sources.note = "pinned maps not read, showing netqosd's view: " + pin_error;
  }
  const ClassRows rows =
      JoinClasses(sources.pinned_read ? &snap : nullptr, daemon ? &*daemon : nullptr);
  if (g.structured()) {
    out << DocumentText(g.format, ClassesJson(rows, sources));
  } else {
    PrintClasses(rows, sources, out);
  }
  return kExitOk;
}

int CmdTop(const GlobalOptions& g, const std::string& pin_dir_flag, const TopFlags& flags,
           std::ostream& out, std::ostream& err) {
  std::string daemon_error;
  auto names = TryListClasses(g, true, kQuickTimeoutSeconds, &daemon_error);
  const std::string pin_dir = ResolvePinDir(pin_dir_flag, names ? names->pin_dir() : "");
  auto opened = bpf::PinnedMaps::Open(pin_dir);
  std::unique_ptr<bpf::PinnedMaps> maps;
  std::string pin_note;
  if (opened.ok()) {
    maps = std::move(opened).value();
  } else if (names) {
    // Counters through the daemon (it reads the same maps) when this process cannot.
    pin_note = names->mode() == "bpf"
                   ? "counters through netqosd: " + DescribePinError(opened.status(), pin_dir)
                   : "enforcement is off in netqosd (mode " + names->mode() +
                         "): nothing is classified or counted";
  } else {
    err << "netqosctl: " << DescribePinError(opened.status(), pin_dir) << "\nnetqosctl: (and "
        << daemon_error << ")\n";
    return kExitRpcError;
  }

  // One reading of the counters, plus the class entries (for names and classes of idle ones),
  // and the daemon's answer: names, and the HTB leaves' drops (which only netqosd reads).
  PinnedSnapshot classes_only;
  std::optional<admin::ListClassesResponse> fresh;
  std::string names_error;
  auto sample = [&](CounterSample* s, std::string* error) {
    *s = CounterSample{};
    classes_only.classes.clear();
    if (maps) {
      PinnedSnapshot snap;
      if (!ReadPinned(*maps, &snap, error)) return false;
      s->seconds = MonotonicSeconds();
      s->unix_time = UnixNow();
      s->containers.insert(snap.container_counters.begin(), snap.container_counters.end());
      s->classes.insert(snap.class_counters.begin(), snap.class_counters.end());
      classes_only.classes = std::move(snap.classes);
      // Asked again each refresh, so a daemon that comes or goes shows at once.
      names_error.clear();
      fresh = TryListClasses(g, false, kQuickTimeoutSeconds, &names_error);
    } else {
      fresh = TryListClasses(g, false, kQuickTimeoutSeconds, error);
      if (!fresh) return false;
      s->seconds = MonotonicSeconds();
      s->unix_time = UnixNow();
      for (const auto& c : fresh->containers()) {
        s->containers[c.cgroup_id()] = render::CountersFromProto(c.counters());
        // The daemon's copy already includes the leaves' drops: they are added from the queues.
        s->containers[c.cgroup_id()].drops = 0;
      }
      for (const auto& c : fresh->classes()) {
        s->classes[c.net_class_id()] = render::CountersFromProto(c.counters());
        s->classes[c.net_class_id()].drops = 0;
      }
    }
    AddLeafDrops(JoinClasses(nullptr, fresh ? &*fresh : nullptr), s);
    return true;
  };

  const bool clear = !g.structured() && !flags.no_clear && IsTerminal(out);
  const auto interval = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(flags.interval_seconds));
  RateHistory history(kSparklineWidth);
  const SparkGlyphs glyphs =
      GlyphsForLocale(std::getenv("LC_ALL"), std::getenv("LC_CTYPE"), std::getenv("LANG"));
  CounterSample before, after;
  std::string error;
  if (!sample(&before, &error)) {
    err << "netqosctl: " << error << "\n";
    return kExitRpcError;
  }
  auto next = Clock::now() + interval;
  for (int64_t i = 0; flags.iterations == 0 || i < flags.iterations; ++i) {
    std::this_thread::sleep_until(next);
    next += interval;
    if (!sample(&after, &error)) {
      err << "netqosctl: " << error << "\n";
      return kExitRpcError;
    }
    const ClassRows rows = JoinClasses(maps ? &classes_only : nullptr, fresh ? &*fresh : nullptr);
    TopFrame frame = BuildTopFrame(before, after, rows.containers);
    frame.unix_time = after.unix_time;  // when the counters were read, not when printed
    frame.pin_dir = pin_dir;
    frame.source = maps ? "pinned maps" : "netqosd";
    frame.names_from_daemon = fresh.has_value();
    frame.note = pin_note;
    if (flags.sparkline) AddTrends(history, glyphs, &frame);
    if (!fresh) {
      frame.note += (frame.note.empty() ? "" : "; ") +
                    std::string("names need the daemon (so do drops): ") + names_error;
    } else if (!fresh->queue_counters() && fresh->mode() == "bpf") {
      frame.note += (frame.note.empty() ? "" : "; ") +
                    std::string("this netqosd does not report its HTB leaves' drops");
    }
    if (g.structured()) {
      out << StreamDocumentText(g.format, TopFrameJson(frame));
    } else {
      if (clear) out << "\033[H\033[2J";
      PrintTopFrame(frame, out);
      if (!clear) out << "\n";
    }
    out.flush();
    before = std::move(after);
  }
  return kExitOk;
}

int CmdCgroupMount(const GlobalOptions& g, std::ostream& out, std::ostream& err) {
  auto mount = cgroup::DetectCgroup2Mount();
  if (!mount.ok()) {
    err << "netqosctl: " << mount.status().message() << "\n";
    return kExitRpcError;
  }
  if (g.structured()) {
    out << DocumentText(g.format, {{"cgroup2_mount", *mount}});
  } else {
    out << *mount << "\n";
  }
  return kExitOk;
}

int CmdCgroup(const GlobalOptions& g, const std::string& pin_dir_flag, const std::string& target,
              std::ostream& out, std::ostream& err) {
  CgroupFacts f;
  const std::string mount = Cgroup2Mount();
  const bool is_id = !target.empty() && std::all_of(target.begin(), target.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
  if (is_id) {
    try {
      f.cgroup_id = std::stoull(target);
    } catch (const std::exception&) {
      err << "netqosctl: cgroup id " << target << " is out of range\n";
      return kExitUsage;
    }
    if (!mount.empty()) f.path = FindCgroupById(mount, f.cgroup_id);
  } else {
    std::string path = target;
    struct stat st {};
    // A path relative to the cgroup2 mount ("kubepods.slice/...") is accepted too.
    if (::stat(path.c_str(), &st) != 0 && !mount.empty() && !path.empty() && path[0] != '/') {
      const std::string under = mount + "/" + path;
      if (::stat(under.c_str(), &st) == 0) path = under;
    }
    auto id = bpf::CgroupIdOf(path);
    if (!id.ok()) {
      err << "netqosctl: " << id.status().message()
          << (id.status().code() == StatusCode::kNotFound
                  ? ": give a cgroup directory (absolute, or relative to the cgroup2 mount " +
                        (mount.empty() ? std::string("(none found)") : mount) + ") or a cgroup id"
                  : std::string())
          << "\n";
      return kExitUsage;
    }
    f.path = path;
    f.cgroup_id = *id;
  }

  auto status = TryStatus(g, &f.daemon_error);
  f.daemon_reached = status.has_value();
  bool queues_read = false;
  if (status) {
    f.mode = status->enforcement().mode();
    f.mode_error = status->enforcement().error();
    std::string classes_error;
    if (auto classes = TryListClasses(g, false, g.timeout_seconds, &classes_error)) {
      queues_read = classes->queue_counters();
      for (const auto& c : classes->containers()) {
        if (c.cgroup_id() == f.cgroup_id) f.daemon = c;
      }
    } else {
      f.daemon_reached = false;
      f.daemon_error = classes_error;
    }
  }
  f.pin_dir = ResolvePinDir(pin_dir_flag, status ? status->enforcement().pin_dir() : "");
  auto maps = bpf::PinnedMaps::Open(f.pin_dir);
  if (maps.ok()) {
    auto entry = (*maps)->Class(f.cgroup_id);
    auto counters = (*maps)->ContainerCounters(f.cgroup_id);
    if (entry.ok() && counters.ok()) {
      f.pinned_read = true;
      f.entry = *entry;
      const TrafficCounters& c = *counters;
      if (f.entry || c.tx_packets || c.rx_packets || c.drops) f.counters = c;
    } else {
      f.pinned_error = DescribePinError(entry.ok() ? counters.status() : entry.status(), f.pin_dir);
    }
  } else {
    f.pinned_error = DescribePinError(maps.status(), f.pin_dir);
  }
  if (!f.counters && f.daemon && f.daemon->has_counters()) {
    f.counters = render::CountersFromProto(f.daemon->counters());
  } else if (f.counters && f.daemon && queues_read) {
    // The BPF programs never drop: the drops are the container's HTB leaves', which only the
    // daemon reads.
    f.counters->drops = f.daemon->counters().drops();
  }

  // An id that names no directory, no pinned entry and nothing in the daemon: nothing to tell.
  if (f.path.empty() && !f.entry && !f.counters && !f.daemon) {
    err << "netqosctl: cgroup " << f.cgroup_id << ": nothing is known of it. Tried: "
        << (mount.empty() ? std::string("no cgroup2 mount to search")
                          : "no directory with that id under " + mount)
        << "; " << (f.pinned_read ? "no class entry or counters in " + f.pin_dir : f.pinned_error)
        << "; " << (f.daemon_reached ? std::string("netqosd has no record of it") : f.daemon_error)
        << "\n";
    return kExitRpcError;
  }
  const Explanation why = Explain(f);
  if (g.structured()) {
    out << DocumentText(g.format, CgroupJson(f, why));
  } else {
    PrintCgroup(f, why, out);
  }
  return kExitOk;
}

}  // namespace netqos::ctl
