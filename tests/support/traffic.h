// Real traffic for integration tests: iperf3 servers and clients placed in a network namespace
// and/or a cgroup, byte counters of HTB classes (tc) and of links (/proc/net/dev), on the host or
// inside a named namespace, and WireRate, which turns two samples of such counters into Mbit/s.
// Every process started here is SIGKILLed and reaped on scope exit (and dies with the test
// process: PR_SET_PDEATHSIG). Namespaces are entered with setns(2), as `nsenter --net` does,
// never with `ip netns exec`, which remounts /sys and hides the cgroup and bpf mounts.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace netqos::testing {

using TrafficClock = std::chrono::steady_clock;

inline std::string NetnsPath(const std::string& ns) { return "/var/run/netns/" + ns; }

// Command prefix that runs a command in namespace `ns` ("" = here) without remounting /sys.
inline std::string InNetns(const std::string& ns) {
  return ns.empty() ? std::string() : "nsenter --net=" + NetnsPath(ns) + " ";
}

// stdout of a shell command (stderr discarded); "" if it cannot run.
inline std::string CaptureOutput(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>/dev/null").c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

// ---------------------------------------------------------------------------------------------
// HTB class statistics

struct TcClass {
  std::string parent;  // "root" for a class directly under the qdisc
  uint32_t prio = 0;
  uint64_t rate_bits = 0;
  uint64_t ceil_bits = 0;
  uint64_t burst_bytes = 0;  // as tc rounds it for printing ("126600b", "1222Kb")
  uint64_t cburst_bytes = 0;
  // qdisc accounting: a GSO packet counts as its segments, each with its own headers, i.e. the
  // bytes on the wire without preamble and FCS.
  uint64_t sent_bytes = 0;
  uint64_t sent_packets = 0;
  uint64_t dropped = 0;  // "(dropped N, overlimits M requeues R)"
  uint64_t overlimits = 0;
  uint64_t backlog_bytes = 0;  // "backlog Xb Yp" (tc prints large values as "12Kb")
  uint64_t backlog_packets = 0;
};

// "100Mbit" → 100000000; throws on anything else.
inline uint64_t ParseTcRate(const std::string& text) {
  static const std::regex re("^([0-9]+)([KMGT]?)bit$");
  std::smatch m;
  if (!std::regex_match(text, m, re)) throw std::runtime_error("unparsed tc rate " + text);
  const uint64_t v = std::stoull(m[1]);
  const std::string unit = m[2];
  const uint64_t mult = unit == "K"   ? 1000ull
                        : unit == "M" ? 1000000ull
                        : unit == "G" ? 1000000000ull
                        : unit == "T" ? 1000000000000ull
                                      : 1ull;
  return v * mult;
}

// "1600b" → 1600, "1222Kb" → 1251328, "2Mb" → 2097152 (tc prints sizes in binary units).
inline uint64_t ParseTcSize(const std::string& text) {
  static const std::regex re("^([0-9.]+)([KMG]?)b$");
  std::smatch m;
  if (!std::regex_match(text, m, re)) throw std::runtime_error("unparsed tc size " + text);
  const std::string unit = m[2];
  const double mult = unit == "K"   ? 1024.0
                      : unit == "M" ? 1048576.0
                      : unit == "G" ? 1073741824.0
                                    : 1.0;
  return static_cast<uint64_t>(std::stod(m[1]) * mult);
}

// Parses `tc -s class show` text. iproute2 6.1 prints htb classes as text even with -j, so the
// text is the stable interface.
inline std::map<std::string, TcClass> ParseTcClasses(const std::string& text) {
  std::map<std::string, TcClass> out;
  std::istringstream in(text);
  std::string line;
  TcClass* cur = nullptr;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string w;
    words >> w;
    if (w == "class") {
      std::string kind, handle;
      words >> kind >> handle;
      cur = &out[handle];
      while (words >> w) {
        std::string v;
        if (w == "root") {
          cur->parent = "root";
        } else if (w == "parent" && words >> v) {
          cur->parent = v;
        } else if (w == "prio" && words >> v) {
          cur->prio = static_cast<uint32_t>(std::stoul(v));
        } else if (w == "rate" && words >> v) {
          cur->rate_bits = ParseTcRate(v);
        } else if (w == "ceil" && words >> v) {
          cur->ceil_bits = ParseTcRate(v);
        } else if (w == "burst" && words >> v) {
          cur->burst_bytes = ParseTcSize(v);
        } else if (w == "cburst" && words >> v) {
          cur->cburst_bytes = ParseTcSize(v);
        }
      }
    } else if (w == "Sent" && cur != nullptr) {
      std::string unit;  // "Sent 123 bytes 4 pkt (dropped 5, overlimits 6 requeues 0)"
      words >> cur->sent_bytes >> unit >> cur->sent_packets >> unit;
      std::string label, value;
      while (words >> label >> value) {
        if (label == "(dropped") cur->dropped = std::stoull(value);
        if (label == "overlimits") cur->overlimits = std::stoull(value);
      }
    } else if (w == "backlog" && cur != nullptr) {
      std::string bytes, packets;  // "backlog 1514b 1p requeues 0"
      words >> bytes >> packets;
      cur->backlog_bytes = ParseTcSize(bytes);
      if (!packets.empty() && packets.back() == 'p') {
        cur->backlog_packets = std::stoull(packets.substr(0, packets.size() - 1));
      }
    }
  }
  return out;
}

// The classes on `dev` in namespace `netns` ("" = the caller's), keyed by handle ("10:100").
inline std::map<std::string, TcClass> TcClasses(const std::string& dev,
                                                const std::string& netns = "") {
  return ParseTcClasses(CaptureOutput(InNetns(netns) + "tc -s class show dev " + dev));
}

// ---------------------------------------------------------------------------------------------
// Link counters

struct LinkCounters {
  // As the driver counts them: veth adds skb->len per skb, so a GSO packet's headers count once.
  uint64_t rx_bytes = 0;
  uint64_t rx_packets = 0;
  uint64_t tx_bytes = 0;
  uint64_t tx_packets = 0;
};

// Parses /proc/net/dev; throws if `dev` is not listed.
inline LinkCounters ParseProcNetDev(const std::string& text, const std::string& dev) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name != dev) continue;
    std::istringstream nums(line.substr(colon + 1));
    uint64_t f[10] = {};
    for (uint64_t& v : f) nums >> v;  // rx: bytes packets errs drop fifo frame compr mcast; tx: ...
    if (!nums) throw std::runtime_error("unparsed /proc/net/dev line: " + line);
    return {f[0], f[1], f[8], f[9]};
  }
  throw std::runtime_error("no device " + dev + " in /proc/net/dev");
}

// Counters of `dev` in namespace `netns` ("" = the calling thread's). A namespace is entered by
// a short-lived thread, which reads /proc/thread-self/net/dev there: no process, no /sys mount.
inline LinkCounters ReadLinkCounters(const std::string& netns, const std::string& dev) {
  auto read_here = [] {
    std::ifstream in("/proc/thread-self/net/dev");
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  if (netns.empty()) return ParseProcNetDev(read_here(), dev);
  std::string text, error;
  std::thread t([&] {
    const int fd = ::open(NetnsPath(netns).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) {
      error = "enter netns " + netns + ": " + std::strerror(errno);
      if (fd >= 0) ::close(fd);
      return;
    }
    ::close(fd);
    text = read_here();
  });
  t.join();
  if (!error.empty()) throw std::runtime_error(error);
  return ParseProcNetDev(text, dev);
}

// ---------------------------------------------------------------------------------------------
// Processes in a cgroup and/or a namespace

// The absolute path of `name` on $PATH (exec after fork must not search PATH: it allocates).
inline std::string FindProgram(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  for (const char* d : {"/usr/sbin", "/sbin"}) {
    const std::string candidate = std::string(d) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  throw std::runtime_error(name + " not found on PATH (apt-get install -y " + name + ")");
}

// An anonymous in-memory file that collects a child's output.
class OutputCapture {
 public:
  OutputCapture() : fd_(::memfd_create("netqos-test-output", MFD_CLOEXEC)) {
    if (fd_ < 0) throw std::runtime_error(std::string("memfd_create: ") + std::strerror(errno));
  }
  ~OutputCapture() { ::close(fd_); }
  OutputCapture(const OutputCapture&) = delete;
  OutputCapture& operator=(const OutputCapture&) = delete;
  int fd() const { return fd_; }
  std::string Read() const {
    std::string out;
    char buf[8192];
    off_t off = 0;
    ssize_t n;
    while ((n = ::pread(fd_, buf, sizeof(buf), off)) > 0) {
      out.append(buf, static_cast<size_t>(n));
      off += n;
    }
    return out;
  }

 private:
  int fd_;
};

// Exit codes of a child that failed before exec.
inline constexpr int kSpawnCgroupFailed = 125;
inline constexpr int kSpawnNetnsFailed = 126;
inline constexpr int kSpawnExecFailed = 127;

struct SpawnOptions {
  std::string cgroup;  // cgroup v2 directory to join before exec ("" = stay in the caller's)
  std::string netns;   // named namespace to enter after joining the cgroup ("" = stay)
  int stdout_fd = -1;  // -1 = /dev/null
  int stderr_fd = -1;
};

// fork + exec of argv (argv[0] an absolute path). The child joins the cgroup by writing its own
// pid ("0") to cgroup.procs, then enters the namespace, so everything it does, from its first
// packet on, is accounted to the cgroup. Only async-signal-safe calls happen after fork.
inline pid_t SpawnIn(const std::vector<std::string>& argv, const SpawnOptions& options) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::string procs = options.cgroup.empty() ? "" : options.cgroup + "/cgroup.procs";
  const std::string ns = options.netns.empty() ? "" : NetnsPath(options.netns);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid > 0) return pid;
  // Child.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(kSpawnExecFailed);  // the parent died already
  if (!procs.empty()) {
    const int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || ::write(fd, "0", 1) != 1) ::_exit(kSpawnCgroupFailed);
    ::close(fd);
  }
  if (!ns.empty()) {
    const int fd = ::open(ns.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) ::_exit(kSpawnNetnsFailed);
    ::close(fd);
  }
  const int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  ::dup2(devnull, 0);
  ::dup2(options.stdout_fd >= 0 ? options.stdout_fd : devnull, 1);
  ::dup2(options.stderr_fd >= 0 ? options.stderr_fd : devnull, 2);
  ::execv(args[0], args.data());
  ::_exit(kSpawnExecFailed);
}

// SIGKILL + reap; no-op for pid <= 0.
inline void KillAndReap(pid_t pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

inline std::string DescribeExit(int status) {
  if (WIFEXITED(status)) {
    switch (WEXITSTATUS(status)) {
      case kSpawnCgroupFailed:
        return "could not join its cgroup (exit 125)";
      case kSpawnNetnsFailed:
        return "could not enter its netns (exit 126)";
      case kSpawnExecFailed:
        return "could not exec (exit 127)";
      default:
        return "exit " + std::to_string(WEXITSTATUS(status));
    }
  }
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

// ---------------------------------------------------------------------------------------------
// iperf3

// Whether pid's network namespace has a TCP socket listening on `port` (IPv4 or IPv6).
inline bool ListensOn(pid_t pid, uint16_t port) {
  char want[8];
  std::snprintf(want, sizeof(want), ":%04X", port);
  for (const char* table : {"tcp", "tcp6"}) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/net/" + table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, state;
      f >> sl >> local >> remote >> state;
      if (state == "0A" && local.size() > 5 && local.compare(local.size() - 5, 5, want) == 0) {
        return true;
      }
    }
  }
  return false;
}

// `iperf3 -s` on bind_ip:port inside netns ("" = host), in a cgroup. The constructor
// returns once the server listens (throws with its output otherwise). One test at a time per
// server, as iperf3 serves them; it stays up for the next one until scope exit.
class Iperf3Server {
 public:
  // `cgroup`: joined before the namespace is entered ("" = the caller's).
  Iperf3Server(std::string netns, std::string bind_ip, uint16_t port,
               const std::string& cgroup = "")
      : netns_(std::move(netns)), port_(port) {
    const std::string bin = FindProgram("iperf3");
    pid_ = SpawnIn(
        {bin, "-s", "-B", bind_ip, "-p", std::to_string(port)},
        {.cgroup = cgroup, .netns = netns_, .stdout_fd = out_.fd(), .stderr_fd = out_.fd()});
    const auto deadline = TrafficClock::now() + std::chrono::seconds(5);
    while (TrafficClock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("iperf3 server on " + bind_ip + ":" + std::to_string(port) +
                                 " (netns '" + netns_ + "') ended: " + DescribeExit(status) + ": " +
                                 out_.Read());
      }
      // /proc/<pid>/net shows the server's namespace once it has exec'd (setns comes before).
      char exe[256] = {};
      const ssize_t n =
          ::readlink(("/proc/" + std::to_string(pid_) + "/exe").c_str(), exe, sizeof(exe) - 1);
      if (n > 0 && bin == exe && ListensOn(pid_, port)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    KillAndReap(pid_);
    pid_ = -1;
    throw std::runtime_error("iperf3 server on port " + std::to_string(port) +
                             " did not listen within 5 s: " + out_.Read());
  }
  ~Iperf3Server() { KillAndReap(pid_); }
  Iperf3Server(const Iperf3Server&) = delete;
  Iperf3Server& operator=(const Iperf3Server&) = delete;

  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string Output() const { return out_.Read(); }

 private:
  OutputCapture out_;
  std::string netns_;
  uint16_t port_;
  pid_t pid_ = -1;
};

struct Iperf3ClientOptions {
  std::string server_ip;
  uint16_t port = 0;
  int seconds = 4;       // -t
  bool reverse = false;  // -R: the server sends, this client receives
  std::string cgroup;    // joined before exec, so every packet is the cgroup's
  std::string netns;     // entered after joining the cgroup ("" = host)
  std::vector<std::string> extra_args;
};

// What iperf3 -J reports at the end. sender_* is the sending side (the server with -R),
// receiver_* the receiving side; bytes are TCP payload.
struct Iperf3Result {
  std::string error;  // iperf3's "error" or why there is no result; "" on success
  uint64_t sender_bytes = 0;
  uint64_t receiver_bytes = 0;
  double sender_bps = 0;
  double receiver_bps = 0;
  int64_t retransmits = 0;
  double seconds = 0;  // the sender's measured duration
  std::string output;  // raw JSON (and stderr) for diagnostics

  bool ok() const { return error.empty(); }
  double SenderMbps() const { return sender_bps / 1e6; }
  double ReceiverMbps() const { return receiver_bps / 1e6; }
};

inline Iperf3Result ParseIperf3Json(const std::string& text) {
  Iperf3Result r;
  r.output = text;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    r.error = "iperf3 output is not JSON";
    return r;
  }
  if (j.contains("error")) {
    r.error = "iperf3: " + j["error"].get<std::string>();
    return r;
  }
  try {
    const auto& sent = j.at("end").at("sum_sent");
    const auto& received = j.at("end").at("sum_received");
    r.sender_bytes = sent.at("bytes").get<uint64_t>();
    r.sender_bps = sent.at("bits_per_second").get<double>();
    r.seconds = sent.at("seconds").get<double>();
    r.retransmits = sent.value("retransmits", int64_t{0});
    r.receiver_bytes = received.at("bytes").get<uint64_t>();
    r.receiver_bps = received.at("bits_per_second").get<double>();
  } catch (const std::exception& e) {
    r.error = std::string("iperf3 JSON without end.sum_sent/sum_received: ") + e.what();
  }
  return r;
}

// One `iperf3 -c ... -J` run, started by the constructor in the given cgroup and namespace.
class Iperf3Client {
 public:
  explicit Iperf3Client(const Iperf3ClientOptions& o) : seconds_(o.seconds) {
    std::vector<std::string> argv = {
        FindProgram("iperf3"),     "-c", o.server_ip,         "-p",  std::to_string(o.port), "-t",
        std::to_string(o.seconds), "-J", "--connect-timeout", "3000"};
    if (o.reverse) argv.push_back("-R");
    argv.insert(argv.end(), o.extra_args.begin(), o.extra_args.end());
    started_ = TrafficClock::now();
    pid_ = SpawnIn(
        argv,
        {.cgroup = o.cgroup, .netns = o.netns, .stdout_fd = out_.fd(), .stderr_fd = err_.fd()});
  }
  ~Iperf3Client() { KillAndReap(pid_); }
  Iperf3Client(const Iperf3Client&) = delete;
  Iperf3Client& operator=(const Iperf3Client&) = delete;

  pid_t pid() const { return pid_; }
  TrafficClock::time_point started() const { return started_; }

  // Waits for the run to end (killed after its duration + 15 s) and parses the report.
  Iperf3Result Wait() {
    const auto deadline = started_ + std::chrono::seconds(seconds_ + 15);
    int status = 0;
    while (pid_ > 0) {
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        break;
      }
      if (TrafficClock::now() > deadline) {
        KillAndReap(pid_);
        pid_ = -1;
        Iperf3Result timeout;
        timeout.error = "iperf3 client timed out";
        timeout.output = out_.Read() + err_.Read();
        return timeout;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    Iperf3Result r = ParseIperf3Json(out_.Read());
    if (r.ok() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      r.error = "iperf3 client: " + DescribeExit(status);
    } else if (!r.ok()) {
      r.error += " (" + DescribeExit(status) + ")";
    }
    if (!r.ok()) r.output += err_.Read();
    return r;
  }

 private:
  OutputCapture out_;
  OutputCapture err_;
  int seconds_;
  TrafficClock::time_point started_;
  pid_t pid_ = -1;
};

// ---------------------------------------------------------------------------------------------
// WireRate

// The change of one counter between two samples.
struct RateDelta {
  double seconds = 0;
  uint64_t bytes = 0;
  uint64_t packets = 0;
  double Mbps() const { return seconds > 0 ? static_cast<double>(bytes) * 8 / seconds / 1e6 : 0; }
};

enum class LinkDirection { kRx, kTx };

// Samples byte counters twice and reports each one's rate over its own interval (the midpoints
// of the two reads, so the cost of a `tc` call does not bias the rate). All classes of one device
// are read by one `tc` call, all links of one namespace by one read of /proc/net/dev.
//
//   WireRate w;
//   w.HtbClass("a", "", "veth0", "10:100").Link("peer", "ns1", "veth1", LinkDirection::kRx);
//   std::this_thread::sleep_for(warm_up);
//   w.Measure(std::chrono::seconds(3));
//   double mbit = w.Mbps("a");
class WireRate {
 public:
  // Bytes sent by HTB class `classid` ("10:100") of `dev` in `netns` ("" = host): wire bytes,
  // see TcClass::sent_bytes.
  WireRate& HtbClass(const std::string& name, const std::string& netns, const std::string& dev,
                     const std::string& classid) {
    sources_[name] = {true, netns, dev, classid, LinkDirection::kRx};
    return *this;
  }
  // rx or tx bytes of a link as its driver counts them, see LinkCounters.
  WireRate& Link(const std::string& name, const std::string& netns, const std::string& dev,
                 LinkDirection dir) {
    sources_[name] = {false, netns, dev, "", dir};
    return *this;
  }

  void Start() { first_ = SampleAll(); }
  void Stop() { second_ = SampleAll(); }
  void Measure(TrafficClock::duration window) {
    Start();
    std::this_thread::sleep_for(window);
    Stop();
  }

  RateDelta Get(const std::string& name) const {
    auto a = first_.find(name);
    auto b = second_.find(name);
    if (a == first_.end() || b == second_.end()) {
      throw std::runtime_error("WireRate: no two samples of " + name);
    }
    RateDelta d;
    d.seconds = std::chrono::duration<double>(b->second.t - a->second.t).count();
    d.bytes = b->second.bytes - a->second.bytes;
    d.packets = b->second.packets - a->second.packets;
    return d;
  }
  double Mbps(const std::string& name) const { return Get(name).Mbps(); }

 private:
  struct Source {
    bool htb = false;
    std::string netns, dev, classid;
    LinkDirection dir = LinkDirection::kRx;
  };
  struct Sample {
    TrafficClock::time_point t;
    uint64_t bytes = 0;
    uint64_t packets = 0;
  };

  static TrafficClock::time_point Mid(TrafficClock::time_point a, TrafficClock::time_point b) {
    return a + (b - a) / 2;
  }

  std::map<std::string, Sample> SampleAll() const {
    std::map<std::string, std::pair<TrafficClock::time_point, std::map<std::string, TcClass>>> tc;
    std::map<std::string, Sample> out;
    for (const auto& [name, s] : sources_) {
      Sample sample;
      if (s.htb) {
        const std::string key = s.netns + "/" + s.dev;
        if (tc.count(key) == 0) {
          const auto a = TrafficClock::now();
          auto classes = TcClasses(s.dev, s.netns);
          tc[key] = {Mid(a, TrafficClock::now()), std::move(classes)};
        }
        const auto& [t, classes] = tc.at(key);
        auto it = classes.find(s.classid);
        if (it == classes.end()) {
          throw std::runtime_error("WireRate: no class " + s.classid + " on " + key);
        }
        sample = {t, it->second.sent_bytes, it->second.sent_packets};
      } else {
        const auto a = TrafficClock::now();
        const LinkCounters c = ReadLinkCounters(s.netns, s.dev);
        const auto t = Mid(a, TrafficClock::now());
        sample = s.dir == LinkDirection::kRx ? Sample{t, c.rx_bytes, c.rx_packets}
                                             : Sample{t, c.tx_bytes, c.tx_packets};
      }
      out[name] = sample;
    }
    return out;
  }

  std::map<std::string, Source> sources_;
  std::map<std::string, Sample> first_;
  std::map<std::string, Sample> second_;
};

}  // namespace netqos::testing
