// What every benchmark shares: its command line (--quick, --out-dir, --work-dir, --tag), Ctrl-C
// handling that unwinds through the RAII fixtures (so netns, cgroups, mounts and processes are
// removed), percentiles, and the report: a markdown section plus rows for the targets table,
// printed as they are measured and written to --out-dir for scripts/bench.sh to assemble.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/privileges.h"

namespace netqos::bench {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// ---------------------------------------------------------------------------------------------
// Command line

struct Args {
  bool quick = false;    // small sizes and short windows: a smoke check of the harness
  std::string out_dir;   // where <name>.md and <name>.targets.md go ("" = stdout only)
  std::string work_dir;  // parent of every temp dir ("" = /tmp); scripts/bench.sh sweeps it
  std::string tag;       // prefix of netns, links and cgroups (<= 6 chars; default nqb<pid>)
};

// "--name=value" into *out; false if `arg` is not that flag.
inline bool FlagValue(const std::string& arg, const std::string& name, std::string* out) {
  const std::string prefix = name + "=";
  if (arg.rfind(prefix, 0) != 0) return false;
  *out = arg.substr(prefix.size());
  return true;
}

inline Args ParseArgs(int argc, char** argv, const char* usage) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      a.quick = true;
    } else if (!FlagValue(arg, "--out-dir", &a.out_dir) &&
               !FlagValue(arg, "--work-dir", &a.work_dir) && !FlagValue(arg, "--tag", &a.tag)) {
      std::cerr << "usage: " << argv[0] << " [--quick] [--out-dir=DIR] [--work-dir=DIR] [--tag=T]\n"
                << usage << "\n";
      std::exit(2);
    }
  }
  if (a.tag.empty()) a.tag = "nqb" + std::to_string(::getpid() % 1000);
  if (a.tag.size() > 6) a.tag.resize(6);  // names are <tag><2-4 chars>, within IFNAMSIZ
  if (a.work_dir.empty()) a.work_dir = "/tmp";
  return a;
}

// ---------------------------------------------------------------------------------------------
// Ctrl-C: the handler only sets a flag; loops call CheckInterrupted() (or SleepFor), which throws,
// so the fixtures' destructors run. Child processes get default handlers back at exec.

inline std::atomic<int>& InterruptSignal() {
  static std::atomic<int> sig{0};
  return sig;
}

struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted") {}
};

inline void InstallInterruptHandler() {
  struct sigaction sa {};
  sa.sa_handler = [](int sig) {
    if (InterruptSignal().exchange(sig) != 0) ::_exit(130);  // a second Ctrl-C: give up at once
  };
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
}

inline void CheckInterrupted() {
  if (InterruptSignal().load() != 0) throw Interrupted();
}

// Sleeps in slices of at most 50 ms so that Ctrl-C is noticed quickly.
inline void SleepFor(Clock::duration d) {
  const auto end = Clock::now() + d;
  while (Clock::now() < end) {
    CheckInterrupted();
    std::this_thread::sleep_for(std::min<Clock::duration>(50ms, end - Clock::now()));
  }
  CheckInterrupted();
}

// Runs `body` and maps the outcome to an exit code: 0, 130 (interrupted) or 1 (error).
template <typename F>
int RunMain(const char* name, F&& body) {
  InstallInterruptHandler();
  try {
    body();
    return 0;
  } catch (const Interrupted&) {
    std::fprintf(stderr, "%s: interrupted, cleaned up\n", name);
    return 130;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: FAILED: %s\n", name, e.what());
    return 1;
  }
}

// For the benchmarks that need root (BPF, netns, cgroups): -1 to run, else the exit code. Without
// the privileges: 77 (CTest's skip) locally, 1 under CI=true, as for the integration tests.
inline int CheckRoot(const char* name) {
  if (testing::HasIntegrationPrivileges()) return -1;
  const char* ci = std::getenv("CI");
  const bool in_ci = ci != nullptr && std::string(ci) == "true";
  std::fprintf(stderr, "%s: %s: needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN)\n", name,
               in_ci ? "FAILED" : "not run");
  return in_ci ? 1 : testing::kSkipExitCode;
}

// ---------------------------------------------------------------------------------------------
// Statistics

// Nearest-rank percentile (p in [0, 100]) of unsorted samples; NaN when there are none.
inline double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(v.size()));
  const size_t idx = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return v[std::min(idx, v.size() - 1)];
}
inline double Median(const std::vector<double>& v) { return Percentile(v, 50); }
inline double Mean(const std::vector<double>& v) {
  return v.empty() ? std::nan("")
                   : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

inline double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
inline double Micros(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

// ---------------------------------------------------------------------------------------------
// Formatting

inline std::string Fmt(double v, int decimals = 1) {
  if (std::isnan(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}
// 1234567 -> "1,234,567"
inline std::string Thousands(double v) {
  if (std::isnan(v)) return "n/a";
  std::string digits = std::to_string(static_cast<long long>(std::llround(v)));
  std::string out;
  int n = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (n > 0 && n % 3 == 0 && *it != '-') out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
    ++n;
  }
  return out;
}
// A latency in microseconds, with a unit that keeps 2-4 significant digits.
inline std::string Us(double us) {
  if (std::isnan(us)) return "n/a";
  if (us >= 10000) return Fmt(us / 1000, 0) + " ms";
  if (us >= 1000) return Fmt(us / 1000, 1) + " ms";
  return Fmt(us, us >= 100 ? 0 : 1) + " µs";
}
inline std::string Ratio(double r) { return std::isnan(r) ? "n/a" : Fmt(r, r >= 10 ? 0 : 2) + "×"; }

// ---------------------------------------------------------------------------------------------
// Report

class Report {
 public:
  Report(std::string name, const Args& args) : name_(std::move(name)), args_(args) {}
  ~Report() {
    try {
      Write();
    } catch (...) {
    }
  }
  Report(const Report&) = delete;
  Report& operator=(const Report&) = delete;

  // A markdown line (heading, paragraph, list item), echoed to stdout.
  void Line(const std::string& text = "") {
    md_ << text << "\n";
    std::printf("%s\n", text.c_str());
    std::fflush(stdout);
  }

  // A markdown table; rows may be added one at a time so that a long run shows progress.
  void TableHeader(const std::vector<std::string>& headers) {
    std::string sep;
    for (size_t i = 0; i < headers.size(); ++i) sep += "|---";
    Line("| " + Join(headers, " | ") + " |");
    Line(sep + "|");
  }
  void TableRow(const std::vector<std::string>& cells) { Line("| " + Join(cells, " | ") + " |"); }

  // A row of the summary table at the top of docs/benchmarks.md.
  void Target(const std::string& target, const std::string& measured, bool met,
              const std::string& note = "") {
    targets_ << "| " << target << " | " << measured << " | " << (met ? "met" : "**not met**")
             << " | " << note << " |\n";
    std::printf("TARGET %s: %s -> %s %s\n", target.c_str(), measured.c_str(),
                met ? "met" : "NOT MET", note.c_str());
  }

  // A headline figure the issue sets no target for, in the same summary table.
  void Figure(const std::string& what, const std::string& measured, const std::string& note = "") {
    targets_ << "| " << what << " | " << measured << " | no target | " << note << " |\n";
    std::printf("FIGURE %s: %s %s\n", what.c_str(), measured.c_str(), note.c_str());
  }

  // Writes <out_dir>/<name>.md and <name>.targets.md (also called by the destructor, so an
  // interrupted run keeps what it measured).
  void Write() {
    if (args_.out_dir.empty()) return;
    std::ofstream(args_.out_dir + "/" + name_ + ".md") << md_.str();
    std::ofstream(args_.out_dir + "/" + name_ + ".targets.md") << targets_.str();
  }

 private:
  static std::string Join(const std::vector<std::string>& v, const std::string& sep) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
    return out;
  }

  std::string name_;
  Args args_;
  std::ostringstream md_;
  std::ostringstream targets_;
};

// ---------------------------------------------------------------------------------------------
// /proc readers for a process: resident memory and CPU time.

inline long PageSize() { return ::sysconf(_SC_PAGESIZE); }

// A "<field>: <n> kB" line of /proc/<pid>/status in KiB (VmRSS, VmHWM: the peak RSS, RssAnon);
// -1 if the process is gone.
inline long StatusKiB(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  const std::string prefix = field + ":";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) return std::stol(line.substr(prefix.size()));
  }
  return -1;
}

// VmRSS in KiB; -1 if the process is gone.
inline long RssKiB(pid_t pid) { return StatusKiB(pid, "VmRSS"); }

// utime + stime of the process (all threads), in seconds.
inline double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return std::nan("");
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  // Fields after the command: state(3) ... utime(14) stime(15); rest starts at field 3.
  double utime = 0, stime = 0;
  for (int f = 3; f <= 15 && rest >> field; ++f) {
    if (f == 14) utime = std::stod(field);
    if (f == 15) stime = std::stod(field);
  }
  return (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

}  // namespace netqos::bench
