// netqos_attack_sender: the traffic of a tenant trying to escape its bandwidth cap, for the
// integration tests (tests/integration/tenant_escape_test.cc). One process, one mode:
//
//   udp-flood --dst IP:PORT [--size N] [--priority P] [--sndbuf B] [--mbps M] [--seconds S]
//       UDP datagrams of N payload bytes (larger than the MTU: IPv4 fragments) from an
//       unconnected socket, SO_PRIORITY P when given (any value, e.g. another container's HTB
//       leaf handle 0x100102), a send buffer of B bytes when given (SO_SNDBUFFORCE: more of its
//       datagrams queued in a leaf at once), paced at M Mbit/s of payload (0 = as fast as it
//       can).
//   raw-flood --ifname DEV --dst-mac MAC --src-ip IP --dst-ip IP [--dst-port P] [--size N]
//             [--priority P] [--sndbuf B] [--mbps M] [--seconds S]
//       Ethernet/IPv4/UDP frames of N bytes (Ethernet header included) written with an AF_PACKET
//       SOCK_RAW socket on DEV: no cgroup_skb hook sees them.
//   try-qdisc-bypass [--ifname DEV]
//       Only setsockopt(SOL_PACKET, PACKET_QDISC_BYPASS, 1) on a fresh AF_PACKET socket (bound to
//       DEV when given). Prints "qdisc_bypass=ok" (exit 0) or "qdisc_bypass=<ERRNO> <text>" (exit
//       1).
//   udp-sink --bind IP:PORT|[IP6]:PORT [--seconds S]
//       Binds, prints "listening", then counts what it receives for S seconds (it never sends).
//   ip-flood --dst IP --proto N [--size N] [--mbps M] [--seconds S]
//       Datagrams of IP protocol N (no ports: ICMP, raw IP) with N payload bytes from a raw
//       socket, IPv4 or IPv6 by the address.
//   ip-sink --bind IP --proto N [--seconds S]
//       A raw socket of protocol N bound to IP: prints "listening", then counts what it receives
//       (payload bytes, the IPv4 header left out) for S seconds.
//   udp6-ext-flood --src IP6 --dst [IP6]:PORT --ext N [--size N] [--mbps M] [--seconds S]
//       IPv6/UDP datagrams of N payload bytes with N destination-options headers before the UDP
//       header, written whole (IPPROTO_RAW): a chain longer than a parser walks hides the ports.
//   try-af-xdp
//       Only socket(AF_XDP) and setsockopt(SOL_XDP, XDP_UMEM_REG) of a small UMEM. Prints
//       "af_xdp=ok" (exit 0) or "af_xdp=<ERRNO> <text>" (exit 1).
//
// Floods print "sent_packets=N sent_bytes=N errors=N seconds=F" (bytes: payload for udp-flood,
// ip-flood and udp6-ext-flood, whole frames for raw-flood) and the sinks "received_datagrams=N
// received_bytes=N" (payload), on stdout at the end. Exit codes: 0 done, 1 refused
// (try-qdisc-bypass), 2 usage, 3 set-up failed (a message on stderr).
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <linux/if_xdp.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

#ifndef PACKET_QDISC_BYPASS
#define PACKET_QDISC_BYPASS 20
#endif
#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef SOL_XDP
#define SOL_XDP 283
#endif

[[noreturn]] void Usage(const std::string& why) {
  std::fprintf(stderr,
               "netqos_attack_sender: %s\n"
               "usage: netqos_attack_sender udp-flood|raw-flood|try-qdisc-bypass|udp-sink|"
               "ip-flood|ip-sink|udp6-ext-flood|try-af-xdp "
               "[--key value]...\n",
               why.c_str());
  std::exit(2);
}

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "netqos_attack_sender: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(3);
}

struct Args {
  std::string mode;
  std::map<std::string, std::string> kv;

  bool Has(const std::string& k) const { return kv.count(k) != 0; }
  std::string Str(const std::string& k, const std::string& def = "") const {
    auto it = kv.find(k);
    if (it != kv.end()) return it->second;
    if (def.empty()) Usage("missing --" + k);
    return def;
  }
  uint64_t Num(const std::string& k, uint64_t def) const {
    auto it = kv.find(k);
    if (it == kv.end()) return def;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(it->second.c_str(), &end, 0);  // 0x... accepted
    if (end == it->second.c_str() || *end != 0) Usage("bad number for --" + k + ": " + it->second);
    return v;
  }
};

Args Parse(int argc, char** argv) {
  if (argc < 2) Usage("no mode");
  Args a;
  a.mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0 || i + 1 >= argc) Usage("bad argument " + k);
    a.kv[k.substr(2)] = argv[++i];
  }
  return a;
}

sockaddr_in ParseEndpoint(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) Usage("want IP:PORT, got " + text);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(std::stoul(text.substr(colon + 1))));
  if (::inet_pton(AF_INET, text.substr(0, colon).c_str(), &sa.sin_addr) != 1) {
    Usage("bad IPv4 address in " + text);
  }
  return sa;
}

in_addr ParseIp(const std::string& text) {
  in_addr a{};
  if (::inet_pton(AF_INET, text.c_str(), &a) != 1) Usage("bad IPv4 address " + text);
  return a;
}

void SetPriority(int fd, const Args& a) {
  if (!a.Has("priority")) return;
  const int prio = static_cast<int>(a.Num("priority", 0));
  if (::setsockopt(fd, SOL_SOCKET, SO_PRIORITY, &prio, sizeof(prio)) != 0) Fail("SO_PRIORITY");
}

void SetSendBuffer(int fd, const Args& a) {
  if (!a.Has("sndbuf")) return;
  const int bytes = static_cast<int>(a.Num("sndbuf", 0));
  if (::setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof(bytes)) != 0) {
    Fail("SO_SNDBUFFORCE");
  }
}

// Sends with `send_one` (true = sent) for --seconds, paced to --mbps of `bytes_each` (0 = flat
// out), and prints the totals.
template <typename F>
int Flood(const Args& a, size_t bytes_each, F send_one) {
  const double seconds = static_cast<double>(a.Num("seconds", 5));
  const double bytes_per_second = static_cast<double>(a.Num("mbps", 0)) * 1e6 / 8;
  const auto t0 = Clock::now();
  const auto end =
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  uint64_t packets = 0, bytes = 0, errors = 0;
  for (auto now = t0; now < end; now = Clock::now()) {
    if (bytes_per_second > 0) {
      const double due = std::chrono::duration<double>(now - t0).count() * bytes_per_second;
      if (static_cast<double>(bytes) >= due) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        continue;
      }
    }
    // A few sends between clock reads.
    for (int i = 0; i < 8; ++i) {
      if (send_one()) {
        ++packets;
        bytes += bytes_each;
      } else {
        ++errors;
      }
    }
  }
  std::printf("sent_packets=%llu sent_bytes=%llu errors=%llu seconds=%.3f\n",
              static_cast<unsigned long long>(packets), static_cast<unsigned long long>(bytes),
              static_cast<unsigned long long>(errors),
              std::chrono::duration<double>(Clock::now() - t0).count());
  return 0;
}

int UdpFlood(const Args& a) {
  const sockaddr_in dst = ParseEndpoint(a.Str("dst"));
  const size_t size = a.Num("size", 1400);
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) Fail("socket(AF_INET, SOCK_DGRAM)");
  SetPriority(fd, a);
  SetSendBuffer(fd, a);
  const std::vector<char> payload(size, 'x');
  return Flood(a, size, [&] {
    return ::sendto(fd, payload.data(), payload.size(), 0, reinterpret_cast<const sockaddr*>(&dst),
                    sizeof(dst)) == static_cast<ssize_t>(payload.size());
  });
}

bool ParseMac(const std::string& text, uint8_t out[6]) {
  unsigned v[6];
  if (std::sscanf(text.c_str(), "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) !=
      6) {
    return false;
  }
  for (int i = 0; i < 6; ++i) out[i] = static_cast<uint8_t>(v[i]);
  return true;
}

uint16_t IpChecksum(const void* data, size_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < len; i += 2) sum += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
  if (len % 2) sum += static_cast<uint32_t>(p[len - 1] << 8);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return htons(static_cast<uint16_t>(~sum & 0xffff));
}

int RawFlood(const Args& a) {
  const std::string ifname = a.Str("ifname");
  const unsigned ifindex = ::if_nametoindex(ifname.c_str());
  if (ifindex == 0) Fail("if_nametoindex " + ifname);
  uint8_t dst_mac[6], src_mac[6];
  if (!ParseMac(a.Str("dst-mac"), dst_mac)) Usage("bad --dst-mac");
  const in_addr src_ip = ParseIp(a.Str("src-ip")), dst_ip = ParseIp(a.Str("dst-ip"));
  const uint16_t dst_port = static_cast<uint16_t>(a.Num("dst-port", 9));
  const size_t size = a.Num("size", 1000);
  constexpr size_t kHeaders = sizeof(ether_header) + sizeof(iphdr) + sizeof(udphdr);
  if (size < kHeaders || size > 1514) Usage("--size must be 42..1514 (a whole frame)");

  // Protocol 0: this socket only sends, nothing is queued to it on receive.
  const int fd = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (fd < 0) Fail("socket(AF_PACKET, SOCK_RAW)");
  SetPriority(fd, a);
  SetSendBuffer(fd, a);
  ifreq ifr{};
  std::snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname.c_str());
  if (::ioctl(fd, SIOCGIFHWADDR, &ifr) != 0) Fail("SIOCGIFHWADDR " + ifname);
  std::memcpy(src_mac, ifr.ifr_hwaddr.sa_data, 6);

  std::vector<uint8_t> frame(size, 0);
  auto* eth = reinterpret_cast<ether_header*>(frame.data());
  std::memcpy(eth->ether_dhost, dst_mac, 6);
  std::memcpy(eth->ether_shost, src_mac, 6);
  eth->ether_type = htons(ETHERTYPE_IP);
  auto* ip = reinterpret_cast<iphdr*>(frame.data() + sizeof(ether_header));
  ip->version = 4;
  ip->ihl = 5;
  ip->tot_len = htons(static_cast<uint16_t>(size - sizeof(ether_header)));
  ip->id = htons(0x4e51);
  ip->frag_off = htons(IP_DF);
  ip->ttl = 64;
  ip->protocol = IPPROTO_UDP;
  ip->saddr = src_ip.s_addr;
  ip->daddr = dst_ip.s_addr;
  ip->check = IpChecksum(ip, sizeof(iphdr));
  auto* udp = reinterpret_cast<udphdr*>(frame.data() + sizeof(ether_header) + sizeof(iphdr));
  udp->source = htons(40000);
  udp->dest = htons(dst_port);
  udp->len = htons(static_cast<uint16_t>(size - sizeof(ether_header) - sizeof(iphdr)));
  udp->check = 0;  // none (IPv4 allows it)

  sockaddr_ll to{};
  to.sll_family = AF_PACKET;
  to.sll_protocol = htons(ETH_P_IP);
  to.sll_ifindex = static_cast<int>(ifindex);
  to.sll_halen = 6;
  std::memcpy(to.sll_addr, dst_mac, 6);
  return Flood(a, size, [&] {
    return ::sendto(fd, frame.data(), frame.size(), 0, reinterpret_cast<const sockaddr*>(&to),
                    sizeof(to)) == static_cast<ssize_t>(frame.size());
  });
}

int TryQdiscBypass(const Args& a) {
  const int fd = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (fd < 0) Fail("socket(AF_PACKET, SOCK_RAW)");
  if (a.Has("ifname")) {
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_ifindex = static_cast<int>(::if_nametoindex(a.Str("ifname").c_str()));
    if (sll.sll_ifindex == 0) Fail("if_nametoindex " + a.Str("ifname"));
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&sll), sizeof(sll)) != 0) Fail("bind");
  }
  const int one = 1;
  if (::setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)) == 0) {
    std::printf("qdisc_bypass=ok\n");
    return 0;
  }
  const int e = errno;
  const char* name = e == EPERM ? "EPERM" : e == EACCES ? "EACCES" : e == EINVAL ? "EINVAL" : "E?";
  std::printf("qdisc_bypass=%s %d %s\n", name, e, std::strerror(e));
  return 1;
}

// An IPv4 or IPv6 address with a port ("10.1.2.3:80", "[fd00::1]:80") or without one.
sockaddr_storage ParseAny(const std::string& text, uint16_t port) {
  sockaddr_storage ss{};
  std::string host = text;
  if (!host.empty() && host.front() == '[') host = host.substr(1, host.find(']') - 1);
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
  } else if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
  } else {
    Usage("bad address " + text);
  }
  return ss;
}

socklen_t LengthOf(const sockaddr_storage& ss) {
  return ss.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
}

int IpFlood(const Args& a) {
  const int proto = static_cast<int>(a.Num("proto", 253));
  const sockaddr_storage dst = ParseAny(a.Str("dst"), 0);
  const size_t size = a.Num("size", 1400);
  const int fd = ::socket(dst.ss_family, SOCK_RAW | SOCK_CLOEXEC, proto);
  if (fd < 0) Fail("socket(SOCK_RAW, " + std::to_string(proto) + ")");
  // ICMP needs a type a receiver does not answer with an error: an echo request (8, 128 in
  // ICMPv6); the kernel fills in the ICMPv6 checksum.
  std::vector<uint8_t> payload(size, 'x');
  if (proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6) {
    payload[0] = proto == IPPROTO_ICMP ? 8 : 128;
    payload[1] = 0;
    payload[2] = payload[3] = 0;
    if (proto == IPPROTO_ICMP) {
      const uint16_t sum = IpChecksum(payload.data(), payload.size());
      std::memcpy(&payload[2], &sum, 2);
    }
  }
  return Flood(a, size, [&] {
    return ::sendto(fd, payload.data(), payload.size(), 0, reinterpret_cast<const sockaddr*>(&dst),
                    LengthOf(dst)) == static_cast<ssize_t>(payload.size());
  });
}

// Prints "listening", then counts what `fd` receives for --seconds; with ipv4_header, each
// datagram starts with an IPv4 header, which is not payload.
int Sink(const Args& a, int fd, bool ipv4_header) {
  std::printf("listening\n");
  std::fflush(stdout);
  const auto end = Clock::now() + std::chrono::seconds(a.Num("seconds", 5));
  std::vector<char> buf(65536);
  uint64_t datagrams = 0, bytes = 0;
  for (auto now = Clock::now(); now < end; now = Clock::now()) {
    pollfd p{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - now).count();
    if (::poll(&p, 1, static_cast<int>(left > 100 ? 100 : left + 1)) <= 0) continue;
    for (;;) {
      const ssize_t n = ::recv(fd, buf.data(), buf.size(), MSG_DONTWAIT);
      if (n < 0) break;
      size_t header = 0;
      if (ipv4_header && n > 0) header = static_cast<size_t>(buf[0] & 0x0f) * 4;
      ++datagrams;
      bytes += static_cast<uint64_t>(n) - std::min<uint64_t>(header, static_cast<uint64_t>(n));
    }
  }
  std::printf("received_datagrams=%llu received_bytes=%llu\n",
              static_cast<unsigned long long>(datagrams), static_cast<unsigned long long>(bytes));
  return 0;
}

int UdpSink(const Args& a) {
  const std::string bind = a.Str("bind");
  const size_t colon = bind.rfind(':');
  if (colon == std::string::npos) Usage("want IP:PORT or [IP6]:PORT, got " + bind);
  const sockaddr_storage at =
      ParseAny(bind.substr(0, colon), static_cast<uint16_t>(std::stoul(bind.substr(colon + 1))));
  const int fd = ::socket(at.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) Fail("socket(SOCK_DGRAM)");
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&at), LengthOf(at)) != 0) Fail("bind");
  const int big = 8 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
  return Sink(a, fd, false);
}

int IpSink(const Args& a) {
  const int proto = static_cast<int>(a.Num("proto", 253));
  const sockaddr_storage at = ParseAny(a.Str("bind"), 0);
  const int fd = ::socket(at.ss_family, SOCK_RAW | SOCK_CLOEXEC, proto);
  if (fd < 0) Fail("socket(SOCK_RAW, " + std::to_string(proto) + ")");
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&at), LengthOf(at)) != 0) Fail("bind");
  const int big = 8 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
  return Sink(a, fd, at.ss_family == AF_INET);
}

// The one's complement sum of `len` bytes, folded, not complemented.
uint32_t Sum16(const uint8_t* p, size_t len, uint32_t sum) {
  for (size_t i = 0; i + 1 < len; i += 2) sum += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
  if (len % 2) sum += static_cast<uint32_t>(p[len - 1] << 8);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return sum;
}

int Udp6ExtFlood(const Args& a) {
  in6_addr src{};
  if (::inet_pton(AF_INET6, a.Str("src").c_str(), &src) != 1) Usage("bad --src");
  const std::string dst_text = a.Str("dst");
  const size_t colon = dst_text.rfind(':');
  if (dst_text.empty() || dst_text.front() != '[' || colon == std::string::npos) {
    Usage("want --dst [IP6]:PORT");
  }
  const sockaddr_storage dst = ParseAny(dst_text.substr(0, colon), 0);
  if (dst.ss_family != AF_INET6) Usage("--dst must be IPv6");
  const auto port = static_cast<uint16_t>(std::stoul(dst_text.substr(colon + 1)));
  const size_t ext = a.Num("ext", 8);
  const size_t size = a.Num("size", 1000);
  constexpr size_t kOpt = 8;  // a destination-options header with 6 bytes of padding
  const size_t l4 = sizeof(ip6_hdr) + ext * kOpt;
  if (l4 + sizeof(udphdr) + size > 1500) Usage("--ext and --size exceed 1500 bytes");

  std::vector<uint8_t> pkt(l4 + sizeof(udphdr) + size, 'x');
  auto* ip6 = reinterpret_cast<ip6_hdr*>(pkt.data());
  ip6->ip6_flow = htonl(6u << 28);
  ip6->ip6_plen = htons(static_cast<uint16_t>(pkt.size() - sizeof(ip6_hdr)));
  constexpr uint8_t kDstOpts = IPPROTO_DSTOPTS, kUdp = IPPROTO_UDP;
  ip6->ip6_nxt = ext > 0 ? kDstOpts : kUdp;
  ip6->ip6_hlim = 64;
  ip6->ip6_src = src;
  ip6->ip6_dst = reinterpret_cast<const sockaddr_in6*>(&dst)->sin6_addr;
  for (size_t i = 0; i < ext; ++i) {
    uint8_t* h = pkt.data() + sizeof(ip6_hdr) + i * kOpt;
    h[0] = i + 1 < ext ? kDstOpts : kUdp;  // next header
    h[1] = 0;                              // length: 8 bytes
    h[2] = 1;                              // PadN option, 4 bytes of padding
    h[3] = 4;
    std::memset(h + 4, 0, 4);
  }
  auto* udp = reinterpret_cast<udphdr*>(pkt.data() + l4);
  udp->source = htons(40001);
  udp->dest = htons(port);
  udp->len = htons(static_cast<uint16_t>(sizeof(udphdr) + size));
  udp->check = 0;
  // The pseudo-header: both addresses, the UDP length, the next header.
  uint32_t sum = Sum16(reinterpret_cast<const uint8_t*>(&ip6->ip6_src), 32, 0);
  sum += static_cast<uint32_t>(sizeof(udphdr) + size);
  sum += kUdp;
  sum = Sum16(pkt.data() + l4, sizeof(udphdr) + size, sum);
  const auto check = static_cast<uint16_t>(~sum & 0xffff);
  udp->check = htons(check == 0 ? 0xffff : check);

  const int fd = ::socket(AF_INET6, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
  if (fd < 0) Fail("socket(AF_INET6, SOCK_RAW, IPPROTO_RAW)");
  return Flood(a, size, [&] {
    return ::sendto(fd, pkt.data(), pkt.size(), 0, reinterpret_cast<const sockaddr*>(&dst),
                    LengthOf(dst)) == static_cast<ssize_t>(pkt.size());
  });
}

int TryAfXdp() {
  const int fd = ::socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
  int e = 0;
  if (fd < 0) {
    e = errno;
  } else {
    constexpr size_t kSize = 16 * 4096;
    void* area = ::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED) Fail("mmap");
    xdp_umem_reg reg{};
    reg.addr = reinterpret_cast<uint64_t>(area);
    reg.len = kSize;
    reg.chunk_size = 4096;
    if (::setsockopt(fd, SOL_XDP, XDP_UMEM_REG, &reg, sizeof(reg)) == 0) {
      std::printf("af_xdp=ok\n");
      return 0;
    }
    e = errno;
  }
  const char* name = e == EPERM ? "EPERM" : e == EAFNOSUPPORT ? "EAFNOSUPPORT" : "E?";
  std::printf("af_xdp=%s %d %s\n", name, e, std::strerror(e));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = Parse(argc, argv);
  int code = 2;
  if (a.mode == "udp-flood") {
    code = UdpFlood(a);
  } else if (a.mode == "raw-flood") {
    code = RawFlood(a);
  } else if (a.mode == "try-qdisc-bypass") {
    code = TryQdiscBypass(a);
  } else if (a.mode == "udp-sink") {
    code = UdpSink(a);
  } else if (a.mode == "ip-flood") {
    code = IpFlood(a);
  } else if (a.mode == "ip-sink") {
    code = IpSink(a);
  } else if (a.mode == "udp6-ext-flood") {
    code = Udp6ExtFlood(a);
  } else if (a.mode == "try-af-xdp") {
    code = TryAfXdp();
  } else {
    Usage("unknown mode " + a.mode);
  }
  std::fflush(stdout);
  return code;
}
