// The cgroup watcher alone, on a directory tree shaped like a kubelet's cgroups
// (kubepods/burstable/pod<uid>/<64-hex container id>): the live heap it holds per watched
// directory (glibc's mallinfo2, in-use bytes after Start minus before) and how long Start takes
// (one inotify watch and one directory listing per directory); then how long the watcher takes to
// report pods moved out of the tree (each a subtree of two directories taken out of a parent with
// all the other pods: the cost of a removal at this size). No privileges: plain directories
// behave as cgroup directories do for inotify. Compare builds by running each build's binary on
// the same machine in turn; the figures here are this build's.
#include <malloc.h>
#include <sys/resource.h>

#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "bench_support.h"
#include "cgroup/fs/cgroup_watcher.h"

namespace netqos::bench {
namespace {

// 10,000 pods of one container each: 20,000 watched directories below kubepods/burstable.
std::string MakeTree(const std::string& base, int pods) {
  const std::string root = base + "/kubepods";
  for (int p = 0; p < pods; ++p) {
    CheckInterrupted();
    char pod[64], ctr[80];
    const unsigned u = static_cast<unsigned>(p);
    std::snprintf(pod, sizeof(pod), "pod%08x-1b2c-4d3e-8f40-%012x", u, u * 7919u);
    std::snprintf(ctr, sizeof(ctr), "%016x%016x%016x%016x", u, u * 31u, u * 131u, u * 524287u);
    std::filesystem::create_directories(root + "/burstable/" + pod + "/" + ctr);
  }
  return root;
}

size_t HeapInUse() { return mallinfo2().uordblks; }

// CPU time of the calling thread (user + system), in ms: on a shared machine steadier than the
// wall clock. Start lists and watches the tree on the calling thread.
double ThreadCpuMs() {
  rusage ru{};
  ::getrusage(RUSAGE_THREAD, &ru);
  const auto ms = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) * 1000 + static_cast<double>(tv.tv_usec) / 1000;
  };
  return ms(ru.ru_utime) + ms(ru.ru_stime);
}

struct Sample {
  double bytes_per_dir;
  double start_ms;
  double start_cpu_ms;
};

Sample MeasureOnce(const std::string& root, int dirs) {
  cgroup::CgroupWatcherCallbacks cb;
  cb.on_error = [](const Status& s) {
    std::fprintf(stderr, "watcher error: %s\n", s.message().c_str());
  };
  malloc_trim(0);
  const size_t before = HeapInUse();
  const double cpu0 = ThreadCpuMs();
  const auto t0 = Clock::now();
  auto w = cgroup::CgroupWatcher::Start(root, cb);
  const auto t1 = Clock::now();
  const double cpu1 = ThreadCpuMs();
  if (!w.ok()) throw std::runtime_error("CgroupWatcher::Start: " + w.status().message());
  const size_t after = HeapInUse();
  (*w)->Stop();
  return {static_cast<double>(after - before) / dirs, Seconds(t1 - t0) * 1000, cpu1 - cpu0};
}

// Moves `moved` pods out of the watched tree, one rename each, and waits until the watcher has
// reported their 2 * `moved` directories removed; puts them back after. Microseconds per pod,
// from the first rename to the last report.
double MeasureMoves(const std::string& base, const std::string& root, int moved) {
  std::mutex mu;
  std::condition_variable cv;
  int removed = 0;
  cgroup::CgroupWatcherCallbacks cb;
  cb.on_removed = [&](const std::string&) {
    std::lock_guard<std::mutex> l(mu);
    ++removed;
    cv.notify_all();
  };
  auto w = cgroup::CgroupWatcher::Start(root, cb);
  if (!w.ok()) throw std::runtime_error("CgroupWatcher::Start: " + w.status().message());
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(root + "/burstable")) {
    if (static_cast<int>(names.size()) == moved) break;
    names.push_back(e.path().filename());
  }
  const std::string away = base + "/away";
  std::filesystem::create_directory(away);
  const auto t0 = Clock::now();
  for (const auto& n : names) std::filesystem::rename(root + "/burstable/" + n, away + "/" + n);
  bool all = false;
  {
    std::unique_lock<std::mutex> l(mu);
    all = cv.wait_for(l, 60s, [&] { return removed >= 2 * static_cast<int>(names.size()); });
  }
  const auto t1 = Clock::now();
  (*w)->Stop();
  for (const auto& n : names) std::filesystem::rename(away + "/" + n, root + "/burstable/" + n);
  if (!all) throw std::runtime_error("moved pods not all reported removed within 60 s");
  return Micros(t1 - t0) / static_cast<double>(names.size());
}

void Run(const Args& args) {
  Report report("cgroup_watcher", args);
  const int pods = args.quick ? 1000 : 10000;
  const int runs = args.quick ? 2 : 5;
  char tmpl[4096];
  std::snprintf(tmpl, sizeof(tmpl), "%s/netqos-watcher.XXXXXX", args.work_dir.c_str());
  if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error(std::string("mkdtemp ") + tmpl);
  const std::string base = tmpl;
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{base};
  const std::string root = MakeTree(base, pods);
  const int dirs = 2 * pods + 1;  // pods, containers, burstable (the root is not counted)

  report.Line("### Cgroup watcher: heap and start time");
  report.Line();
  report.Line("`netqos_bench_cgroup_watcher`: CgroupWatcher::Start on " + Thousands(pods) +
              " pods of one container each (" + Thousands(dirs) + " directories below the root), " +
              std::to_string(runs) + " starts.");
  report.Line();
  report.TableHeader({"run", "heap per directory", "start", "start, CPU"});
  std::vector<double> bytes, ms, cpu_ms;
  for (int i = 0; i < runs; ++i) {
    const Sample s = MeasureOnce(root, dirs);
    bytes.push_back(s.bytes_per_dir);
    ms.push_back(s.start_ms);
    cpu_ms.push_back(s.start_cpu_ms);
    report.TableRow({std::to_string(i + 1), Fmt(s.bytes_per_dir, 0) + " bytes",
                     Fmt(s.start_ms, 1) + " ms", Fmt(s.start_cpu_ms, 1) + " ms"});
  }
  report.Line();
  report.Line("Median: " + Fmt(Median(bytes), 0) + " bytes per directory, start " +
              Fmt(Median(ms), 1) + " ms (CPU " + Fmt(Median(cpu_ms), 1) + " ms).");
  report.Figure("cgroup watcher heap per watched directory", Fmt(Median(bytes), 0) + " bytes",
                Thousands(dirs) + " directories");

  const int moved = pods / 10;
  std::vector<double> us;
  for (int i = 0; i < runs; ++i) us.push_back(MeasureMoves(base, root, moved));
  report.Line();
  report.Line(std::to_string(moved) + " pods moved out of the " + std::to_string(pods) +
              ", one rename each, until all their directories were reported removed: median " +
              Fmt(Median(us), 1) + " µs per pod (" + std::to_string(runs) + " runs, " +
              Fmt(*std::min_element(us.begin(), us.end()), 1) + " to " +
              Fmt(*std::max_element(us.begin(), us.end()), 1) + ").");
}

}  // namespace
}  // namespace netqos::bench

int main(int argc, char** argv) {
  const auto args =
      netqos::bench::ParseArgs(argc, argv, "The cgroup watcher's heap and start time.");
  return netqos::bench::RunMain("netqos_bench_cgroup_watcher", [&] { netqos::bench::Run(args); });
}
