// Reaction time and footprint of the enforcing netqosd (a veth as its NIC, shaped; containers
// listed in a file:// pod list; cgroups under an extra kubepods root):
//  1. Container cgroup created -> class entry with the container's leaf in the pinned BPF map,
//     for 1,000 containers allocated beforehand, one after the other (p50/p99). Reference: the
//     periodic resync (--enforcement-resync-period, 30 s by default), the only path without the
//     inotify watcher.
//  2. Full resync of 10,000 containers: netqosd started with 10,000 allocations in its state,
//     10,000 container cgroups and a 10,000-pod list, nothing pinned yet: time until it serves and
//     until all 10,000 are classified with their HTB leaves. Reference: the same start with
//     everything already pinned (a restart adopting it), and the start with no containers. The
//     kernel's share of the cold start: as many HTB classes made by `tc -batch` alone on a fresh
//     qdisc (bench/htb_class_scaling.sh), once per shaped device.
//  3. Daemon RSS and idle CPU with no containers and with 10,000.
// --churn=H (alone, no report): RSS hour by hour while 1,000 of the 10,000 pods are replaced per
// simulated hour.
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.h"
#include "enforcement_env.h"

namespace netqos::bench {
namespace {

constexpr int kSpeed = 100000;  // Mbit/s: room for 10,000 x 1 Mbit/s and more

// Time until `cgroup_dir` has a container leaf in the class map, polling every 100 µs.
double WaitLeafUs(const EnforcementEnv& env, const std::string& cgroup_dir, Clock::time_point t0,
                  Clock::duration limit) {
  const uint64_t id = InodeOf(cgroup_dir);
  while (Clock::now() - t0 < limit) {
    if (auto c = env.Class(id); c && IsContainerLeaf(c->priority)) return Micros(Clock::now() - t0);
    std::this_thread::sleep_for(100us);
  }
  CheckInterrupted();
  throw std::runtime_error("no class entry for " + cgroup_dir + " within the limit");
}

// Where netqosd's time to serve went, from its "netqosd serving" log line ("startup_ms=... "):
// "-" when the line has no phases.
std::string StartupPhasesOf(const std::string& log) {
  const size_t serving = log.rfind("netqosd serving");  // the log holds every run's lines
  const size_t at = log.find("startup_ms=", serving == std::string::npos ? 0 : serving);
  if (serving == std::string::npos || at == std::string::npos) return "-";
  const size_t end = log.find_first_of("\n\"", at);
  return log.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// When the enforcement of the last run had started ("after_ms=N took_ms=M", its own log line since
// it starts after serving): "-" for a daemon that does not log it.
std::string EnforcementStartOf(const std::string& log) {
  const size_t serving = log.rfind("netqosd serving");
  const size_t at = log.rfind("enforcement started after_ms=");
  if (serving == std::string::npos || at == std::string::npos || at < serving) return "-";
  const size_t from = at + std::string("enforcement started ").size();
  const size_t end = log.find(" (", from);
  return log.substr(from, end == std::string::npos ? std::string::npos : end - from);
}

size_t ServingLines(const std::string& log) {
  size_t n = 0;
  for (size_t at = log.find("netqosd serving"); at != std::string::npos;
       at = log.find("netqosd serving", at + 1)) {
    ++n;
  }
  return n;
}

// "netqosd serving" lines in the daemon log so far (the log holds every run's lines).
size_t ServingLinesSoFar(const EnforcementEnv& env) {
  const std::string path = env.dir() + "/netqosd.log";
  return std::filesystem::exists(path) ? ServingLines(testing::ReadFile(path)) : 0;
}

// The phases of the run just started, which had logged `before` serving lines before it: the
// line is written just after the sockets are served, so it can come a moment after the bench
// saw them served (reading the log at once could return the previous run's line).
std::string NewStartupPhases(EnforcementEnv& env, size_t before) {
  for (int i = 0; i < 500; ++i) {
    const std::string log = env.daemon().Log();
    if (ServingLines(log) > before) return StartupPhasesOf(log);
    SleepFor(10ms);
  }
  return "-";
}

// Seconds the kernel takes to create `n` HTB classes under one fresh qdisc, through `tc -batch`
// (bench/htb_class_scaling.sh): what a cold start costs before netqos does anything of its own.
double KernelClassSeconds(size_t n, const std::string& out_path) {
  const auto run =
      testing::RunCommand({NETQOS_SOURCE_DIR "/bench/htb_class_scaling.sh", std::to_string(n)},
                          out_path, std::chrono::seconds(600));
  if (run.exit_code != 0) throw std::runtime_error("htb_class_scaling.sh failed: " + run.output);
  // The last line: "<classes> <seconds> <us per class> <ratio>".
  std::istringstream lines(run.output);
  std::string line;
  std::string last;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.find("Warning") == std::string::npos) last = line;
  }
  size_t classes = 0;
  double seconds = -1;
  std::istringstream(last) >> classes >> seconds;
  if (classes != n || seconds < 0) {
    throw std::runtime_error("unexpected htb_class_scaling.sh output: " + run.output);
  }
  return seconds;
}

// Allocations of `pods` (1 Mbit/s each) through a daemon with --enforcement=none whose state is
// on tmpfs (fsync is free there), then copied to env's state dir: seconds instead of minutes.
void FillState(const Args& args, EnforcementEnv& env, const std::vector<BenchPod>& pods) {
  ScopedDir shm("/dev/shm", args.tag + "-rfill");
  {
    ScopedDir sock(env.dir(), "fsock");
    std::vector<std::string> flags = env.NicFlags(kSpeed);
    flags.push_back("--qrm-state-dir=" + shm.file("state"));
    flags.push_back("--enforcement=none");
    flags.push_back("--log-level=warn");
    Netqosd filler(flags, sock.path(), env.dir() + "/fill.log");
    std::vector<std::thread> workers;
    std::string error;
    std::mutex mu;
    for (int t = 0; t < 4; ++t) {
      workers.emplace_back([&, t] {
        try {
          KubeletClient c(filler.socket());
          for (size_t i = static_cast<size_t>(t); i < pods.size(); i += 4) {
            if (InterruptSignal().load() != 0) return;
            const auto& p = pods[i];
            Check(c.Allocate(ContainerRequest(p.uid, p.name, p.container, 1)),
                  "Allocate " + p.name);
          }
        } catch (const std::exception& e) {
          std::lock_guard lk(mu);
          error = e.what();
        }
      });
    }
    for (auto& w : workers) w.join();
    CheckInterrupted();
    if (!error.empty()) throw std::runtime_error(error);
    filler.Stop();
  }
  std::filesystem::remove_all(env.StateDir());
  std::filesystem::copy(shm.file("state"), env.StateDir(),
                        std::filesystem::copy_options::recursive);
}

size_t CountHtbLeaves(const std::string& dev) {
  size_t n = 0;
  for (const auto& [handle, cls] : testing::TcClasses(dev)) {
    const size_t colon = handle.find(':');
    if (colon != std::string::npos && std::stoul(handle.substr(colon + 1), nullptr, 16) >= 0x100)
      ++n;
  }
  return n;
}

struct Footprint {
  long rss_kib = 0;
  long peak_kib = 0;  // VmHWM: the most RSS the daemon ever had, its cold start's peak
  long anon_kib = 0;  // RssAnon: the heap's share of rss_kib (the rest is mostly the binary)
  double cpu_percent = 0;
};

// Lists and allocates `pods`, waits for the daemon to read the list, then creates their cgroups
// one after the other: the time from each pod's mkdir to its container's leaf in the class map.
std::vector<double> MeasureReaction(EnforcementEnv& env, const std::vector<BenchPod>& pods) {
  env.pods.insert(env.pods.end(), pods.begin(), pods.end());
  env.WritePods();
  SleepFor(6s);  // the daemon has read the new pod list (every 5 s)
  for (const auto& p : pods) env.Allocate(p, 1);
  std::vector<double> us;
  for (const auto& p : pods) {
    CheckInterrupted();
    const auto t0 = Clock::now();
    MakeDir(env.PodCgroup(p));
    MakeDir(env.ContainerCgroup(p));
    us.push_back(WaitLeafUs(env, env.ContainerCgroup(p), t0, 30s));
  }
  return us;
}

std::string Mib(long kib) { return Fmt(static_cast<double>(kib) / 1024, 1) + " MiB"; }

// RSS now, and the daemon's CPU (all threads) over `window` of doing nothing asked of it.
Footprint MeasureIdle(pid_t pid, Clock::duration window) {
  Footprint f;
  const double c0 = CpuSeconds(pid);
  const auto t0 = Clock::now();
  SleepFor(window);
  f.cpu_percent = (CpuSeconds(pid) - c0) / Seconds(Clock::now() - t0) * 100;
  f.rss_kib = RssKiB(pid);
  f.peak_kib = StatusKiB(pid, "VmHWM");
  f.anon_kib = StatusKiB(pid, "RssAnon");
  return f;
}

void Run(const Args& args) {
  const int reaction_n = args.quick ? 50 : 1000;
  const int resync_n = args.quick ? 300 : 10000;
  const int reaction_more_n = args.quick ? 20 : 300;
  const auto idle_window = args.quick ? 3s : 35s;  // covers one 30 s periodic resync
  Report rep("reaction", args);
  rep.Line("## Reaction time, full resync, footprint");
  rep.Line();
  rep.Line(
      "`bench/reaction_bench.cc`. netqosd with enforcement on (`--enforce-nics` on a veth "
      "into a network namespace, HTB + IFB), containers listed in a file:// pod list "
      "(re-read every 5 s) with their cgroups under an extra kubepods root "
      "(`--addition-cgroup-paths`), default resync period (30 s).");
  rep.Line();

  EnforcementEnv env(args, "r", 3);

  // --- footprint with nothing to do (the baseline of 3.)
  env.StartDaemon(true, kSpeed);
  const double empty_start_ms = env.daemon().start_ms();
  SleepFor(2s);
  const Footprint empty = MeasureIdle(env.daemon().pid(), idle_window);
  std::printf("[reaction] empty daemon: start %.0f ms, RSS %ld KiB, idle CPU %.2f %%\n",
              empty_start_ms, empty.rss_kib, empty.cpu_percent);

  // --- 1. cgroup created -> class in the map
  std::vector<BenchPod> pods;
  for (int i = 0; i < reaction_n; ++i) pods.push_back(MakeBenchPod(1, i));
  const std::vector<double> reaction_us = MeasureReaction(env, pods);
  for (const auto& p : pods) env.RemovePod(p);
  env.StopDaemon();
  for (const auto& p : pods) env.RemoveCgroup(p);

  // --- 2. full resync of N containers
  pods.clear();
  for (int i = 0; i < resync_n; ++i) pods.push_back(MakeBenchPod(2, i));
  auto t_fill = Clock::now();
  FillState(args, env, pods);
  std::printf("[reaction] %d allocations in %.1f s\n", resync_n, Seconds(Clock::now() - t_fill));
  env.pods = pods;
  env.WritePods();
  for (const auto& p : pods) {
    MakeDir(env.PodCgroup(p));
    MakeDir(env.ContainerCgroup(p));
  }
  CheckInterrupted();
  auto all_classified = [&](Clock::time_point t0) {
    while (env.CountLeafEntries() < pods.size()) {
      if (Clock::now() - t0 > 600s) throw std::runtime_error("resync did not classify everyone");
      SleepFor(20ms);
    }
    return Seconds(Clock::now() - t0) * 1000;
  };
  const size_t cold_before = ServingLinesSoFar(env);
  const auto t_cold = Clock::now();
  env.StartDaemon(true, kSpeed);
  const double cold_serve_ms = env.daemon().start_ms();
  const std::string cold_phases = NewStartupPhases(env, cold_before);
  const double cold_classified_ms = all_classified(t_cold);
  // The class entries can be in the map before the last leaves are: wait until every container
  // has its leaf on the veth and the IFB's count holds still (each tree goes in as one apply).
  // The time is that of the first reading of the final counts.
  size_t leaves = 0;
  size_t ifb_leaves = 0;
  auto reached = Clock::now();
  for (size_t last_ifb = SIZE_MAX;; last_ifb = ifb_leaves) {
    const auto read_at = Clock::now();
    leaves = CountHtbLeaves(env.host_if());
    ifb_leaves = CountHtbLeaves(env.Ifb());
    if (leaves >= pods.size() && ifb_leaves == last_ifb) break;
    reached = read_at;
    if (Clock::now() - t_cold > 600s) {
      throw std::runtime_error("the cold start's leaves never came");
    }
    SleepFor(200ms);
  }
  const double cold_all_ms = std::max(cold_classified_ms, Seconds(reached - t_cold) * 1000);
  SleepFor(2s);
  const Footprint full = MeasureIdle(env.daemon().pid(), idle_window);
  // A restart that adopts what is pinned (SIGTERM, no uninstall in between).
  env.StopKeepingPins();
  const size_t warm_before = ServingLinesSoFar(env);
  const auto t_warm = Clock::now();
  env.StartDaemon(true, kSpeed);
  const double warm_serve_ms = env.daemon().start_ms();
  const std::string warm_phases = NewStartupPhases(env, warm_before);
  const double warm_all_ms = all_classified(t_warm);
  // 1. again, with the 10,000 containers present.
  std::vector<BenchPod> more;
  for (int i = 0; i < reaction_more_n; ++i) more.push_back(MakeBenchPod(4, i));
  const std::vector<double> reaction_full_us = MeasureReaction(env, more);

  rep.Line("### Container cgroup created → class in the BPF map");
  rep.Line();
  rep.Line(
      "Containers listed by the kubelet and allocated beforehand (as the kubelet allocates "
      "before the runtime starts a container), created one after the other: `mkdir` of the "
      "pod's and the container's cgroup, then the pinned class map polled every 100 µs until "
      "the container's entry carries its HTB leaf. First " +
      Thousands(reaction_n) + " containers on a node with none, then " +
      Thousands(reaction_more_n) + " more on the node of the full resync below (" +
      Thousands(resync_n) + " containers present, after its adopting restart).");
  rep.Line();
  rep.TableHeader({"containers created", "present before", "p50", "p99", "max",
                   "reference: periodic resync only"});
  auto reaction_row = [&](const std::vector<double>& us, int created, int present) {
    rep.TableRow({Thousands(created), Thousands(present), Us(Percentile(us, 50)),
                  Us(Percentile(us, 99)), Us(*std::max_element(us.begin(), us.end())),
                  "0–30 s (mean 15 s) with the default `--enforcement-resync-period=30`"});
  };
  reaction_row(reaction_us, reaction_n, 0);
  reaction_row(reaction_full_us, reaction_more_n, resync_n);
  rep.Line();
  rep.Figure("cgroup created → class in the map (" + Thousands(reaction_n) + " containers)",
             "p50 " + Us(Percentile(reaction_us, 50)) + ", p99 " + Us(Percentile(reaction_us, 99)),
             "periodic resync alone: up to 30 s");
  rep.Figure("cgroup created → class in the map (" + Thousands(resync_n) + " present)",
             "p50 " + Us(Percentile(reaction_full_us, 50)) + ", p99 " +
                 Us(Percentile(reaction_full_us, 99)),
             "periodic resync alone: up to 30 s");

  // The kernel alone, for the same number of classes on each of the two devices.
  const double kernel_ms = (KernelClassSeconds(leaves, env.dir() + "/htb_scaling_nic.out") +
                            KernelClassSeconds(ifb_leaves, env.dir() + "/htb_scaling_ifb.out")) *
                           1000;

  rep.Line("### Full resync of " + Thousands(resync_n) + " containers");
  rep.Line();
  rep.Line("netqosd started with " + Thousands(resync_n) + " allocations in its checkpoint, " +
           Thousands(resync_n) + " container cgroups and a " + Thousands(resync_n) +
           "-pod list: *cold* with nothing pinned (every class entry, HTB leaf and IFB leaf "
           "created), *adopting* a restart with everything pinned from the cold run. netqosd "
           "serves the plugin socket while its first full pass runs. References: the same daemon "
           "with no containers, and the kernel alone: `tc -batch` creating as many HTB classes "
           "under a fresh qdisc on each of the two devices (bench/htb_class_scaling.sh). The "
           "kernel's time per class grows with the classes already there: creating a class walks "
           "every class of its qdisc to re-bind filters (tc_bind_tclass), so a cold start's "
           "leaves cost O(N^2) in the kernel however netqos sends them.");
  rep.Line();
  rep.TableHeader({"start", "containers", "serving after", "all classified, leaves in place, after",
                   "HTB leaves (veth / IFB)"});
  rep.TableRow({"no containers (reference)", "0", Fmt(empty_start_ms, 0) + " ms", "-", "-"});
  rep.TableRow({"cold", Thousands(resync_n), Fmt(cold_serve_ms, 0) + " ms",
                Fmt(cold_all_ms, 0) + " ms",
                Thousands(static_cast<double>(leaves)) + " / " +
                    Thousands(static_cast<double>(ifb_leaves))});
  rep.TableRow({"adopting (restart)", Thousands(resync_n), Fmt(warm_serve_ms, 0) + " ms",
                Fmt(warm_all_ms, 0) + " ms", "kept"});
  rep.TableRow({"kernel alone (tc -batch, both devices)", Thousands(resync_n), "-",
                Fmt(kernel_ms, 0) + " ms",
                Thousands(static_cast<double>(leaves)) + " / " +
                    Thousands(static_cast<double>(ifb_leaves))});
  rep.Line();
  rep.Line(
      "Where the time to serve went (netqosd's own \"serving\" log line: topology read, "
      "state loaded, dataplane opened and class map adopted, sockets served; the start-up "
      "snapshot, the cgroup watchers and the first pass follow, beside serving): cold `" +
      cold_phases + "`; adopting `" + warm_phases + "`.");
  rep.Line();
  if (leaves < pods.size()) {
    throw std::runtime_error("only " + std::to_string(leaves) + " HTB leaves for " +
                             std::to_string(pods.size()) + " containers");
  }
  rep.Figure(
      "full resync of " + Thousands(resync_n) + " containers",
      "cold " + Fmt(cold_all_ms / 1000, 1) + " s, adopting " + Fmt(warm_all_ms / 1000, 1) + " s",
      "no containers: serving after " + Fmt(empty_start_ms, 0) +
          " ms; the kernel alone makes the " + "cold start's classes in " +
          Fmt(kernel_ms / 1000, 1) + " s (cold / kernel = " + Fmt(cold_all_ms / kernel_ms, 2) +
          "x)");

  rep.Line("### Footprint");
  rep.Line();
  rep.Line("RSS (VmRSS) and CPU of netqosd (all threads) over " + Fmt(Seconds(idle_window), 0) +
           " s with nothing asked of it: pod list re-read every 5 s, one periodic resync in "
           "the window.");
  rep.Line();
  rep.TableHeader({"containers", "RSS", "idle CPU", "RSS per container", "peak RSS (VmHWM)"});
  rep.TableRow({"0 (reference)", Mib(empty.rss_kib), Fmt(empty.cpu_percent, 2) + " %", "-",
                Mib(empty.peak_kib)});
  rep.TableRow(
      {Thousands(resync_n), Mib(full.rss_kib), Fmt(full.cpu_percent, 2) + " %",
       Fmt(static_cast<double>(full.rss_kib - empty.rss_kib) * 1024 / resync_n, 0) + " bytes",
       Mib(full.peak_kib)});
  rep.Line();
  rep.Figure("netqosd RSS and idle CPU (" + Thousands(resync_n) + " containers)",
             Fmt(static_cast<double>(full.rss_kib) / 1024, 1) + " MiB, " +
                 Fmt(full.cpu_percent, 2) + " % of one core",
             "0 containers: " + Fmt(static_cast<double>(empty.rss_kib) / 1024, 1) + " MiB, " +
                 Fmt(empty.cpu_percent, 2) + " %");
  env.StopDaemon();
}

// A node of `n` pods of one container each (the resync's series): their allocations in env's
// state, the kubelet's pod list written and their cgroups made, for a daemon not started yet.
std::vector<BenchPod> PrepareNode(const Args& args, EnforcementEnv& env, int n) {
  std::vector<BenchPod> pods;
  for (int i = 0; i < n; ++i) pods.push_back(MakeBenchPod(2, i));
  FillState(args, env, pods);
  env.pods = pods;
  env.WritePods();
  for (const auto& p : pods) {
    MakeDir(env.PodCgroup(p));
    MakeDir(env.ContainerCgroup(p));
  }
  return pods;
}

// --resync-only=N: only the time to serve of 2., for N cold starts each followed by an adopting
// restart (about 15 s a round instead of the whole bench's 5 min), printed run by run with the
// daemon's phases and then as medians: start-up work is compared between builds with this, run
// back to back (NETQOS_BENCH_NETQOSD names the other build's netqosd). No report is written.
void RunResyncOnly(const Args& args, int rounds) {
  const int resync_n = args.quick ? 300 : 10000;
  EnforcementEnv env(args, "r", 3);
  env.StartDaemon(true, kSpeed);
  std::printf("[resync] no containers: serving after %.0f ms (%s)\n", env.daemon().start_ms(),
              StartupPhasesOf(env.daemon().Log()).c_str());
  env.StopDaemon();
  const std::vector<BenchPod> pods = PrepareNode(args, env, resync_n);
  auto wait_classified = [&](Clock::time_point t0) {
    while (env.CountLeafEntries() < pods.size()) {
      if (Clock::now() - t0 > 600s) throw std::runtime_error("resync did not classify everyone");
      SleepFor(20ms);
    }
    return Seconds(Clock::now() - t0) * 1000;
  };
  std::vector<double> cold_ms, warm_ms;
  for (int round = 0; round < rounds; ++round) {
    CheckInterrupted();
    size_t before = ServingLinesSoFar(env);
    auto t0 = Clock::now();
    env.StartDaemon(true, kSpeed);
    cold_ms.push_back(env.daemon().start_ms());
    const std::string cold_phases = NewStartupPhases(env, before);
    const double cold_all = wait_classified(t0);
    const std::string cold_enforcement = EnforcementStartOf(env.daemon().Log());
    // Every leaf in place (on both devices), so that the restart adopts a whole node.
    while (CountHtbLeaves(env.host_if()) < pods.size() || CountHtbLeaves(env.Ifb()) < pods.size()) {
      if (Clock::now() - t0 > 600s) throw std::runtime_error("the cold start's leaves never came");
      SleepFor(200ms);
    }
    env.StopKeepingPins();
    before = ServingLinesSoFar(env);
    t0 = Clock::now();
    env.StartDaemon(true, kSpeed);
    warm_ms.push_back(env.daemon().start_ms());
    const std::string warm_phases = NewStartupPhases(env, before);
    const double warm_all = wait_classified(t0);
    const std::string warm_enforcement = EnforcementStartOf(env.daemon().Log());
    std::printf(
        "[resync] round %d: cold serving after %.0f ms (%s; enforcement started %s), classified "
        "after %.0f ms; adopting serving after %.0f ms (%s; enforcement started %s), classified "
        "after %.0f ms\n",
        round + 1, cold_ms.back(), cold_phases.c_str(), cold_enforcement.c_str(), cold_all,
        warm_ms.back(), warm_phases.c_str(), warm_enforcement.c_str(), warm_all);
    env.StopDaemon();  // uninstalls: the next round starts cold again
  }
  std::printf(
      "[resync] %d containers, median of %d: cold serving after %.0f ms, adopting %.0f ms\n",
      resync_n, rounds, Median(cold_ms), Median(warm_ms));
}

// The idle window of --footprint-only and --churn: --idle-window=S when given (0 when not). The
// default 35 s holds one periodic resync; idle CPU averaged over a node's real cycle needs a
// full resync in the window too (every 5 min by default), so 330 s or more.
std::chrono::seconds IdleWindow(const Args& args, std::chrono::seconds given) {
  if (given.count() > 0) return given;
  return args.quick ? 3s : 35s;
}

// --footprint-only=N: only the footprint of 3. at 10,000 containers, for N cold starts (about
// 50 s each): the peak RSS (VmHWM) once every container is classified with its leaves in place,
// then RSS and idle CPU over the idle window, printed run by run. Memory is compared between
// builds with this, run alternately (NETQOS_BENCH_NETQOSD names the other build's netqosd; a
// wrapper script there can run it under a heap profiler). No report is written.
void RunFootprintOnly(const Args& args, int rounds, std::chrono::seconds idle_given) {
  const int resync_n = args.quick ? 300 : 10000;
  const auto idle_window = IdleWindow(args, idle_given);
  EnforcementEnv env(args, "r", 3);
  const std::vector<BenchPod> pods = PrepareNode(args, env, resync_n);
  std::vector<double> peak_mib, rss_mib;
  for (int round = 0; round < rounds; ++round) {
    CheckInterrupted();
    const auto t0 = Clock::now();
    env.StartDaemon(true, kSpeed);
    while (env.CountLeafEntries() < pods.size() || CountHtbLeaves(env.host_if()) < pods.size() ||
           CountHtbLeaves(env.Ifb()) < pods.size()) {
      if (Clock::now() - t0 > 600s) throw std::runtime_error("the cold start's leaves never came");
      SleepFor(200ms);
    }
    const double settled_s = Seconds(Clock::now() - t0);
    const long peak_at_settled = StatusKiB(env.daemon().pid(), "VmHWM");
    SleepFor(2s);
    const Footprint f = MeasureIdle(env.daemon().pid(), idle_window);
    peak_mib.push_back(static_cast<double>(f.peak_kib) / 1024);
    rss_mib.push_back(static_cast<double>(f.rss_kib) / 1024);
    std::printf(
        "[footprint] round %d: %d containers settled after %.1f s, peak then %s; after the idle "
        "window: peak (VmHWM) %s, RSS %s (anon %s), idle CPU %.2f %%\n",
        round + 1, resync_n, settled_s, Mib(peak_at_settled).c_str(), Mib(f.peak_kib).c_str(),
        Mib(f.rss_kib).c_str(), Mib(f.anon_kib).c_str(), f.cpu_percent);
    std::fflush(stdout);
    env.StopDaemon();  // uninstalls: the next round starts cold again
  }
  std::printf("[footprint] %d containers, median of %d: peak %.1f MiB, idle RSS %.1f MiB\n",
              resync_n, rounds, Median(peak_mib), Median(rss_mib));
}

// Least-squares slope of `y` against 1, 2, ..., y.size() (the change per step, which a single
// noisy reading at either end does not set alone) and its standard error. NaN for fewer than
// three points.
struct Slope {
  double per_step = std::nan("");
  double std_error = std::nan("");
};
Slope FitSlope(const std::vector<double>& y) {
  Slope s;
  if (y.size() < 3) return s;
  const double n = static_cast<double>(y.size());
  const double mean_x = (n + 1) / 2;
  const double mean_y = Mean(y);
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double dx = static_cast<double>(i + 1) - mean_x;
    sxy += dx * (y[i] - mean_y);
    sxx += dx * dx;
  }
  s.per_step = sxy / sxx;
  double residuals = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double fit = mean_y + s.per_step * (static_cast<double>(i + 1) - mean_x);
    residuals += (y[i] - fit) * (y[i] - fit);
  }
  s.std_error = std::sqrt(residuals / (n - 2) / sxx);
  return s;
}

// One batch of churn: `gone` leave the node as the kubelet removes them (RemovePod, off the pod
// list, their cgroups removed), `fresh` arrive (listed, allocated 1 Mbit/s, their cgroups made).
// Returns once every fresh container's class entry carries its leaf and every gone container's
// entry has left the class map, so that each batch ends with the node in a known state.
void ReplacePods(EnforcementEnv& env, const std::vector<BenchPod>& gone,
                 const std::vector<BenchPod>& fresh) {
  std::vector<uint64_t> gone_ids;
  for (const auto& p : gone) gone_ids.push_back(InodeOf(env.ContainerCgroup(p)));
  for (const auto& p : gone) env.RemovePod(p);
  // The oldest pods leave first: they are at the front of the list.
  env.pods.erase(env.pods.begin(), env.pods.begin() + static_cast<ptrdiff_t>(gone.size()));
  env.pods.insert(env.pods.end(), fresh.begin(), fresh.end());
  env.WritePods();
  for (const auto& p : gone) env.RemoveCgroup(p);
  // Allocated before the cgroups exist, as the kubelet allocates before the runtime starts a
  // container. The daemon may not have re-read the list yet: a container it cannot name waits
  // for the next read, which is part of what churn costs.
  for (const auto& p : fresh) env.Allocate(p, 1);
  for (const auto& p : fresh) env.MakeCgroup(p);
  for (const auto& p : fresh) {
    if (env.WaitLeaf(env.ContainerCgroup(p), 60s) == 0) {
      throw std::runtime_error("no leaf for " + p.name + " within 60 s of its cgroup");
    }
  }
  const auto t0 = Clock::now();
  for (const uint64_t id : gone_ids) {
    while (env.Class(id)) {
      if (Clock::now() - t0 > 60s) {
        throw std::runtime_error("a removed container's class entry (cgroup id " +
                                 std::to_string(id) + ") still in the map after 60 s");
      }
      SleepFor(2ms);
    }
  }
}

// --churn=H: the cold start of --footprint-only, then H simulated hours in which 1,000 of the
// 10,000 pods are replaced (the oldest first, in batches of 100), as fast as the daemon takes
// them: a day of a busy node in minutes. After each hour, once the daemon has settled, its RSS,
// RssAnon and VmHWM; idle CPU over the idle window before the first hour and after the last.
// Memory that each replaced pod leaves behind (a map entry never erased, a watch never dropped)
// shows as RSS that rises hour after hour; the verdict compares the last hours with the first,
// and fits a slope over all of them. Time-based expiries (tombstones, residual state) do not
// advance with the simulated clock: what they hold is bounded by real time, not by pods. No
// report is written.
void RunChurn(const Args& args, int hours, std::chrono::seconds idle_given) {
  const int resync_n = args.quick ? 300 : 10000;
  const int per_hour = args.quick ? 50 : 1000;
  const int batch = args.quick ? 25 : 100;
  const auto idle_window = IdleWindow(args, idle_given);
  // A couple of seconds for the last batch's work, then one pod list re-read (every 5 s), so that
  // each hour is read in the same state.
  const auto settle = 7s;
  EnforcementEnv env(args, "r", 3);
  const std::vector<BenchPod> pods = PrepareNode(args, env, resync_n);
  const auto t_cold = Clock::now();
  env.StartDaemon(true, kSpeed);
  const pid_t pid = env.daemon().pid();
  const size_t n = pods.size();
  while (env.CountLeafEntries() < n || CountHtbLeaves(env.host_if()) < n ||
         CountHtbLeaves(env.Ifb()) < n) {
    if (Clock::now() - t_cold > 600s)
      throw std::runtime_error("the cold start's leaves never came");
    SleepFor(200ms);
  }
  const double settled_s = Seconds(Clock::now() - t_cold);
  SleepFor(2s);
  const Footprint cold = MeasureIdle(pid, idle_window);
  std::printf(
      "[churn] cold start: %d containers settled after %.1f s; idle: RSS %s (anon %s), peak "
      "(VmHWM) %s, idle CPU %.2f %%\n",
      resync_n, settled_s, Mib(cold.rss_kib).c_str(), Mib(cold.anon_kib).c_str(),
      Mib(cold.peak_kib).c_str(), cold.cpu_percent);
  std::fflush(stdout);

  std::vector<double> rss_mib, anon_mib;
  const auto t_churn = Clock::now();
  for (int hour = 1; hour <= hours; ++hour) {
    const auto t_hour = Clock::now();
    for (int i = 0; i < per_hour; i += batch) {
      CheckInterrupted();
      const int k = std::min(batch, per_hour - i);
      const std::vector<BenchPod> gone(env.pods.begin(), env.pods.begin() + k);
      std::vector<BenchPod> fresh;
      // Rounds 100 and up: apart from the cold start's pods (round 2), one round per hour.
      for (int j = i; j < i + k; ++j) fresh.push_back(MakeBenchPod(100 + hour, j));
      ReplacePods(env, gone, fresh);
    }
    const double churn_s = Seconds(Clock::now() - t_hour);
    SleepFor(settle);
    if (!env.Running())
      throw std::runtime_error("netqosd exited during hour " + std::to_string(hour));
    const long rss = RssKiB(pid);
    const long anon = StatusKiB(pid, "RssAnon");
    const long peak = StatusKiB(pid, "VmHWM");
    rss_mib.push_back(static_cast<double>(rss) / 1024);
    anon_mib.push_back(static_cast<double>(anon) / 1024);
    // What the kernel holds for the node should not grow either: one leaf per container.
    const size_t entries = env.CountLeafEntries();
    const size_t leaves = CountHtbLeaves(env.host_if());
    std::printf(
        "[churn] hour %d: %d pods replaced in %.1f s (%.1f s with the settling); RSS %s (anon "
        "%s), peak (VmHWM) %s; class entries %zu, HTB leaves %zu; %.0f s since the churn began\n",
        hour, per_hour, churn_s, Seconds(Clock::now() - t_hour), Mib(rss).c_str(),
        Mib(anon).c_str(), Mib(peak).c_str(), entries, leaves, Seconds(Clock::now() - t_churn));
    std::fflush(stdout);
  }
  const Footprint end = MeasureIdle(pid, idle_window);
  std::printf(
      "[churn] after %d simulated hours (%.0f s): idle RSS %s (anon %s), peak (VmHWM) %s, idle "
      "CPU %.2f %% (cold start: %.2f %%)\n",
      hours, Seconds(Clock::now() - t_churn), Mib(end.rss_kib).c_str(), Mib(end.anon_kib).c_str(),
      Mib(end.peak_kib).c_str(), end.cpu_percent, cold.cpu_percent);
  // The last quarter of the hours (at least one) against the first hour: the first hour, not the
  // cold start, since the cold start's idle RSS still holds what the allocator kept from its peak.
  const size_t last_n = std::max<size_t>(1, rss_mib.size() / 4);
  const double last_rss =
      Mean(std::vector<double>(rss_mib.end() - static_cast<ptrdiff_t>(last_n), rss_mib.end()));
  const double rise = last_rss - rss_mib.front();
  // Creep is a rise that goes on: the slope over the second half of the hours, when the
  // allocator's one-off growth after the cold start is behind, if it is more than twice its
  // standard error (glibc's arenas move RSS by several MiB from one reading to the next) and
  // more than 0.1 MiB per hour (2.4 MiB a day).
  const std::vector<double> second_half(rss_mib.begin() + static_cast<ptrdiff_t>(hours / 2),
                                        rss_mib.end());
  const Slope all = FitSlope(rss_mib);
  const Slope late = FitSlope(second_half);
  const Slope anon = FitSlope(anon_mib);
  const bool creeps = late.per_step > 2 * late.std_error && late.per_step > 0.1;
  std::printf(
      "[churn] verdict: %s. RSS hour 1 %.1f MiB, last %zu hour(s) %.1f MiB: %+.1f MiB (%+.2f MiB "
      "per simulated hour); least-squares slope over all %d hours %+.3f ± %.3f MiB per hour "
      "(anon %+.3f), over the last %zu %+.3f ± %.3f; %d pods replaced in all\n",
      std::isnan(late.per_step) ? "too few hours to tell"
      : creeps                  ? "RSS CREEPS"
                                : "no creep",
      rss_mib.front(), last_n, last_rss, rise, hours >= 2 ? rise / (hours - 1) : 0.0, hours,
      all.per_step, all.std_error, anon.per_step, second_half.size(), late.per_step, late.std_error,
      hours * per_hour);
  env.StopDaemon();
}

}  // namespace
}  // namespace netqos::bench

int main(int argc, char** argv) {
  // --resync-only=N, --footprint-only=N, --churn=H and --idle-window=S are this bench's own
  // flags; the rest are every bench's.
  int resync_rounds = 0;
  int footprint_rounds = 0;
  int churn_hours = 0;
  std::chrono::seconds idle_window{0};
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    std::string value;
    if (i > 0 && netqos::bench::FlagValue(argv[i], "--resync-only", &value)) {
      resync_rounds = std::max(1, std::atoi(value.c_str()));
    } else if (i > 0 && netqos::bench::FlagValue(argv[i], "--footprint-only", &value)) {
      footprint_rounds = std::max(1, std::atoi(value.c_str()));
    } else if (i > 0 && netqos::bench::FlagValue(argv[i], "--churn", &value)) {
      churn_hours = std::atoi(value.c_str());
      if (churn_hours <= 0) churn_hours = 24;  // a day, the measure
    } else if (i > 0 && std::string(argv[i]) == "--churn") {
      churn_hours = 24;
    } else if (i > 0 && netqos::bench::FlagValue(argv[i], "--idle-window", &value)) {
      const int s = std::atoi(value.c_str());
      if (s < 1 || s > 3600 || value != std::to_string(s)) {
        std::fprintf(stderr,
                     "reaction_bench: --idle-window=%s is not a whole number of seconds "
                     "from 1 to 3600\n",
                     value.c_str());
        return 2;
      }
      idle_window = std::chrono::seconds(s);
    } else {
      rest.push_back(argv[i]);
    }
  }
  const auto args = netqos::bench::ParseArgs(
      static_cast<int>(rest.size()), rest.data(),
      "Reaction time, full resync and footprint of the enforcing netqosd (root).\n"
      "--resync-only=N: only the time to serve with 10,000 containers, N cold starts each "
      "followed by an adopting restart (medians printed, no report).\n"
      "--footprint-only=N: only the peak and idle RSS with 10,000 containers, N cold starts "
      "(printed run by run, no report).\n"
      "--churn=H: after that cold start, H simulated hours (24 by default) of 1,000 pods "
      "replaced per hour; RSS, RssAnon and VmHWM after each hour, and whether RSS creeps (no "
      "report).\n"
      "--idle-window=S: the idle window of those two in seconds (default 35: one periodic "
      "resync; 330 also holds a full resync).");
  if (int code = netqos::bench::CheckRoot("reaction_bench"); code >= 0) return code;
  return netqos::bench::RunMain("reaction_bench", [&] {
    if (churn_hours > 0) {
      netqos::bench::RunChurn(args, churn_hours, idle_window);
    } else if (footprint_rounds > 0) {
      netqos::bench::RunFootprintOnly(args, footprint_rounds, idle_window);
    } else if (resync_rounds > 0) {
      netqos::bench::RunResyncOnly(args, resync_rounds);
    } else {
      netqos::bench::Run(args);
    }
  });
}
