// DSCP marking on the wire: the real netqosd with --qos-level-dscp enforcing a veth into a
// network namespace; container cgroups (one pod with a netqos.io/dscp annotation, one with a bad
// one, one of the marked level, one of a level without a DSCP) send UDP and TCP from processes
// placed in them; an AF_PACKET socket on the peer end, inside the namespace, captures what
// arrives. Asserted: the DS field of each container's packets, the ECN bits the sender chose,
// the IPv4 header checksum, the pinned class map and netqosctl's view. Root only; DaemonFixture
// removes everything (also on failure) and the case checks that nothing was left behind.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "support/daemon_fixture.h"

namespace {

using namespace std::chrono_literals;
using netqos::testing::DaemonFixture;
using netqos::testing::WaitFor;
using nlohmann::json;

constexpr char kDscpKey[] = "netqos.io/dscp";
constexpr char kQosKey[] = "katalyst.kubewharf.io/qos_level";

// What arrived for one destination port.
struct Seen {
  std::vector<uint8_t> tos;  // one per packet
  int bad_checksums = 0;
};

uint16_t Ipv4HeaderSum(const uint8_t* ip, size_t len) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < len; i += 2) sum += static_cast<uint32_t>(ip[i] << 8 | ip[i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum & 0xffff);
}

// An AF_PACKET socket on `dev` in namespace `ns` (a thread of its own enters the namespace), kept
// reading IPv4 UDP and TCP frames to `daddr` until Stop(). Ready() once the socket is bound.
class Capture {
 public:
  Capture(const std::string& ns, const std::string& dev, const std::string& daddr) {
    inet_pton(AF_INET, daddr.c_str(), &daddr_);
    thread_ = std::thread([this, ns, dev] { Run(ns, dev); });
  }
  ~Capture() { Stop(); }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;

  bool WaitReady() {
    for (int i = 0; i < 500 && !ready_ && error_.empty(); ++i) std::this_thread::sleep_for(10ms);
    return ready_;
  }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::string error() const { return error_; }
  std::map<uint16_t, Seen> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  void Run(const std::string& ns, const std::string& dev) {
    const int nsfd = ::open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
    if (nsfd < 0 || ::setns(nsfd, CLONE_NEWNET) != 0) {
      error_ = "setns " + ns + ": " + std::strerror(errno);
      if (nsfd >= 0) ::close(nsfd);
      return;
    }
    ::close(nsfd);
    const int fd = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = static_cast<int>(::if_nametoindex(dev.c_str()));
    timeval tv{0, 100000};
    if (fd < 0 || sll.sll_ifindex == 0 ||
        ::bind(fd, reinterpret_cast<sockaddr*>(&sll), sizeof(sll)) != 0 ||
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0) {
      error_ = "AF_PACKET socket on " + dev + ": " + std::strerror(errno);
      if (fd >= 0) ::close(fd);
      return;
    }
    ready_ = true;
    uint8_t buf[2048];
    while (!stop_) {
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n < static_cast<ssize_t>(sizeof(ethhdr) + 20 + 4)) continue;
      ethhdr eth{};
      std::memcpy(&eth, buf, sizeof(eth));
      if (eth.h_proto != htons(ETH_P_IP)) continue;
      const uint8_t* ip = buf + sizeof(ethhdr);
      const size_t ihl = static_cast<size_t>(ip[0] & 0xf) * 4;
      uint32_t daddr = 0;
      std::memcpy(&daddr, ip + 16, 4);
      if (ip[0] >> 4 != 4 || ihl < 20 || daddr != daddr_) continue;
      if (ip[9] != IPPROTO_UDP && ip[9] != IPPROTO_TCP) continue;
      if (static_cast<size_t>(n) < sizeof(ethhdr) + ihl + 4) continue;
      uint16_t dport = 0;
      std::memcpy(&dport, ip + ihl + 2, 2);
      std::lock_guard<std::mutex> lock(mu_);
      Seen& s = seen_[ntohs(dport)];
      s.tos.push_back(ip[1]);
      if (Ipv4HeaderSum(ip, ihl) != 0) ++s.bad_checksums;
    }
    ::close(fd);
  }

  uint32_t daddr_ = 0;
  std::thread thread_;
  std::atomic<bool> ready_{false}, stop_{false};
  std::string error_;
  std::mutex mu_;
  std::map<uint16_t, Seen> seen_;
};

// A child placed in `cgroup` sends `count` UDP datagrams with IP_TOS `tos` to daddr:udp_port and
// makes one TCP connection attempt (its SYN) to daddr:tcp_port. 0 when every step worked.
int SendFrom(const std::string& cgroup, const std::string& daddr, uint16_t udp_port,
             uint16_t tcp_port, int tos, int count) {
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    {
      std::ofstream procs(cgroup + "/cgroup.procs");
      procs << "0" << std::flush;
      if (!procs) ::_exit(10);
    }
    sockaddr_in to{};
    to.sin_family = AF_INET;
    if (inet_pton(AF_INET, daddr.c_str(), &to.sin_addr) != 1) ::_exit(11);
    const int u = ::socket(AF_INET, SOCK_DGRAM, 0);
    if (u < 0 || ::setsockopt(u, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)) != 0) ::_exit(12);
    to.sin_port = htons(udp_port);
    const char payload[64] = "dscp";
    for (int i = 0; i < count; ++i) {
      // ICMP port unreachable from the peer may fail a later send once: not an error here.
      (void)::sendto(u, payload, sizeof(payload), 0, reinterpret_cast<sockaddr*>(&to), sizeof(to));
      ::usleep(2000);
    }
    const int t = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (t < 0 || ::setsockopt(t, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)) != 0) ::_exit(13);
    to.sin_port = htons(tcp_port);
    (void)::connect(t, reinterpret_cast<sockaddr*>(&to), sizeof(to));  // EINPROGRESS
    ::usleep(200000);
    ::_exit(0);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

}  // namespace

TEST_CASE(
    "dscp: the enforced NIC marks each container's packets with its annotation's or level's "
    "DSCP, ECN bits and IPv4 checksum intact",
    "[enforcement]") {
  DaemonFixture env({.tag = "q", .subnet = 226});
  auto& annotated = env.AddPod(1);  // shared_cores, annotation AF41 (34) over the level's 46
  annotated.annotations[kDscpKey] = "af41";
  auto& level = env.AddPod(2);  // shared_cores: the level's 46 (EF)
  auto& bad = env.AddPod(3);    // a bad annotation: the level's 46, and a problem
  bad.annotations[kDscpKey] = "64\" x=y";
  auto& unmarked = env.AddPod(4);  // reclaimed_cores: no DSCP configured
  unmarked.annotations[kQosKey] = "reclaimed_cores";
  env.WritePods();
  const std::string cg_annotated = env.MakeCgroup(annotated);
  const std::string cg_level = env.MakeCgroup(level);
  const std::string cg_bad = env.MakeCgroup(bad);
  const std::string cg_unmarked = env.MakeCgroup(unmarked);
  env.StartDaemon({"--qos-level-dscp=shared_cores=EF,system_cores=CS6"});

  // The pinned class map: the DSCP byte and its flag.
  auto marked_with = [&](const std::string& cg, int want) {
    return WaitFor(
               [&] {
                 auto c = env.ClassOf(cg);
                 if (!c) return false;
                 if (want < 0) return (c->flags & NETQOS_CLASS_F_SET_DSCP) == 0;
                 return (c->flags & NETQOS_CLASS_F_SET_DSCP) != 0 && c->dscp == want;
               },
               5000ms)
        .has_value();
  };
  CHECK(marked_with(cg_annotated, 34));
  CHECK(marked_with(cg_level, 46));
  CHECK(marked_with(cg_bad, 46));
  REQUIRE(marked_with(cg_unmarked, -1));
  REQUIRE(env.ClassOf(cg_unmarked).has_value());

  // The bad annotation is reported, naming the pod and the annotation, its value quoted.
  CHECK(WaitFor(
            [&] {
              return netqos::testing::CountLines(
                         env.Log(), {bad.name, "netqos.io/dscp=", "0..63", "using the shared"}) > 0;
            },
            5000ms)
            .has_value());
  INFO("daemon log:\n" << env.Log());

  const std::string peer_ip = env.veth().peer_ip;
  Capture cap(env.ns(), env.veth().peer, peer_ip);
  INFO("capture: " << cap.error());
  REQUIRE(cap.WaitReady());
  struct Sender {
    std::string cgroup;
    uint16_t udp, tcp;
    int tos;   // what the sender asks for (DSCP 10 + ECN bits)
    int want;  // the DSCP on the wire
  };
  const std::vector<Sender> senders = {
      {cg_annotated, 41001, 41101, 0x29, 34},  // DSCP 10, ECT(1)
      {cg_level, 41002, 41102, 0x2a, 46},      // DSCP 10, ECT(0)
      {cg_bad, 41003, 41103, 0x2b, 46},        // DSCP 10, CE
      {cg_unmarked, 41004, 41104, 0x29, 10},   // left alone
  };
  for (const auto& s : senders) {
    INFO("cgroup " << s.cgroup);
    CHECK(SendFrom(s.cgroup, peer_ip, s.udp, s.tcp, s.tos, 20) == 0);
  }
  std::this_thread::sleep_for(300ms);
  cap.Stop();
  auto seen = cap.Take();
  for (const auto& s : senders) {
    INFO("cgroup " << s.cgroup << " udp port " << s.udp);
    const Seen& u = seen[s.udp];
    CHECK(u.tos.size() >= 10);
    for (uint8_t tos : u.tos) {
      CHECK(tos >> 2 == s.want);
      CHECK((tos & 0x3) == (s.tos & 0x3));  // the sender's ECN codepoint
    }
    CHECK(u.bad_checksums == 0);
    // TCP: the SYN (and its retransmits); TCP clears the ECN bits of IP_TOS itself.
    const Seen& t = seen[s.tcp];
    CHECK(!t.tos.empty());
    for (uint8_t tos : t.tos) CHECK(tos >> 2 == s.want);
    CHECK(t.bad_checksums == 0);
  }

  // netqosctl shows each container's DSCP, from the pinned map and from the daemon.
  const auto r = env.Ctl({"classes", "--json", "--bpf-pin-dir=" + env.PinDir()});
  INFO("netqosctl: " << r.output);
  REQUIRE(r.exit_code == 0);
  const json doc = json::parse(r.output);
  std::map<uint64_t, json> dscp_of;
  for (const auto& c : doc.at("containers")) dscp_of[c.at("cgroup_id")] = c.at("dscp");
  CHECK(dscp_of[netqos::testing::InodeOf(cg_annotated)] == json(34));
  CHECK(dscp_of[netqos::testing::InodeOf(cg_level)] == json(46));
  CHECK(dscp_of[netqos::testing::InodeOf(cg_unmarked)].is_null());

  CHECK(env.Leftovers() == "");
}
