// DSCP on the wire, for the privileged tests: an AF_PACKET capture of the IPv4 UDP and TCP frames
// that reach a device inside a network namespace (the DS byte of each, per destination port, and
// whether its header checksum holds), and a sender placed in a cgroup that sets IP_TOS itself.
#pragma once

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
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace netqos::testing {

// What arrived for one destination port.
struct Seen {
  std::vector<uint8_t> tos;  // one per packet
  int bad_checksums = 0;
};

inline uint16_t Ipv4HeaderSum(const uint8_t* ip, size_t len) {
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
    for (int i = 0; i < 500 && !ready_ && error_.empty(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
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
inline int SendFrom(const std::string& cgroup, const std::string& daddr, uint16_t udp_port,
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

}  // namespace netqos::testing
