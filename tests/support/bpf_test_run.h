// BPF_PROG_TEST_RUN of an skb program (cgroup_skb or tc) on a crafted packet, with an skb context
// so the test sees the priority the program leaves. The kernel runs it in the calling task, so a
// cgroup_skb program sees the caller's cgroup. Shared by the dataplane tests and the datapath
// benchmark (which times many repeats of the same run).
#pragma once

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <netinet/in.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace netqos::testing {

// Ethernet + IPv4 + TCP (ACK) or UDP header, no payload; addresses and ports in host order.
inline std::vector<uint8_t> Ipv4Packet(uint8_t proto, uint32_t saddr, uint16_t sport,
                                       uint32_t daddr, uint16_t dport) {
  const size_t l4 = proto == IPPROTO_TCP ? sizeof(tcphdr) : sizeof(udphdr);
  std::vector<uint8_t> pkt(sizeof(ethhdr) + sizeof(iphdr) + l4, 0);
  ethhdr eth{};
  eth.h_proto = htons(ETH_P_IP);
  std::memcpy(pkt.data(), &eth, sizeof(eth));
  iphdr ip{};
  ip.version = 4;
  ip.ihl = 5;
  ip.ttl = 64;
  ip.protocol = proto;
  ip.tot_len = htons(static_cast<uint16_t>(sizeof(iphdr) + l4));
  ip.saddr = htonl(saddr);
  ip.daddr = htonl(daddr);
  std::memcpy(pkt.data() + sizeof(eth), &ip, sizeof(ip));
  uint8_t* l4p = pkt.data() + sizeof(eth) + sizeof(ip);
  if (proto == IPPROTO_TCP) {
    tcphdr tcp{};
    tcp.source = htons(sport);
    tcp.dest = htons(dport);
    tcp.doff = 5;
    tcp.ack = 1;
    std::memcpy(l4p, &tcp, sizeof(tcp));
  } else {
    udphdr udp{};
    udp.source = htons(sport);
    udp.dest = htons(dport);
    udp.len = htons(static_cast<uint16_t>(l4));
    std::memcpy(l4p, &udp, sizeof(udp));
  }
  return pkt;
}

struct SkbRunResult {
  int err = 0;                // bpf_prog_test_run_opts' return (0 = ran)
  uint32_t retval = 0;        // the program's verdict
  uint32_t priority = 0;      // skb->priority after the program
  uint64_t tstamp = 0;        // skb->tstamp after the program (a departure time, in EDT mode)
  uint32_t duration_ns = 0;   // kernel-timed average of one run (the kernel divides by repeat)
  std::vector<uint8_t> data;  // the packet as the program left it (the last run's)
};

// Runs the program `repeat` times on pkt (the verdict and priority are those of the last run).
// `ifindex`: the device the packet is on (skb->ifindex, > 1), `ingress_ifindex` the one it was
// received on; 0 leaves them as the kernel sets them.
inline SkbRunResult RunSkbProgram(int prog_fd, std::vector<uint8_t> pkt, uint32_t in_priority,
                                  uint32_t repeat = 1, uint64_t in_tstamp = 0, uint32_t ifindex = 0,
                                  uint32_t ingress_ifindex = 0) {
  __sk_buff ctx_in{};
  ctx_in.priority = in_priority;
  ctx_in.tstamp = in_tstamp;
  ctx_in.ifindex = ifindex;
  ctx_in.ingress_ifindex = ingress_ifindex;
  __sk_buff ctx_out{};
  bpf_test_run_opts opts{};
  opts.sz = sizeof(opts);
  opts.data_in = pkt.data();
  opts.data_size_in = static_cast<uint32_t>(pkt.size());
  opts.ctx_in = &ctx_in;
  opts.ctx_size_in = sizeof(ctx_in);
  opts.ctx_out = &ctx_out;
  opts.ctx_size_out = sizeof(ctx_out);
  opts.repeat = repeat;
  SkbRunResult r;
  r.data.resize(pkt.size() + 256);  // room for a program that grows the packet
  opts.data_out = r.data.data();
  opts.data_size_out = static_cast<uint32_t>(r.data.size());
  r.err = bpf_prog_test_run_opts(prog_fd, &opts);
  r.data.resize(r.err == 0 ? opts.data_size_out : 0);
  r.retval = opts.retval;
  r.priority = ctx_out.priority;
  r.tstamp = ctx_out.tstamp;
  r.duration_ns = opts.duration;
  return r;
}

}  // namespace netqos::testing
