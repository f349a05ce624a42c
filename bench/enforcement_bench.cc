// Enforcement accuracy and latency, with the real netqosd shaping a veth into a network namespace:
//  1. Wire rate vs cap: 1, 10 and 50 containers (cgroups, each allocated the same cap through the
//     plugin socket) send bulk TCP at once; each one's rate is read from its HTB leaf's byte
//     counter. The baseline is what the same number of uncapped senders got through the machine
//     in the same run: when the caps add up to more, the senders, not netqos, are the limit.
//  2. Latency next to a capped bulk flow: a small TCP request/response (64 bytes, 100 per second)
//     from a second container while the first one pushes bulk TCP at its cap; p50/p99 round trip
//     with netqos (each container its own HTB leaf), with the CNI bandwidth plugin's mechanism at
//     the same cap (one TBF on the device, latency 25 ms), and with nothing shaping.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <atomic>
#include <fstream>
#include <future>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.h"
#include "enforcement_env.h"

namespace netqos::bench {
namespace {

constexpr int kSpeed = 100000;  // Mbit/s the veth counts as: room for 50 x 1000
constexpr uint16_t kBasePort = 15300;

// --------------------------------------------------------------------------------------------
// 1. Accuracy

struct Cell {
  int containers = 0;
  int cap = 0;
  std::vector<double> mbps;  // per container, on its leaf
};

// N containers of a new round: pods listed, cgroups created, allocations made, leaves awaited.
struct Round {
  std::vector<BenchPod> pods;
  std::vector<std::string> cgroups;
  std::vector<uint32_t> leaves;
};

Round SetUpRound(EnforcementEnv& env, int round, int n, int cap) {
  Round r;
  for (int i = 0; i < n; ++i) r.pods.push_back(MakeBenchPod(round, i));
  env.pods = r.pods;
  env.WritePods();
  for (const auto& p : r.pods) r.cgroups.push_back(env.MakeCgroup(p));
  if (cap > 0) {
    for (const auto& p : r.pods) env.Allocate(p, cap);
    for (const auto& cg : r.cgroups) {
      const uint32_t leaf = env.WaitLeaf(cg, 20s);
      if (leaf == 0) throw std::runtime_error("container " + cg + " got no leaf");
      r.leaves.push_back(leaf);
    }
  }
  return r;
}

void TearDownRound(EnforcementEnv& env, Round& r) {
  if (env.Running()) {
    for (const auto& p : r.pods) env.RemovePod(p);
  }
  for (const auto& p : r.pods) env.RemoveCgroup(p);
  env.pods.clear();
  env.WritePods();
}

// False once the process has exited (a zombie counts as exited).
bool Alive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(") ");
  return close != std::string::npos && text[close + 2] != 'Z';
}

testing::Iperf3ClientOptions BulkClient(const EnforcementEnv& env, const std::string& cgroup,
                                        uint16_t port, int seconds) {
  return {.server_ip = env.peer_ip(),
          .port = port,
          .seconds = seconds,
          .reverse = false,
          .cgroup = cgroup,
          .netns = "",
          .extra_args = {}};
}

// Starts the clients; one whose server is still winding down the previous (killed) test is
// refused at once ("the server is busy"), so the ones that ended are started again.
std::vector<std::unique_ptr<testing::Iperf3Client>> StartClients(
    const std::vector<testing::Iperf3ClientOptions>& options) {
  std::vector<std::unique_ptr<testing::Iperf3Client>> clients;
  for (const auto& o : options) clients.push_back(std::make_unique<testing::Iperf3Client>(o));
  for (int attempt = 0; attempt < 5; ++attempt) {
    SleepFor(400ms);
    bool restarted = false;
    for (size_t i = 0; i < clients.size(); ++i) {
      if (Alive(clients[i]->pid())) continue;
      clients[i] = std::make_unique<testing::Iperf3Client>(options[i]);
      restarted = true;
    }
    if (!restarted) return clients;
  }
  throw std::runtime_error("iperf3 clients keep failing to start");
}

// Bulk TCP from every cgroup at once to its own server; the per-sender rates on their HTB
// leaves (0 without leaves) over `window` after `warm_up`, then what the namespace received.
std::vector<double> RunFlows(EnforcementEnv& env, const std::vector<std::string>& cgroups,
                             const std::vector<uint32_t>& leaves, Clock::duration warm_up,
                             Clock::duration window) {
  const int seconds = static_cast<int>(Seconds(warm_up + window)) + 4;
  std::vector<testing::Iperf3ClientOptions> options;
  testing::WireRate w;
  for (size_t i = 0; i < cgroups.size(); ++i) {
    options.push_back(BulkClient(env, cgroups[i], static_cast<uint16_t>(kBasePort + i), seconds));
    if (!leaves.empty()) w.HtbClass(std::to_string(i), "", env.host_if(), TcHandleText(leaves[i]));
  }
  w.Link("veth", env.ns(), env.peer_if(), testing::LinkDirection::kRx);
  auto clients = StartClients(options);
  SleepFor(warm_up);
  w.Start();
  SleepFor(window);
  w.Stop();
  std::vector<double> out;
  for (size_t i = 0; i < cgroups.size(); ++i) {
    out.push_back(leaves.empty() ? 0 : w.Mbps(std::to_string(i)));
  }
  out.push_back(w.Mbps("veth"));  // last: everything the namespace received
  clients.clear();                // SIGKILL: the measurement is over
  return out;
}

void Accuracy(const Args& args, EnforcementEnv& env, Report& rep) {
  const std::vector<int> counts =
      args.quick ? std::vector<int>{1, 10} : std::vector<int>{1, 10, 50};
  const std::vector<int> caps =
      args.quick ? std::vector<int>{10, 100} : std::vector<int>{10, 50, 100, 500, 1000};
  const auto warm_up = args.quick ? 1s : 1500ms;
  const auto window = args.quick ? 1s : 3s;

  std::vector<std::unique_ptr<testing::Iperf3Server>> servers;
  for (int i = 0; i < counts.back(); ++i) {
    servers.push_back(std::make_unique<testing::Iperf3Server>(
        env.ns(), env.peer_ip(), static_cast<uint16_t>(kBasePort + i)));
  }

  int round = 100;
  // Baseline: what N uncapped senders (no allocation: their QoS level's default leaf, which may
  // borrow the whole 100 Gbit/s link) get through this machine.
  std::map<int, double> machine;
  for (int n : counts) {
    Round r = SetUpRound(env, ++round, n, 0);
    machine[n] = RunFlows(env, r.cgroups, {}, warm_up, window).back();
    TearDownRound(env, r);
    std::printf("[enforcement] %d uncapped senders: %.0f Mbit/s in total\n", n, machine[n]);
  }

  rep.Line("### Wire rate vs cap");
  rep.Line();
  rep.Line(
      "netqosd shapes a veth into a network namespace (`--enforce-nics`, the veth counted as "
      "100 Gbit/s). N containers (cgroups under a kubepods root, listed in a file:// pod "
      "list) are each allocated the cap through the plugin socket and send bulk TCP (iperf3, "
      "one server each) at once; each container's rate is its HTB leaf's byte counter "
      "(bytes on the wire) over " +
      Fmt(Seconds(window), 0) + " s after " + Fmt(Seconds(warm_up), 1) +
      " s of warm-up. *Machine* is the baseline from the same "
      "run: the aggregate N uncapped senders reach; where N × cap exceeds it, the senders "
      "cannot fill their caps and the cell is sender-limited (the cap must still never be "
      "exceeded).");
  rep.Line();
  rep.TableHeader({"containers", "cap (Mbit/s)", "mean rate/cap", "min", "max", "aggregate",
                   "N × cap", "machine (uncapped)", "verdict"});
  bool all_within = true;  // every cell the machine can fill is within ±2 %
  bool never_above = true;
  double worst_exact = 0;  // largest |rate/cap - 1| among cells that are not sender-limited
  for (int n : counts) {
    for (int cap : caps) {
      CheckInterrupted();
      Round r = SetUpRound(env, ++round, n, cap);
      std::vector<double> rates = RunFlows(env, r.cgroups, r.leaves, warm_up, window);
      rates.pop_back();
      TearDownRound(env, r);
      std::vector<double> ratio;
      double sum = 0;
      for (double m : rates) {
        ratio.push_back(m / cap);
        sum += m;
      }
      const double lo = *std::min_element(ratio.begin(), ratio.end());
      const double hi = *std::max_element(ratio.begin(), ratio.end());
      const double demand = static_cast<double>(n) * cap;
      const bool sender_limited = demand > 0.9 * machine[n];
      std::string verdict;
      if (hi > 1.02) {
        verdict = "**above cap**";
        never_above = false;
      } else if (sender_limited) {
        verdict = "sender-limited";
      } else if (lo >= 0.98) {
        verdict = "within ±2 %";
      } else {
        verdict = "**below cap**";
      }
      if (!sender_limited) {
        all_within = all_within && lo >= 0.98 && hi <= 1.02;
        worst_exact = std::max({worst_exact, std::abs(lo - 1), std::abs(hi - 1)});
      }
      rep.TableRow({std::to_string(n), std::to_string(cap), Fmt(Mean(ratio), 3), Fmt(lo, 3),
                    Fmt(hi, 3), Fmt(sum, 0), Thousands(demand), Fmt(machine[n], 0), verdict});
    }
  }
  rep.Line();
  rep.Figure("wire rate vs cap, cells the machine can fill",
             "worst container " + Fmt(worst_exact * 100, 1) + " % off its cap" +
                 (all_within ? " (all within ±2 %)" : " (**not all within ±2 %**)"),
             never_above ? "no container above its cap in any cell"
                         : "**a container exceeded its cap by more than 2 %**");
}

// --------------------------------------------------------------------------------------------
// 2. Latency next to a capped bulk flow

// An echo server on ip:port inside netns `ns`, on a thread of this process (setns affects only
// the calling thread). Serves one connection at a time until destroyed.
class EchoServer {
 public:
  EchoServer(const std::string& ns, const std::string& ip, uint16_t port) {
    std::promise<std::string> ready;
    auto started = ready.get_future();
    thread_ = std::thread([this, ns, ip, port, &ready] { Serve(ns, ip, port, &ready); });
    const std::string err = started.get();
    if (!err.empty()) {
      thread_.join();
      throw std::runtime_error("echo server: " + err);
    }
  }
  ~EchoServer() {
    stop_ = true;
    thread_.join();
  }
  EchoServer(const EchoServer&) = delete;
  EchoServer& operator=(const EchoServer&) = delete;

 private:
  void Serve(const std::string& ns, const std::string& ip, uint16_t port,
             std::promise<std::string>* ready) {
    const int nsfd = ::open(testing::NetnsPath(ns).c_str(), O_RDONLY | O_CLOEXEC);
    if (nsfd < 0 || ::setns(nsfd, CLONE_NEWNET) != 0) {
      ready->set_value("setns " + ns + ": " + std::strerror(errno));
      return;
    }
    ::close(nsfd);
    const int ls = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    ::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
    if (::bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(ls, 4) != 0) {
      ready->set_value("bind/listen " + ip + ":" + std::to_string(port) + ": " +
                       std::strerror(errno));
      ::close(ls);
      return;
    }
    ready->set_value("");
    while (!stop_) {
      pollfd p{ls, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int c = ::accept4(ls, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      char buf[256];
      while (!stop_) {
        pollfd q{c, POLLIN, 0};
        if (::poll(&q, 1, 50) <= 0) continue;
        const ssize_t n = ::read(c, buf, sizeof(buf));
        if (n <= 0 || ::write(c, buf, static_cast<size_t>(n)) != n) break;
      }
      ::close(c);
    }
    ::close(ls);
  }

  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Round trips of a 64-byte request/response every 10 ms for `seconds`, from a child process in
// `cgroup`; microseconds, in order.
std::vector<double> ProbeRtt(const std::string& cgroup, const std::string& ip, uint16_t port,
                             double seconds) {
  const size_t max_samples = static_cast<size_t>(seconds * 100) + 10;
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe");
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork");
  if (pid == 0) {
    ::close(fds[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    const int procs = ::open((cgroup + "/cgroup.procs").c_str(), O_WRONLY);
    if (procs < 0 || ::write(procs, "0", 1) != 1) ::_exit(3);
    ::close(procs);
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    ::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
    if (::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) ::_exit(4);
    char req[64] = {}, resp[64];
    const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(seconds));
    auto next = Clock::now();
    for (size_t i = 0; i < max_samples && Clock::now() < end; ++i) {
      std::this_thread::sleep_until(next);
      next += 10ms;
      const auto t0 = Clock::now();
      if (::write(s, req, sizeof(req)) != static_cast<ssize_t>(sizeof(req))) ::_exit(5);
      size_t got = 0;
      while (got < sizeof(resp)) {
        const ssize_t n = ::read(s, resp + got, sizeof(resp) - got);
        if (n <= 0) ::_exit(6);
        got += static_cast<size_t>(n);
      }
      const double us = Micros(Clock::now() - t0);
      if (::write(fds[1], &us, sizeof(us)) != static_cast<ssize_t>(sizeof(us))) ::_exit(7);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::vector<double> out;
  double us = 0;
  while (::read(fds[0], &us, sizeof(us)) == static_cast<ssize_t>(sizeof(us))) out.push_back(us);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CheckInterrupted();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || out.empty()) {
    throw std::runtime_error("latency probe failed: " + testing::DescribeExit(status));
  }
  return out;
}

struct LatencyRun {
  std::vector<double> rtt;
  double bulk_mbps = 0;  // the bulk flow on the wire (what the namespace received)
};

// Bulk TCP from `bulk_cg` (server port kBasePort) and the probe from `probe_cg` at once.
LatencyRun RunLatency(EnforcementEnv& env, const std::string& bulk_cg, const std::string& probe_cg,
                      uint16_t echo_port, double seconds, bool with_bulk) {
  std::vector<std::unique_ptr<testing::Iperf3Client>> bulk;
  testing::WireRate w;
  w.Link("veth", env.ns(), env.peer_if(), testing::LinkDirection::kRx);
  if (with_bulk) {
    bulk = StartClients({BulkClient(env, bulk_cg, kBasePort, static_cast<int>(seconds) + 6)});
    SleepFor(1500ms);  // the bulk flow's queue is full by now
  }
  LatencyRun r;
  w.Start();
  r.rtt = ProbeRtt(probe_cg, env.peer_ip(), echo_port, seconds);
  w.Stop();
  r.bulk_mbps = w.Mbps("veth");
  return r;
}

void Latency(const Args& args, EnforcementEnv& env, Report& rep) {
  const std::vector<int> caps = args.quick ? std::vector<int>{100} : std::vector<int>{100, 1000};
  const double seconds = args.quick ? 1.5 : 6;
  constexpr uint16_t kEchoPort = 15299;
  testing::Iperf3Server bulk_server(env.ns(), env.peer_ip(), kBasePort);
  EchoServer echo(env.ns(), env.peer_ip(), kEchoPort);

  rep.Line("### Latency next to a capped bulk flow: netqos vs TBF on the device");
  rep.Line();
  rep.Line(
      "Two containers of one pod share the veth: *bulk* sends TCP as fast as it can at its "
      "cap, *probe* does a 64-byte TCP request/response (TCP_NODELAY) every 10 ms for " +
      Fmt(seconds, 0) +
      " s to an echo server in the namespace; round trips measured in the "
      "probe. *netqos*: each container its own HTB leaf (bulk = cap, probe = 10 Mbit/s). "
      "*TBF*: the CNI bandwidth plugin's mechanism at the same cap, one `tbf` root on the "
      "device (`latency 25ms` as the plugin sets it, so a queue of cap × 25 ms + burst; "
      "burst = cap × 1 ms + 1600 bytes, the bucket netqos gives its leaves, much smaller "
      "than the 4 Gbit containerd passes for the pod annotations). *none*: no shaping, "
      "bulk uncapped. *idle*: the probe alone.");
  rep.Line();
  rep.TableHeader({"cap (Mbit/s)", "setup", "bulk on the wire (Mbit/s)", "RTT p50", "RTT p99",
                   "p99 vs netqos", "samples"});
  int round = 500;
  std::map<int, std::pair<double, double>> p99;  // cap -> (netqos, tbf)
  const BenchPod probe_pod = MakeBenchPod(++round, 1);
  for (int cap : caps) {
    CheckInterrupted();
    // netqos: the pod's two containers, each allocated.
    const BenchPod bulk_pod = MakeBenchPod(++round, 0);
    env.pods = {bulk_pod, probe_pod};
    env.WritePods();
    const std::string bulk_cg = env.MakeCgroup(bulk_pod);
    const std::string probe_cg = env.MakeCgroup(probe_pod);
    if (!env.Running()) env.StartDaemon(true, kSpeed);
    env.Allocate(bulk_pod, cap);
    env.Allocate(probe_pod, 10);
    if (env.WaitLeaf(bulk_cg, 20s) == 0 || env.WaitLeaf(probe_cg, 20s) == 0) {
      throw std::runtime_error("the latency containers got no leaves");
    }
    std::map<std::string, LatencyRun> runs;
    runs["netqos"] = RunLatency(env, bulk_cg, probe_cg, kEchoPort, seconds, true);
    env.RemovePod(bulk_pod);
    env.StopDaemon();  // --uninstall: the veth is bare again

    // TBF at the same cap, as the CNI bandwidth plugin installs it.
    const uint64_t burst = static_cast<uint64_t>(cap) * 125 + 1600;
    testing::Sh("tc qdisc add dev " + env.host_if() + " root tbf rate " + std::to_string(cap) +
                "mbit burst " + std::to_string(burst) + " latency 25ms");
    try {
      runs["TBF"] = RunLatency(env, bulk_cg, probe_cg, kEchoPort, seconds, true);
    } catch (...) {
      testing::ShOk("tc qdisc del dev " + env.host_if() + " root");
      throw;
    }
    testing::Sh("tc qdisc del dev " + env.host_if() + " root");
    runs["none"] = RunLatency(env, bulk_cg, probe_cg, kEchoPort, seconds, true);
    if (cap == caps.front())
      runs["idle"] = RunLatency(env, bulk_cg, probe_cg, kEchoPort, seconds, false);

    const double ref = Percentile(runs["netqos"].rtt, 99);
    for (const char* name : {"netqos", "TBF", "none", "idle"}) {
      if (runs.count(name) == 0) continue;
      const auto& r = runs[name];
      const double r99 = Percentile(r.rtt, 99);
      rep.TableRow(
          {std::to_string(cap), name, std::string(name) == "idle" ? "-" : Fmt(r.bulk_mbps, 0),
           Us(Percentile(r.rtt, 50)), Us(r99), Ratio(r99 / ref), std::to_string(r.rtt.size())});
    }
    p99[cap] = {ref, Percentile(runs["TBF"].rtt, 99)};
    RemoveDirRetry(bulk_cg);
    RemoveDirRetry(env.PodCgroup(bulk_pod));
    env.pods = {probe_pod};
    env.WritePods();
  }
  env.RemoveCgroup(probe_pod);
  rep.Line();
  for (const auto& [cap, v] : p99) {
    rep.Figure("p99 RTT next to a bulk flow capped at " + std::to_string(cap) + " Mbit/s",
               "netqos " + Us(v.first) + ", TBF on the device " + Us(v.second),
               "TBF / netqos = " + Ratio(v.second / v.first));
  }
}

void Run(const Args& args) {
  Report rep("enforcement", args);
  rep.Line("## Enforcement accuracy and latency");
  rep.Line();
  rep.Line("`bench/enforcement_bench.cc`.");
  rep.Line();
  EnforcementEnv env(args, "e", 2);
  env.StartDaemon(true, kSpeed);
  Accuracy(args, env, rep);
  Latency(args, env, rep);
}

}  // namespace
}  // namespace netqos::bench

int main(int argc, char** argv) {
  const auto args = netqos::bench::ParseArgs(
      argc, argv, "Wire rate vs cap and latency next to a capped flow (root).");
  if (int code = netqos::bench::CheckRoot("enforcement_bench"); code >= 0) return code;
  return netqos::bench::RunMain("enforcement_bench", [&] { netqos::bench::Run(args); });
}
