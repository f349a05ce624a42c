// Datapath cost of netqos, two ways, each against a baseline measured in the same run:
//  1. Per-invocation cost of each BPF program (BPF_PROG_TEST_RUN, kernel-timed over many repeats)
//     next to an empty program of the same type (bench/bpf/netqos_bench_empty.bpf.c).
//  2. Traffic over a veth into a network namespace, from a "container" cgroup: bulk TCP both ways
//     and 64-byte UDP both ways, with nothing attached, with netqos classifying and counting
//     (no --enforce-nics), and with netqos shaping the veth (HTB + IFB) for a container without a
//     cap (the uncapped class) and for one whose leaf is allocated far above what the veth
//     carries. Configurations alternate round by round and each figure is the median of the
//     rounds. Then one more pass of each netqos configuration with the kernel's BPF run-time
//     statistics on (bpf/prog_stats.h): each attached program's runs and ns per run, per kind of
//     traffic, and the BPF time per 64-byte UDP packet. Kept out of the ratio rounds, whose
//     programs would otherwise pay the statistics' two clock reads per run.
// Instructions: where `perf stat` counts them, per packet; where it cannot (this VM has no PMU),
// the size of each program as the kernel runs it (translated instructions) is the steady proxy.
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/pkt_cls.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench_support.h"
#include "bpf/cgroup_id.h"
#include "bpf/dataplane.h"
#include "bpf/nic_attach.h"
#include "bpf/pinned_maps.h"
#include "bpf/prog_stats.h"
#include "bpf/veth_attach.h"
#include "enforcement_env.h"
#include "netqos_bench_empty.skel.h"
#include "support/bpf_test_run.h"
#include "support/temp_dir.h"

namespace netqos::bench {
namespace {

// --------------------------------------------------------------------------------------------
// 1. BPF_PROG_TEST_RUN

using testing::Ipv4Packet;
using testing::RunSkbProgram;

constexpr uint32_t kLoopback = 0x7f000001;

// Average ns per run of `repeat` kernel-timed runs of prog_fd on pkt (on device `ifindex`,
// received on `ingress_ifindex`, when not 0); -1 on error.
double TestRunNs(int prog_fd, std::vector<uint8_t> pkt, uint32_t repeat, uint32_t ifindex = 0,
                 uint32_t ingress_ifindex = 0) {
  const auto run = RunSkbProgram(prog_fd, std::move(pkt), 0, repeat, 0, ifindex, ingress_ifindex);
  return run.err == 0 ? static_cast<double>(run.duration_ns) : -1;
}

// A VXLAN packet (UDP 4789) from the node whose inner frame is `inner`: what an overlay device
// hands the NIC.
std::vector<uint8_t> Vxlan(const std::vector<uint8_t>& inner) {
  std::vector<uint8_t> outer = Ipv4Packet(IPPROTO_UDP, 0xc0000201, 33000, 0xc0000202, 4789);
  const std::vector<uint8_t> vxlan = {0x08, 0, 0, 0, 0, 0, 42, 0};
  outer.insert(outer.end(), vxlan.begin(), vxlan.end());
  outer.insert(outer.end(), inner.begin(), inner.end());
  return outer;
}

// Runs `fn` in a child that first joins `cgroup` (BPF_PROG_TEST_RUN of a cgroup_skb program sees
// the calling task's cgroup) and returns what fn returned; throws if the child failed.
double InChild(const std::string& cgroup, const std::function<double()>& fn) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe");
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork");
  if (pid == 0) {
    ::close(fds[0]);
    double v = -2;
    {
      std::ofstream procs(cgroup + "/cgroup.procs");
      procs << "0" << std::flush;
      if (procs) v = fn();
    }
    (void)!::write(fds[1], &v, sizeof(v));
    ::_exit(0);
  }
  ::close(fds[1]);
  double v = -3;
  const ssize_t n = ::read(fds[0], &v, sizeof(v));
  ::close(fds[0]);
  ::waitpid(pid, nullptr, 0);
  if (n != static_cast<ssize_t>(sizeof(v)) || v < 0) {
    throw std::runtime_error("BPF_PROG_TEST_RUN in a child failed (" + std::to_string(v) + ")");
  }
  return v;
}

// A UDP socket on loopback that sent one datagram (so netqos_egress tagged it with the child's
// cgroup), then test-runs of the ingress program on a packet addressed to it.
double IngressToTaggedSocket(int prog_fd, uint32_t repeat) {
  const int s = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(kLoopback);
  socklen_t len = sizeof(addr);
  if (s < 0 || ::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return -4;
  }
  const char byte = 0;
  if (::sendto(s, &byte, 1, 0, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 1) return -5;
  const double ns = TestRunNs(
      prog_fd, Ipv4Packet(IPPROTO_UDP, kLoopback, 5555, kLoopback, ntohs(addr.sin_port)), repeat);
  ::close(s);
  return ns;
}

// The ifindex of a device other than loopback (the test run needs an existing one, above 1).
uint32_t FirstDeviceAfterLoopback() {
  struct if_nameindex* all = ::if_nameindex();
  uint32_t found = 0;
  for (const struct if_nameindex* i = all; i != nullptr && i->if_index != 0; ++i) {
    if (i->if_index > 1) {
      found = i->if_index;
      break;
    }
  }
  if (all != nullptr) ::if_freenameindex(all);
  if (found == 0) throw std::runtime_error("no device but loopback for the veth cases");
  return found;
}

// --------------------------------------------------------------------------------------------
// Instructions: perf where it counts them, else the programs' translated sizes.

// What `perf stat -e instructions` says of `true`: the count, or why there is none (no perf, or
// "<not supported>" in a VM without a PMU).
struct PerfProbe {
  bool counts = false;
  std::string said;
};
PerfProbe ProbePerfInstructions(const std::string& dir) {
  const std::string perf = "/usr/bin/perf";
  if (!std::filesystem::exists(perf)) return {false, "perf is not installed (" + perf + ")"};
  const auto r =
      testing::RunCommand({perf, "stat", "-x", ",", "-e", "instructions", "--", "/bin/true"},
                          dir + "/perf.out", std::chrono::seconds(30));
  std::string line;
  std::istringstream in(r.output);
  for (std::string l; std::getline(in, l);) {
    if (l.find("instructions") != std::string::npos) line = l;
  }
  if (r.exit_code != 0 || line.empty()) {
    return {false, "`perf stat -e instructions` failed (exit " + std::to_string(r.exit_code) +
                       "): " + r.output.substr(0, 200)};
  }
  const bool counts = !line.empty() && std::isdigit(static_cast<unsigned char>(line[0]));
  return {counts, "`perf stat -x, -e instructions -- true` printed `" + line + "`"};
}

struct NamedProgram {
  std::string name;
  int fd;
};

// Each program's size as the kernel runs it: a property of the program, not of the machine's
// load. Not the instructions a packet executes (branches skip most of them), but it moves when a
// path gains or loses work.
void ProgramSizes(Report& rep, const std::vector<NamedProgram>& programs) {
  const testing::TempDir scratch;  // perf's output, removed with it
  const PerfProbe perf = ProbePerfInstructions(scratch.path());
  rep.Line("### Instructions");
  rep.Line();
  rep.Line(perf.counts
               ? "`perf stat` counts instructions on this machine (" + perf.said +
                     "), but this bench does not yet count them per packet; the programs' "
                     "translated sizes below are the proxy."
               : "`perf stat` cannot count instructions here: " + perf.said +
                     ". So no instructions per packet; the stable proxy is each program's "
                     "size as the kernel runs it (bpf_prog_info: `xlated_prog_len` / 8 = BPF "
                     "instructions after the verifier's rewrites, `jited_prog_len` = bytes of "
                     "x86 code). A size, not the instructions one packet executes.");
  rep.Line();
  rep.TableHeader({"program", "translated BPF instructions", "JITed bytes"});
  for (const auto& p : programs) {
    auto st = bpf::ReadProgStats(p.fd);
    if (!st.ok()) throw std::runtime_error(p.name + ": " + st.status().message());
    rep.TableRow(
        {p.name, Thousands(static_cast<double>(st->XlatedInsns())), Thousands(st->jited_bytes)});
  }
  rep.Line();
}

struct ProgramCosts {
  double egress_added_ns = 0;   // classified container, over the empty cgroup_skb program
  double rx_added_ns = 0;       // classified container, over the empty cgroup_skb program
  double ingress_added_ns = 0;  // packet for a tagged socket, over the empty tc program
};

ProgramCosts ProgramCost(const Args& args, Report& rep) {
  const uint32_t repeat = args.quick ? 100000 : 2000000;
  const int rounds = args.quick ? 3 : 7;

  // A bpffs and a cgroup tree of our own; the programs are attached to that tree only.
  ScopedDir dir(args.work_dir, args.tag + "-dp");
  MakeDir(dir.file("bpf"));
  if (::mount("bpf", dir.file("bpf").c_str(), "bpf", 0, "mode=0700") != 0) {
    throw std::runtime_error("mount bpffs: " + std::string(std::strerror(errno)));
  }
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{dir.file("bpf")};
  testing::TestCgroup root(args.tag + "-dp");
  testing::TestCgroup classified(root, "classified");
  testing::TestCgroup unclassified(root, "unclassified");
  // The container of a pod behind a CNI: its class entry is looked up by the pod's address or
  // veth, never by the test run's socket (the cases run in the other two cgroups).
  testing::TestCgroup pod_container(root, "pod");
  // EDT mode: a container paced by its leaf alone (a namespace without an aggregate) and one
  // paced by its leaf and then its namespace's aggregate. Their rates are too high for any
  // delay, so every run takes the same branch of the pacing and none is dropped by the horizon.
  testing::TestCgroup paced(root, "paced");
  testing::TestCgroup aggregated(root, "aggregated");
  // And a container without a leaf (its level's default class), which EDT never paces.
  testing::TestCgroup unpaced(root, "unpaced");

  bpf::Dataplane::Options o;
  o.pin_dir = dir.file("bpf") + "/netqos";
  o.cgroup_path = root.Path();
  auto dp = bpf::Dataplane::Open(o);
  if (!dp.ok()) throw std::runtime_error("Dataplane::Open: " + dp.status().message());
  netqos_class cls{};
  cls.priority = 0x100100;
  cls.net_class_id = 7;
  cls.qos_level = NETQOS_QOS_SHARED;
  if (auto st = (*dp)->SetClass(classified.Id(), cls); !st.ok()) {
    throw std::runtime_error(st.message());
  }
  struct Empty {
    netqos_bench_empty* skel = netqos_bench_empty__open_and_load();
    ~Empty() { netqos_bench_empty__destroy(skel); }
  } empty;
  if (empty.skel == nullptr) throw std::runtime_error("loading netqos_bench_empty.bpf.o failed");

  const int egress = (*dp)->EgressProgramFd();
  const int rx = (*dp)->RxProgramFd();
  auto nic = netqos::bpf::NicPrograms::Load({.pin_dir = o.pin_dir});
  if (!nic.ok()) throw std::runtime_error(nic.status().message());
  const int ingress = (*nic)->IngressFd();
  const int nic_tx = (*nic)->EgressFd();
  auto nic_edt = netqos::bpf::NicPrograms::Load({.pin_dir = o.pin_dir, .edt = true});
  if (!nic_edt.ok()) throw std::runtime_error(nic_edt.status().message());
  const int nic_tx_edt = (*nic_edt)->EgressFd();
  constexpr uint64_t kPacedLeaf = 0x1001a0, kAggregatedLeaf = 0x1001a1, kAggregate = 0x1001a5;
  constexpr uint64_t kNoDelay = 1'000'000'000'000;  // bytes/s: 54 bytes take 0 ns
  netqos_class paced_cls = cls;
  paced_cls.priority = kPacedLeaf;
  netqos_class aggregated_cls = cls;
  aggregated_cls.priority = kAggregatedLeaf;
  aggregated_cls.flags |= NETQOS_CLASS_F_AGGREGATE;
  netqos_class unpaced_cls = cls;
  unpaced_cls.priority = 0x100031;  // the shared level's default class
  unpaced_cls.flags |= NETQOS_CLASS_F_NO_LEAF;
  for (const Status& st :
       {(*dp)->SetClass(paced.Id(), paced_cls), (*dp)->SetClass(aggregated.Id(), aggregated_cls),
        (*dp)->SetClass(unpaced.Id(), unpaced_cls), (*dp)->SetEdtRate(kPacedLeaf, kNoDelay),
        (*dp)->SetEdtRate(kAggregatedLeaf, kNoDelay), (*dp)->SetEdtRate(kAggregate, kNoDelay),
        (*dp)->SetAggregate(kAggregatedLeaf, kAggregate)}) {
    if (!st.ok()) throw std::runtime_error(st.message());
  }
  // A pod behind a CNI: its address in the pod address map, its veth (played by the loopback
  // device's neighbour, any device will do: the programs look its ifindex up) in the veth map,
  // its container with a carrier slot and shaped on ingress.
  auto pod = netqos::bpf::VethPrograms::Load({.pin_dir = o.pin_dir});
  if (!pod.ok()) throw std::runtime_error(pod.status().message());
  const uint32_t veth = FirstDeviceAfterLoopback();
  constexpr uint32_t kPodIp = 0x0af40005;
  netqos_class pod_cls = cls;
  pod_cls.slot = 3;
  pod_cls.flags = NETQOS_CLASS_F_INGRESS_SHAPED | NETQOS_CLASS_F_VETH;
  netqos_addr pod_addr{};
  pod_addr.addr[2] = htonl(0xffff);
  pod_addr.addr[3] = htonl(kPodIp);
  for (const Status& st :
       {(*dp)->SetClass(pod_container.Id(), pod_cls),
        (*dp)->SetPodAddress(pod_addr, pod_container.Id()),
        (*dp)->SetVeth(veth, pod_container.Id()), (*dp)->SetCarrier(3, pod_container.Id())}) {
    if (!st.ok()) throw std::runtime_error(st.message());
  }
  const auto from_pod = Ipv4Packet(IPPROTO_TCP, kPodIp, 40000, 0x0af40105, 80);
  const int empty_egress = bpf_program__fd(empty.skel->progs.bench_empty_egress);
  const int empty_tc = bpf_program__fd(empty.skel->progs.bench_empty_tc);
  const int pod_tx = (*pod)->TxFd();
  const int pod_rx = (*pod)->RxFd();
  const auto tcp = Ipv4Packet(IPPROTO_TCP, kLoopback, 40000, kLoopback, 80);
  const auto no_socket = Ipv4Packet(IPPROTO_UDP, kLoopback, 1, kLoopback, 9);

  struct Case {
    std::string program, path, cgroup;
    std::function<double()> run;
    bool egress;
  };
  std::vector<Case> cases = {
      {"netqos_egress (cgroup_skb/egress)", "container classified: class map hit, counters",
       classified.Path(), [&] { return TestRunNs(egress, tcp, repeat); }, true},
      {"netqos_egress (cgroup_skb/egress)", "cgroup not in the class map", unclassified.Path(),
       [&] { return TestRunNs(egress, tcp, repeat); }, true},
      {"netqos_rx (cgroup_skb/ingress)",
       "container classified: class map hit, socket tag, "
       "counters",
       classified.Path(), [&] { return TestRunNs(rx, tcp, repeat); }, true},
      {"netqos_rx (cgroup_skb/ingress)", "cgroup not in the class map", unclassified.Path(),
       [&] { return TestRunNs(rx, tcp, repeat); }, true},
      {"empty cgroup_skb", "baseline", classified.Path(),
       [&] { return TestRunNs(empty_egress, tcp, repeat); }, true},
      {"netqos_ingress (tc)", "packet for a tagged socket: lookup, class", classified.Path(),
       [&] { return IngressToTaggedSocket(ingress, repeat); }, false},
      {"netqos_ingress (tc)", "no local socket for the packet", classified.Path(),
       [&] { return TestRunNs(ingress, no_socket, repeat); }, false},
      {"netqos_nic_tx (tc egress)", "container's socket: class map hit", classified.Path(),
       [&] { return TestRunNs(nic_tx, tcp, repeat); }, false},
      {"netqos_nic_tx (tc egress, EDT mode)",
       "container's socket: no leaf (its level's default class), no pacing lookup", unpaced.Path(),
       [&] { return TestRunNs(nic_tx_edt, tcp, repeat); }, false},
      {"netqos_nic_tx (tc egress, EDT mode)",
       "container's socket: its leaf paced (a namespace without an aggregate)", paced.Path(),
       [&] { return TestRunNs(nic_tx_edt, tcp, repeat); }, false},
      {"netqos_nic_tx (tc egress, EDT mode)",
       "container's socket: its leaf paced, then its namespace's aggregate", aggregated.Path(),
       [&] { return TestRunNs(nic_tx_edt, tcp, repeat); }, false},
      {"netqos_nic_tx (tc egress)", "no container's socket: pod address lookup, no pod",
       unclassified.Path(), [&] { return TestRunNs(nic_tx, tcp, repeat); }, false},
      {"netqos_nic_tx (tc egress)", "no socket, a pod's source address (classified by address)",
       unclassified.Path(), [&] { return TestRunNs(nic_tx, from_pod, repeat); }, false},
      {"netqos_nic_tx (tc egress)", "VXLAN from the node: no pod outside, the inner source's",
       unclassified.Path(), [&] { return TestRunNs(nic_tx, Vxlan(from_pod), repeat); }, false},
      {"netqos_pod_tx (tc ingress of a pod's veth)",
       "no container's socket: the veth's pod, carrier written", unclassified.Path(),
       [&] { return TestRunNs(pod_tx, from_pod, repeat, veth); }, false},
      {"netqos_pod_rx (tc egress of a pod's veth)", "from outside the node: the veth's pod, shaped",
       unclassified.Path(), [&] { return TestRunNs(pod_rx, tcp, repeat, veth, veth); }, false},
      {"netqos_pod_rx (tc egress of a pod's veth)", "node-local (from the host): passes",
       unclassified.Path(), [&] { return TestRunNs(pod_rx, tcp, repeat, veth); }, false},
      {"empty tc", "baseline", classified.Path(),
       [&] { return TestRunNs(empty_tc, no_socket, repeat); }, false},
  };
  std::vector<std::vector<double>> samples(cases.size());
  for (int r = 0; r < rounds; ++r) {  // interleaved, so drift hits every case alike
    for (size_t i = 0; i < cases.size(); ++i) {
      CheckInterrupted();
      samples[i].push_back(InChild(cases[i].cgroup, cases[i].run));
    }
  }
  auto index_of = [&](const std::string& program, const std::string& path) {
    for (size_t i = 0; i < cases.size(); ++i) {
      if (cases[i].program == program && cases[i].path.rfind(path, 0) == 0) return i;
    }
    throw std::logic_error("no case " + program);
  };
  const double empty_egress_ns = Median(samples[index_of("empty cgroup_skb", "baseline")]);
  const double empty_tc_ns = Median(samples[index_of("empty tc", "baseline")]);

  rep.Line("### Per-invocation cost of each BPF program (BPF_PROG_TEST_RUN)");
  rep.Line();
  rep.Line("Kernel-timed average over " + Thousands(repeat) +
           " runs of a 54-byte TCP/UDP packet, "
           "median of " +
           std::to_string(rounds) +
           " interleaved rounds; the empty programs of "
           "the same types are the baseline. The programs are loaded by `userspace/bpf/dataplane` "
           "exactly as netqosd loads them (attached to a private cgroup tree and bpffs).");
  rep.Line();
  rep.TableHeader({"program", "path", "ns / packet", "empty program", "added ns", "ratio"});
  for (size_t i = 0; i < cases.size(); ++i) {
    const double ns = Median(samples[i]);
    const double base = cases[i].egress ? empty_egress_ns : empty_tc_ns;
    const bool is_base = cases[i].path == "baseline";
    rep.TableRow({cases[i].program, cases[i].path, Fmt(ns, 1), is_base ? "" : Fmt(base, 1),
                  is_base ? "" : Fmt(ns - base, 1), is_base ? "" : Ratio(ns / base)});
  }
  rep.Line();
  ProgramSizes(rep, {{"netqos_egress (cgroup_skb/egress)", egress},
                     {"netqos_rx (cgroup_skb/ingress)", rx},
                     {"netqos_ingress (tc)", ingress},
                     {"netqos_nic_tx (tc egress, HTB mode)", nic_tx},
                     {"netqos_nic_tx (tc egress, EDT mode)", nic_tx_edt},
                     {"netqos_pod_tx (tc ingress of a pod's veth)", pod_tx},
                     {"netqos_pod_rx (tc egress of a pod's veth)", pod_rx},
                     {"empty cgroup_skb", empty_egress},
                     {"empty tc", empty_tc}});
  return {
      Median(samples[index_of("netqos_egress (cgroup_skb/egress)", "container")]) - empty_egress_ns,
      Median(samples[index_of("netqos_rx (cgroup_skb/ingress)", "container")]) - empty_egress_ns,
      Median(samples[index_of("netqos_ingress (tc)", "packet for")]) - empty_tc_ns};
}

// --------------------------------------------------------------------------------------------
// 2. Traffic over a veth

struct TrafficFigures {
  double tcp_egress_mbps = 0, tcp_ingress_mbps = 0;
  double udp_egress_sent_pps = 0, udp_egress_rcvd_pps = 0, udp_ingress_rcvd_pps = 0;
};

// pps a UDP iperf3 run reports: (sent, delivered) = (sum_sent.packets, sum_received.packets -
// lost) over the sender's seconds.
std::pair<double, double> UdpPps(const testing::Iperf3Result& r) {
  const auto j = nlohmann::json::parse(r.output, nullptr, false);
  if (j.is_discarded()) throw std::runtime_error("iperf3 UDP output is not JSON: " + r.output);
  const auto& sent = j.at("end").at("sum_sent");
  const auto& rcvd = j.at("end").at("sum_received");
  const double secs = sent.at("seconds").get<double>();
  const double s = sent.at("packets").get<double>();
  const double d = rcvd.at("packets").get<double>() - rcvd.at("lost_packets").get<double>();
  return {s / secs, d / secs};
}

testing::Iperf3Result RunIperf(const EnforcementEnv& env, const std::string& cgroup, uint16_t port,
                               int seconds, bool reverse, std::vector<std::string> extra) {
  testing::Iperf3Client c({.server_ip = env.peer_ip(),
                           .port = port,
                           .seconds = seconds,
                           .reverse = reverse,
                           .cgroup = cgroup,
                           .netns = "",
                           .extra_args = std::move(extra)});
  auto r = c.Wait();
  CheckInterrupted();
  if (!r.ok()) throw std::runtime_error("iperf3: " + r.error + "\n" + r.output);
  return r;
}

TrafficFigures RunTraffic(const EnforcementEnv& env, const std::string& cgroup, uint16_t port,
                          int seconds) {
  TrafficFigures f;
  f.tcp_egress_mbps = RunIperf(env, cgroup, port, seconds, false, {}).ReceiverMbps();
  f.tcp_ingress_mbps = RunIperf(env, cgroup, port, seconds, true, {}).ReceiverMbps();
  const std::vector<std::string> small = {"-u", "-b", "0", "-l", "64"};
  std::tie(f.udp_egress_sent_pps, f.udp_egress_rcvd_pps) =
      UdpPps(RunIperf(env, cgroup, port, seconds, false, small));
  f.udp_ingress_rcvd_pps = UdpPps(RunIperf(env, cgroup, port, seconds, true, small)).second;
  return f;
}

// What the programs cost the figure's packets (BPF_PROG_TEST_RUN, over empty programs).
std::string ProgramCostNote(bool received, const ProgramCosts& costs) {
  if (received) {
    return "received packets: classify+count runs netqos_rx on each (" + Fmt(costs.rx_added_ns, 0) +
           " ns over an empty cgroup_skb program), shaping also the "
           "tc ingress program (" +
           Fmt(costs.ingress_added_ns, 0) + " ns over an empty tc one)";
  }
  return "programs add " + Fmt(costs.egress_added_ns, 0) + " ns (egress) / " +
         Fmt(costs.ingress_added_ns, 0) + " ns (tc ingress) per packet";
}

// --------------------------------------------------------------------------------------------
// 3. The kernel's counters: each attached program's runs and time, per kind of traffic

// The programs a running netqosd has attached for this bench: its cgroup links (pinned in its pin
// dir) and, when it shapes, its tc programs on the veth (the IFB gets none: what reaches it was
// classified on the veth).
std::vector<std::pair<std::string, uint32_t>> AttachedPrograms(const EnforcementEnv& env,
                                                               bool shaping) {
  std::vector<std::pair<std::string, uint32_t>> out;
  const bpf::PinDirState pins = bpf::InspectPinDir(env.PinDir());
  for (const auto& [where, link] :
       {std::pair{"egress", &pins.egress_link}, std::pair{"ingress", &pins.rx_link},
        std::pair{"setsockopt", &pins.sockopt_link}}) {
    if (!link->present) continue;
    if (!link->error.empty()) throw std::runtime_error(link->path + ": " + link->error);
    out.emplace_back(std::string("cgroup root, ") + where, link->prog_id);
  }
  if (!shaping) return out;
  const int ifindex = static_cast<int>(::if_nametoindex(env.host_if().c_str()));
  auto in = bpf::IngressProgramId(ifindex);
  auto eg = bpf::EgressProgramId(ifindex);
  if (!in.ok()) throw std::runtime_error(in.status().message());
  if (!eg.ok()) throw std::runtime_error(eg.status().message());
  if (*in == 0 || *eg == 0) throw std::runtime_error("netqos's tc programs are not on the veth");
  out.emplace_back("veth tc ingress", *in);
  out.emplace_back("veth tc egress", *eg);
  return out;
}

// netqosd attaches its tc programs after it starts enforcing (its first pass over the NICs):
// traffic measured before that would not pay for them.
void WaitTcPrograms(const EnforcementEnv& env, Clock::duration limit, bool ingress = true) {
  const int ifindex = static_cast<int>(::if_nametoindex(env.host_if().c_str()));
  const auto start = Clock::now();
  const auto deadline = start + limit;
  while (Clock::now() < deadline) {
    // Asked only once the qdisc is there, so libbpf has no "no clsact" error to print.
    if (testing::CaptureOutput("tc qdisc show dev " + env.host_if()).find("clsact") !=
        std::string::npos) {
      auto in = bpf::IngressProgramId(ifindex);
      auto eg = bpf::EgressProgramId(ifindex);
      if (in.ok() && eg.ok() && (*in != 0 || !ingress) && *eg != 0) {
        std::printf("[datapath] tc programs on the veth %.0f ms after the class map entry\n",
                    Micros(Clock::now() - start) / 1000);
        return;
      }
    }
    SleepFor(50ms);
  }
  throw std::runtime_error("netqos's tc programs did not appear on " + env.host_if());
}

struct CountedRun {
  std::vector<bpf::ProgStats> delta;  // per program of AttachedPrograms, in its order
  double packets = 0;                 // UDP: what the sender sent; 0 for TCP
};

void CountedPass(const EnforcementEnv& env, const std::string& name, const std::string& cgroup,
                 uint16_t port, int seconds, bool shaping, bool headline, Report& rep) {
  const auto programs = AttachedPrograms(env, shaping);
  auto read_all = [&] {
    std::vector<bpf::ProgStats> v;
    for (const auto& p : programs) {
      auto st = bpf::ReadProgStatsById(p.second);
      if (!st.ok()) throw std::runtime_error(p.first + ": " + st.status().message());
      v.push_back(*st);
    }
    return v;
  };
  struct Kind {
    std::string name;
    bool reverse, udp;
  };
  const std::vector<Kind> kinds = {{"bulk TCP out", false, false},
                                   {"bulk TCP in", true, false},
                                   {"64-byte UDP out", false, true},
                                   {"64-byte UDP in", true, true}};
  const std::vector<std::string> small = {"-u", "-b", "0", "-l", "64"};
  std::vector<CountedRun> runs;
  for (const auto& k : kinds) {
    const auto before = read_all();
    const auto r =
        RunIperf(env, cgroup, port, seconds, k.reverse, k.udp ? small : std::vector<std::string>{});
    const auto after = read_all();
    CountedRun c;
    for (size_t i = 0; i < programs.size(); ++i) c.delta.push_back(after[i].Since(before[i]));
    if (k.udp) {
      const auto j = nlohmann::json::parse(r.output, nullptr, false);
      if (j.is_discarded()) throw std::runtime_error("iperf3 UDP output is not JSON");
      c.packets = j.at("end").at("sum_sent").at("packets").get<double>();
    }
    runs.push_back(std::move(c));
  }
  rep.Line("**" + name + "**");
  rep.Line();
  std::vector<std::string> header = {"program", "translated insns"};
  for (const auto& k : kinds) header.push_back(k.name + ": ns / run (runs)");
  rep.TableHeader(header);
  for (size_t i = 0; i < programs.size(); ++i) {
    const auto& first = runs[0].delta[i];
    std::vector<std::string> row = {first.name + " (" + programs[i].first + ")",
                                    Thousands(static_cast<double>(first.XlatedInsns()))};
    for (const auto& c : runs) {
      row.push_back(Fmt(c.delta[i].NsPerRun(), 0) + " (" +
                    Thousands(static_cast<double>(c.delta[i].run_cnt)) + ")");
    }
    rep.TableRow(row);
  }
  for (size_t k = 0; k < kinds.size(); ++k) {
    if (!kinds[k].udp || runs[k].packets <= 0) continue;
    uint64_t ns = 0, cnt = 0;
    for (const auto& d : runs[k].delta) {
      ns += d.run_time_ns;
      cnt += d.run_cnt;
    }
    const double per_packet = static_cast<double>(ns) / runs[k].packets;
    rep.Line();
    rep.Line("- " + kinds[k].name + ": " + Thousands(runs[k].packets) +
             " packets sent; all programs together " + Fmt(per_packet, 0) + " ns and " +
             Fmt(static_cast<double>(cnt) / runs[k].packets, 2) + " runs per packet sent.");
    if (headline) {
      rep.Figure("BPF time per 64-byte UDP packet, " + name + ", " + kinds[k].name.substr(12),
                 Fmt(per_packet, 0) + " ns",
                 "the kernel's run_time_ns of every attached program / packets sent");
    }
  }
  rep.Line();
}

void Throughput(const Args& args, Report& rep, const ProgramCosts& costs) {
  const int rounds = args.quick ? 1 : 5;
  const int seconds = args.quick ? 1 : 2;
  constexpr int kSpeed = 40000, kAlloc = 30000;  // Mbit/s: far above what the veth carries

  EnforcementEnv env(args, "d", 1);
  // Two containers: the first allocated far above the veth's rate (its own HTB leaf, a cap that
  // never bites), the second never allocated (its QoS level's default class: the uncapped class).
  env.pods = {MakeBenchPod(1, 0), MakeBenchPod(1, 1)};
  env.WritePods();
  const std::string cg_leaf = env.MakeCgroup(env.pods[0]);
  const std::string cg_free = env.MakeCgroup(env.pods[1]);
  testing::Iperf3Server server(env.ns(), env.peer_ip(), 15201);

  // The allocation is made once and kept in the state dir across the daemon's restarts.
  env.StartDaemon(true, kSpeed);
  env.Allocate(env.pods[0], kAlloc);
  const uint32_t leaf = env.WaitLeaf(cg_leaf, 10s);
  if (leaf == 0) throw std::runtime_error("the sender container did not get its leaf");
  env.StopDaemon();

  // The qdisc's own share: an HTB root as netqos would install it (one default class at the
  // link's speed), but no netqos at all.
  auto tc = [&](const std::vector<std::string>& a) {
    std::vector<std::string> argv = {"/usr/sbin/tc"};  // Spawn execs a path, not a name
    argv.insert(argv.end(), a.begin(), a.end());
    const auto r = testing::RunCommand(argv, env.dir() + "/tc.out");
    if (r.exit_code != 0) throw std::runtime_error("tc failed: " + r.output);
  };
  auto bare_htb = [&](bool on) {
    if (!on) return tc({"qdisc", "del", "dev", env.host_if(), "root"});
    tc({"qdisc", "replace", "dev", env.host_if(), "root", "handle", "1:", "htb", "default", "1"});
    // With the bucket netqos gives a class (1 ms of its rate + one 1600-byte packet): without
    // one, tc computes a burst of 0 at this rate and the class is over its limit on every packet,
    // which costs about 170 ns a packet more than netqos's own HTB root (measured with perf).
    const std::string bucket = std::to_string(uint64_t{kSpeed} * 1000 * 1000 / 8 / 1000 + 1600);
    tc({"class", "add", "dev", env.host_if(), "parent", "1:", "classid", "1:1", "htb", "rate",
        std::to_string(kSpeed) + "mbit", "burst", bucket, "cburst", bucket});
  };

  // kShapeIdle: shaping with no allocation on the node (a state dir of its own), so nothing on
  // the veth is capped and it keeps its own root.
  enum class Daemon { kNone, kBareHtb, kClassify, kShape, kShapeIdle };
  struct Config {
    std::string name;
    Daemon daemon;
    const std::string* cgroup;
  };
  const std::vector<Config> configs = {
      {"nothing attached", Daemon::kNone, &cg_free},
      {"netqos classify+count", Daemon::kClassify, &cg_free},
      {"netqos shaping, no cap", Daemon::kShape, &cg_free},
      {"netqos shaping, leaf above line rate", Daemon::kShape, &cg_leaf},
      {"HTB root alone, no netqos", Daemon::kBareHtb, &cg_free},
      {"netqos shaping, nothing capped on the NIC", Daemon::kShapeIdle, &cg_free},
  };
  // What each configuration's veth must carry, checked every round: the comparison means
  // nothing if the uncapped container's neighbour did not bring the HTB root, or if the idle
  // node got one.
  auto check_root = [&](const Config& cfg) {
    const bool htb =
        testing::CaptureOutput("tc qdisc show dev " + env.host_if()).find("qdisc htb") !=
        std::string::npos;
    if (cfg.daemon == Daemon::kShape && !htb) {
      throw std::runtime_error(cfg.name + ": no HTB root on " + env.host_if());
    }
    if (cfg.daemon == Daemon::kShapeIdle && htb) {
      throw std::runtime_error(cfg.name + ": an HTB root on " + env.host_if());
    }
  };
  std::vector<std::vector<TrafficFigures>> results(configs.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t c = 0; c < configs.size(); ++c) {
      const Config& cfg = configs[c];
      const bool shaping = cfg.daemon == Daemon::kShape || cfg.daemon == Daemon::kShapeIdle;
      const bool netqos = cfg.daemon == Daemon::kClassify || shaping;
      if (cfg.daemon == Daemon::kBareHtb) bare_htb(true);
      if (cfg.daemon == Daemon::kShapeIdle) env.UseStateDir("state-idle");
      if (netqos) env.StartDaemon(shaping, kSpeed);
      if (netqos && !env.WaitEntry(*cfg.cgroup, 10s)) {
        throw std::runtime_error("the sender is not in the class map after restart");
      }
      // The idle node has nothing on the veth's receive side.
      if (shaping) WaitTcPrograms(env, 10s, cfg.daemon == Daemon::kShape);
      check_root(cfg);
      if (cfg.cgroup == &cg_leaf) {  // the traffic really goes through the container's HTB leaf
        if (env.WaitLeaf(cg_leaf, 10s) != leaf) throw std::runtime_error("the sender changed leaf");
        const auto classes = testing::TcClasses(env.host_if());
        if (classes.count(TcHandleText(leaf)) == 0) {
          throw std::runtime_error("no HTB leaf " + TcHandleText(leaf) + " on " + env.host_if());
        }
      }
      results[c].push_back(RunTraffic(env, *cfg.cgroup, server.port(), seconds));
      const auto& f = results[c].back();
      std::printf("[datapath] round %d %-40s tcp %.0f/%.0f Mbit/s udp %.0f/%.0f/%.0f pps\n", r + 1,
                  cfg.name.c_str(), f.tcp_egress_mbps, f.tcp_ingress_mbps, f.udp_egress_sent_pps,
                  f.udp_egress_rcvd_pps, f.udp_ingress_rcvd_pps);
      if (netqos) env.StopDaemon();
      env.UseStateDir("state");
      if (cfg.daemon == Daemon::kBareHtb) bare_htb(false);
    }
  }

  auto median = [&](size_t c, double TrafficFigures::*field) {
    std::vector<double> v;
    for (const auto& f : results[c]) v.push_back(f.*field);
    return Median(v);
  };
  // Each round's configurations ran back to back, so their ratio shares that round's conditions:
  // the median of the per-round ratios is steadier than a ratio of medians. Min-max shows the
  // spread.
  struct RatioFigure {
    double median, min, max;
  };
  auto ratio = [&](size_t c, double TrafficFigures::*field) {
    std::vector<double> v;
    for (size_t r = 0; r < results[c].size(); ++r) {
      v.push_back(results[c][r].*field / results[0][r].*field);
    }
    return RatioFigure{Median(v), *std::min_element(v.begin(), v.end()),
                       *std::max_element(v.begin(), v.end())};
  };
  auto show_ratio = [&](const RatioFigure& f) {
    return f.min == f.max ? Ratio(f.median)
                          : Ratio(f.median) + " (" + Fmt(f.min, 2) + "–" + Fmt(f.max, 2) + ")";
  };
  struct Metric {
    std::string name;
    double TrafficFigures::*field;
    bool pps;
    // "pps sent" is not judged: with nothing attached the veth has no qdisc and the sender
    // outruns the receiver, so most of what it counts is dropped at the peer (sent is about 3×
    // delivered here); a qdisc that pushes back lowers it without lowering what arrives.
    bool judged = true;
  };
  const std::vector<Metric> metrics = {
      {"bulk TCP, container → netns (Mbit/s)", &TrafficFigures::tcp_egress_mbps, false},
      {"bulk TCP, netns → container (Mbit/s)", &TrafficFigures::tcp_ingress_mbps, false},
      {"64-byte UDP, container sends (pps sent)", &TrafficFigures::udp_egress_sent_pps, true,
       false},
      {"64-byte UDP, container sends (pps delivered)", &TrafficFigures::udp_egress_rcvd_pps, true},
      {"64-byte UDP, container receives (pps delivered)", &TrafficFigures::udp_ingress_rcvd_pps,
       true},
  };
  rep.Line("### Traffic over a veth: netqos attached vs nothing attached");
  rep.Line();
  rep.Line(
      "A veth from the host into a network namespace; iperf3 client in a container cgroup on "
      "the host, server in the namespace; " +
      std::to_string(seconds) +
      " s per run, median "
      "of " +
      std::to_string(rounds) +
      " rounds, the configurations alternating round by "
      "round; a ratio is the median of the per-round ratios (each round's configurations ran "
      "back to back), with their range in parentheses. *classify+count*: netqosd without "
      "`--enforce-nics` (the cgroup programs on the cgroup root: `netqos_egress` on sent "
      "packets, `netqos_rx` where received ones reach their socket; class map and counters; "
      "nothing on the veth). *shaping*: netqosd with `--enforce-nics` on the veth (HTB root "
      "on it, `netqos_nic_tx` on its tc egress hook setting every sent packet's class, the "
      "ingress program on its tc ingress hook, an IFB with the same tree). *no "
      "cap*: a container without an allocation, next to the allocated one below (whose caps "
      "put the HTB root and the IFB there), in its QoS level's default class (the "
      "uncapped class: its received packets skip the IFB, which could not hold them back, "
      "but each still passes the tc hook and the ingress program's socket lookup); *leaf "
      "above line rate*: a "
      "container allocated " +
      Thousands(kAlloc) +
      " Mbit/s, far above what the veth "
      "carries, whose packets go through its own HTB leaves both ways. UDP: `iperf3 -u -b 0 "
      "-l 64`; *sent* is what the sender got through its stack, *delivered* what reached the "
      "receiver (both CPU-bound on this machine). *HTB root alone*: no netqos, only the qdisc "
      "that shaping installs (an HTB root with one default class at the link's speed): "
      "what the qdisc itself costs against the veth's default of no qdisc. *nothing capped on "
      "the NIC*: shaping on a node with no allocation (another state directory), so the veth "
      "keeps its own root and gets no IFB or ingress program; only `netqos_nic_tx` is added to "
      "classify+count. The target is judged on "
      "the uncapped "
      "configurations and on what is delivered: *sent* with nothing attached counts packets "
      "the veth's peer then drops (the veth has no qdisc to push back), so it is shown but "
      "not judged.");
  rep.Line();
  rep.TableHeader({"figure", configs[0].name, configs[1].name, "ratio", configs[2].name, "ratio",
                   configs[3].name, "ratio", configs[4].name, "ratio", configs[5].name, "ratio"});
  for (const auto& m : metrics) {
    auto show = [&](double v) { return m.pps ? Thousands(v) : Fmt(v, 0); };
    std::vector<std::string> row = {m.name, show(median(0, m.field))};
    std::vector<RatioFigure> ratios(configs.size());
    for (size_t c = 1; c < configs.size(); ++c) {
      ratios[c] = ratio(c, m.field);
      row.push_back(show(median(c, m.field)));
      row.push_back(show_ratio(ratios[c]));
    }
    rep.TableRow(row);
    if (!m.judged) continue;
    rep.Target(
        "≥ 0.97× nothing attached: " + m.name,
        "classify+count " + Fmt(ratios[1].median, 3) + "×, shaping with no cap " +
            Fmt(ratios[2].median, 3) + "×",
        ratios[1].median >= 0.97 && ratios[2].median >= 0.97,
        ProgramCostNote(m.field == &TrafficFigures::udp_ingress_rcvd_pps, costs) +
            "; a container with its own leaf (above line rate): " + Fmt(ratios[3].median, 3) +
            "×; the HTB root alone, no netqos: " + Fmt(ratios[4].median, 3) +
            "×; shaping with nothing capped on the NIC (its own root, no IFB): " +
            Fmt(ratios[5].median, 3) + "×");
  }
  rep.Line();

  rep.Line("### Each program's cost from the kernel's counters (HTB mode)");
  rep.Line();
  rep.Line(
      "One more pass of each netqos configuration after the rounds above, with the kernel's BPF "
      "run-time statistics on (`BPF_ENABLE_STATS`, held by the bench only for this pass: they "
      "add two clock reads to every run, so the ratio rounds run without them): each attached "
      "program's `run_time_ns` / `run_cnt` over one " +
      std::to_string(seconds) +
      " s run of each kind of traffic. Both ends of the veth are on this host, so the cgroup "
      "programs (on the cgroup root) also run for the namespace's server. EDT mode is not in "
      "this pass: it needs `sch_fq`, which this VM's kernel lacks; its `netqos_nic_tx` is timed "
      "by the test runs above.");
  rep.Line();
  for (size_t c = 1; c < configs.size(); ++c) {
    const Config& cfg = configs[c];
    if (cfg.daemon != Daemon::kClassify && cfg.daemon != Daemon::kShape) continue;
    // --quick checks the harness: the uncapped shaping configuration reads every kind of
    // program (cgroup links and tc slots).
    if (args.quick && !(cfg.daemon == Daemon::kShape && cfg.cgroup == &cg_free)) continue;
    env.StartDaemon(cfg.daemon == Daemon::kShape, kSpeed);
    if (!env.WaitEntry(*cfg.cgroup, 10s)) {
      throw std::runtime_error("the sender is not in the class map after restart");
    }
    if (cfg.daemon == Daemon::kShape) WaitTcPrograms(env, 10s);
    {
      auto stats = bpf::BpfStatsScope::Enable();
      if (!stats.ok()) throw std::runtime_error(stats.status().message());
      CountedPass(env, cfg.name, *cfg.cgroup, server.port(), seconds, cfg.daemon == Daemon::kShape,
                  cfg.daemon == Daemon::kShape && cfg.cgroup == &cg_free, rep);
    }
    env.StopDaemon();
  }
}

void Run(const Args& args) {
  Report rep("datapath", args);
  rep.Line("## Datapath cost");
  rep.Line();
  rep.Line("`bench/datapath_bench.cc`.");
  rep.Line();
  const ProgramCosts costs = ProgramCost(args, rep);
  Throughput(args, rep, costs);
}

}  // namespace
}  // namespace netqos::bench

int main(int argc, char** argv) {
  const auto args = netqos::bench::ParseArgs(
      argc, argv,
      "Per-packet cost of netqos's BPF programs and veth throughput with netqos (root).");
  if (int code = netqos::bench::CheckRoot("datapath_bench"); code >= 0) return code;
  return netqos::bench::RunMain("datapath_bench", [&] { netqos::bench::Run(args); });
}
