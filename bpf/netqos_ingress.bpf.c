// SPDX-License-Identifier: GPL-2.0
/* Ingress classification for the IFB path: attached at tc ingress of a NIC, it finds the local
 * socket a packet is for, takes that socket's cgroup from the tag the cgroup programs left, sets
 * skb->priority to the container's HTB class and redirects to the IFB (if configured) whose HTB
 * shapes it when the class is marked as shaped there. Counting is netqos_rx's, at the socket.
 * skb->sk/bpf_skb_cgroup_id are never used here: on veth they still point to the sending socket
 * of the other namespace.
 */
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>

#include "netqos_maps.bpf.h"

/* Set by the loader before load; 0 = classify and count only, no redirect. */
const volatile __u32 cfg_ifb_ifindex = 0;
/* Set by the loader: packets of no class (no local socket, not tagged, not in the class map) go
 * to the IFB too. Only worth it when the unclassified level's ceiling is below the link.
 */
const volatile __u32 cfg_redirect_unclassified = 0;

#define NETQOS_IP_MF 0x2000
#define NETQOS_IP_OFFSET 0x1fff

/* Fills tuple from the packet (as received: saddr = remote, which is what the lookup helpers
 * expect) and returns the L4 protocol, or 0 when the packet is not plain TCP/UDP over IP.
 */
static __always_inline int netqos_parse(struct __sk_buff *skb, struct bpf_sock_tuple *tuple,
					__u32 *tuple_size)
{
	__u32 l4_off;
	__u8 proto;

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		struct iphdr iph;

		if (bpf_skb_load_bytes(skb, ETH_HLEN, &iph, sizeof(iph)))
			return 0;
		if (iph.ihl < 5 || (iph.frag_off & bpf_htons(NETQOS_IP_MF | NETQOS_IP_OFFSET)))
			return 0; /* fragments carry no (or not all) ports */
		proto = iph.protocol;
		tuple->ipv4.saddr = iph.saddr;
		tuple->ipv4.daddr = iph.daddr;
		l4_off = ETH_HLEN + iph.ihl * 4;
		*tuple_size = sizeof(tuple->ipv4);
		if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
			return 0;
		if (bpf_skb_load_bytes(skb, l4_off, &tuple->ipv4.sport, 2 * sizeof(__be16)))
			return 0;
		return proto;
	}
	if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr ip6h;

		if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip6h, sizeof(ip6h)))
			return 0;
		/* Extension headers are not walked: such packets stay unclassified. */
		proto = ip6h.nexthdr;
		if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
			return 0;
		__builtin_memcpy(tuple->ipv6.saddr, &ip6h.saddr, sizeof(tuple->ipv6.saddr));
		__builtin_memcpy(tuple->ipv6.daddr, &ip6h.daddr, sizeof(tuple->ipv6.daddr));
		l4_off = ETH_HLEN + sizeof(ip6h);
		*tuple_size = sizeof(tuple->ipv6);
		if (bpf_skb_load_bytes(skb, l4_off, &tuple->ipv6.sport, 2 * sizeof(__be16)))
			return 0;
		return proto;
	}
	return 0;
}

/* shaped: the packet's HTB class on the IFB can hold it back. The others pass straight on: the
 * detour through the IFB and its qdisc lock costs them a large share of their packet rate
 * (docs/benchmarks.md) and buys nothing.
 */
static __always_inline int netqos_done(int shaped)
{
	if (cfg_ifb_ifindex && shaped)
		return bpf_redirect(cfg_ifb_ifindex, 0);
	return TC_ACT_OK;
}

SEC("tc")
int netqos_ingress(struct __sk_buff *skb)
{
	struct bpf_sock_tuple tuple = {};
	__u32 tuple_size = 0;
	struct bpf_sock *sk;
	__u64 cgroup_id = 0;
	int proto;

	proto = netqos_parse(skb, &tuple, &tuple_size);
	if (!proto)
		return netqos_done(cfg_redirect_unclassified);
	if (proto == IPPROTO_TCP)
		sk = bpf_sk_lookup_tcp(skb, &tuple, tuple_size, BPF_F_CURRENT_NETNS, 0);
	else
		sk = bpf_sk_lookup_udp(skb, &tuple, tuple_size, BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return netqos_done(cfg_redirect_unclassified);

	struct netqos_sock_tag *tag = bpf_sk_storage_get(&NETQOS_MAP_SOCK_TAG, sk, 0, 0);

	if (tag)
		cgroup_id = tag->cgroup_id;
	bpf_sk_release(sk);
	if (!cgroup_id)
		return netqos_done(cfg_redirect_unclassified);

	struct netqos_class *cls = bpf_map_lookup_elem(&NETQOS_MAP_CLASS, &cgroup_id);

	if (!cls)
		return netqos_done(cfg_redirect_unclassified);
	if (cls->priority)
		skb->priority = cls->priority;
	/* Not counted here: netqos_rx counts the packet when it reaches the socket. */
	return netqos_done(cls->flags & NETQOS_CLASS_F_INGRESS_SHAPED);
}

char LICENSE[] SEC("license") = "GPL";
