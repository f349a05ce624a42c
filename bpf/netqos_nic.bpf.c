// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* The tc programs on an enforced NIC (cls_bpf on its clsact qdisc, one instance per NIC).
 *
 * netqos_nic_tx (egress) gives every packet the NIC sends its class, whatever the sender put in
 * skb->priority (in EDT mode it also paces capped containers, see cfg_edt): the class of the
 * sending socket's container (any socket family, AF_PACKET included, and processes in cgroups below
 * a container's), else the class a pod's veth wrote into the packet's carrier (NETQOS_CARRIER_FLAG:
 * a pod behind a CNI, masqueraded or not), else of the pod whose address is the packet's source,
 * else of the pod whose address is the inner source of a tunnel packet (VXLAN, Geneve, IPIP,
 * IPv6-in-IPv4: an overlay carried by this NIC), else 0, the HTB default class. It counts the
 * packets the cgroup programs never see (sockets that are neither AF_INET nor AF_INET6), and
 * marks the DSCP of classes that ask for it (NETQOS_CLASS_F_SET_DSCP, see netqos_set_dscp).
 *
 * netqos_ingress finds whose a received packet is: the pod whose address is its destination, or
 * the local socket it is for (tagged with its container by the cgroup programs), or the owner
 * netqos_rx learned for its addresses (packets without ports); sets skb->priority to that
 * container's class and, when the class is shaped on the NIC's IFB (if configured), leaves the
 * packet to the next filter, which redirects it there with act_mirred
 * (userspace/bpf/nic_attach.h). A pod netqos classifies at its veth (NETQOS_CLASS_F_VETH) is
 * shaped there instead, after the node's DNAT and decapsulation. Fragments: a pod address is in
 * every fragment; for local sockets the first fragment's lookup is remembered for the later ones
 * of the same datagram. Counting is netqos_rx's, at the socket. skb->sk/bpf_skb_cgroup_id are
 * never used at ingress: on veth they still point to the sending socket of the other namespace.
 */
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>

#include "netqos_maps.bpf.h"

/* Set by the loader: this NIC runs in EDT mode (mq root, fq under each TX queue). netqos_nic_tx
 * then gives each capped container's packets a departure time from its rate (NETQOS_MAP_EDT),
 * which fq enforces, and skb->priority names a QoS level's fq band instead of an HTB leaf.
 */
const volatile __u32 cfg_edt = 0;
/* EDT: a packet that would leave further than this in the future is dropped rather than queued:
 * a sender faster than its rate (a UDP flood) is held there instead of filling fq for seconds.
 */
const volatile __u64 cfg_edt_horizon_ns = 2000000000ULL;

/* Set by the loader: NETQOS_UNMARKED_DSCP_ON | dscp marks every packet whose class sets no DSCP
 * (and every packet of no class) with that DSCP, so a sender's IP_TOS never chooses the fabric's
 * priority; 0 leaves them alone.
 */
const volatile __u32 cfg_unmarked_dscp = 0;

/* Set by the loader before load: non-zero = the NIC has an IFB, and the filter after this one
 * redirects to it what this program gives TC_ACT_UNSPEC; 0 = classify only, no redirect.
 */
const volatile __u32 cfg_redirect_to_ifb = 0;
/* Set by the loader: packets of no class (no local socket, not tagged, not in the class map) go
 * to the IFB too. Only worth it when the unclassified level's ceiling is below the link.
 */
const volatile __u32 cfg_redirect_unclassified = 0;

#define NETQOS_IP_MF 0x2000
#define NETQOS_IP_OFFSET 0x1fff
#define NETQOS_IP6_OFFSET 0xfff8
#define NETQOS_IP6_MF 0x0001
/* Extension headers walked before giving up on an IPv6 packet's transport header. Longer chains
 * to a host-namespace socket are placed by the owner netqos_rx learned (NETQOS_MAP_RX_OWNER).
 */
#define NETQOS_MAX_EXT_HDRS 16

/* Set by the loader: the UDP destination ports of the VXLAN and Geneve overlays whose inner
 * packets netqos_nic_tx classifies by their source pod (0 = none). VXLAN's IANA port and Linux's
 * own default (Flannel, Cilium), Geneve's IANA port.
 */
const volatile __u16 cfg_vxlan_port = 4789;
const volatile __u16 cfg_vxlan_port2 = 8472;
const volatile __u16 cfg_geneve_port = 6081;

#define NETQOS_ETH_P_TEB 0x6558 /* Transparent Ethernet Bridging: Geneve carrying a frame */

/* The IPv6 fragment header (the kernel's struct frag_hdr is not UAPI). */
struct netqos_frag_hdr {
	__u8 nexthdr;
	__u8 reserved;
	__be16 frag_off;
	__be32 identification;
};

struct netqos_pkt {
	struct netqos_addr saddr; /* as received: saddr = remote at ingress */
	struct netqos_addr daddr;
	__u32 l4_off;
	__u32 frag_id;
	__u8 proto; /* transport protocol, after IPv6 extension headers */
	__u8 ipv6;
	__u8 fragment; /* a fragment of a larger datagram */
	__u8 ports;    /* the transport header is here: not a fragment, or the first one */
};

static __always_inline void netqos_v4_addr(struct netqos_addr *a, __be32 v4)
{
	a->addr[0] = 0;
	a->addr[1] = 0;
	a->addr[2] = bpf_htonl(0xffff);
	a->addr[3] = v4;
}

/* Walks IPv6 extension headers from off; fills proto, l4_off and the fragment fields. Returns 0
 * when the chain is longer than NETQOS_MAX_EXT_HDRS or cannot be read (the addresses still hold).
 */
static __always_inline int netqos_walk_ipv6(struct __sk_buff *skb, struct netqos_pkt *pkt,
					    __u8 nexthdr, __u32 off)
{
	for (int i = 0; i < NETQOS_MAX_EXT_HDRS; i++) {
		switch (nexthdr) {
		case IPPROTO_HOPOPTS:
		case IPPROTO_ROUTING:
		case IPPROTO_DSTOPTS: {
			struct ipv6_opt_hdr h;

			if (bpf_skb_load_bytes(skb, off, &h, sizeof(h)))
				return 0;
			nexthdr = h.nexthdr;
			off += ((__u32)h.hdrlen + 1) * 8;
			break;
		}
		case IPPROTO_AH: {
			struct ipv6_opt_hdr h;

			if (bpf_skb_load_bytes(skb, off, &h, sizeof(h)))
				return 0;
			nexthdr = h.nexthdr;
			off += ((__u32)h.hdrlen + 2) * 4;
			break;
		}
		case IPPROTO_FRAGMENT: {
			struct netqos_frag_hdr fh;

			if (bpf_skb_load_bytes(skb, off, &fh, sizeof(fh)))
				return 0;
			nexthdr = fh.nexthdr;
			off += sizeof(fh);
			pkt->fragment = 1;
			pkt->frag_id = fh.identification;
			if (bpf_ntohs(fh.frag_off) & NETQOS_IP6_OFFSET)
				pkt->ports = 0;
			break;
		}
		default:
			pkt->proto = nexthdr;
			pkt->l4_off = off;
			return 1;
		}
	}
	return 0;
}

/* Parses the IP header(s) of an Ethernet frame. Returns 0 when it is not IP or cannot be read. */
static __always_inline int netqos_parse(struct __sk_buff *skb, struct netqos_pkt *pkt)
{
	pkt->ports = 1;
	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		struct iphdr iph;

		if (bpf_skb_load_bytes(skb, ETH_HLEN, &iph, sizeof(iph)) || iph.ihl < 5)
			return 0;
		netqos_v4_addr(&pkt->saddr, iph.saddr);
		netqos_v4_addr(&pkt->daddr, iph.daddr);
		pkt->proto = iph.protocol;
		pkt->l4_off = ETH_HLEN + iph.ihl * 4;
		if (iph.frag_off & bpf_htons(NETQOS_IP_MF | NETQOS_IP_OFFSET)) {
			pkt->fragment = 1;
			pkt->frag_id = iph.id;
			if (iph.frag_off & bpf_htons(NETQOS_IP_OFFSET))
				pkt->ports = 0;
		}
		return 1;
	}
	if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr ip6h;

		if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip6h, sizeof(ip6h)))
			return 0;
		pkt->ipv6 = 1;
		__builtin_memcpy(pkt->saddr.addr, &ip6h.saddr, sizeof(pkt->saddr.addr));
		__builtin_memcpy(pkt->daddr.addr, &ip6h.daddr, sizeof(pkt->daddr.addr));
		if (!netqos_walk_ipv6(skb, pkt, ip6h.nexthdr, ETH_HLEN + sizeof(ip6h)))
			pkt->ports = 0; /* addresses only */
		return 1;
	}
	return 0;
}

/* The cgroup id of the pod owning addr, 0 if it is no pod's. */
static __always_inline __u64 netqos_pod_of(struct netqos_addr *addr)
{
	__u64 *id = bpf_map_lookup_elem(&NETQOS_MAP_POD_ADDR, addr);

	return id ? *id : 0;
}

/* The class a pod's veth carried in skb->queue_mapping (NETQOS_CARRIER_FLAG | slot), NULL when
 * none: whatever NAT did to the addresses, the packet is that container's. The field goes back
 * to 0, so the NIC picks its TX queue as for any packet (it is not an RX queue). Slot 0 is no
 * carrier's (the pod programs never write it): it holds the class map's generation, which must not
 * be taken for a cgroup id.
 */
static __always_inline struct netqos_class *netqos_carried_class(struct __sk_buff *skb,
								 __u64 *cgroup_id)
{
	if (!(skb->queue_mapping & NETQOS_CARRIER_FLAG))
		return 0;
	__u32 slot = skb->queue_mapping & ~NETQOS_CARRIER_FLAG;

	skb->queue_mapping = 0;
	if (slot == NETQOS_CLASS_GEN_SLOT)
		return 0;
	__u64 *id = bpf_map_lookup_elem(&NETQOS_MAP_CARRIER, &slot);

	if (!id || !*id)
		return 0;
	*cgroup_id = *id;
	return bpf_map_lookup_elem(&NETQOS_MAP_CLASS, cgroup_id);
}

/* The owner netqos_rx learned for packets from pkt's source to its destination, 0 if none. */
static __always_inline __u64 netqos_learned_owner(struct netqos_pkt *pkt)
{
	struct netqos_flow_key key = {.saddr = pkt->saddr, .daddr = pkt->daddr};
	__u64 *id = bpf_map_lookup_elem(&NETQOS_MAP_RX_OWNER, &key);

	return id ? *id : 0;
}

/* The pod whose address is the inner source of a tunnel packet the NIC sends (an overlay device
 * encapsulated it on the node, so the outer source is the node's), 0 if it is none or no pod's.
 * VXLAN and Geneve over UDP (cfg_*_port), IPIP and IPv6-in-IPv4/IPv6.
 */
static __always_inline __u64 netqos_tunnel_pod_of(struct __sk_buff *skb, struct netqos_pkt *pkt)
{
	struct netqos_addr inner = {};
	__u32 off = pkt->l4_off;
	__u16 proto = 0; /* the inner packet's ethertype */

	if (!pkt->ports)
		return 0;
	if (pkt->proto == IPPROTO_UDP) {
		struct udphdr udp;

		if (bpf_skb_load_bytes(skb, off, &udp, sizeof(udp)))
			return 0;
		__u16 dport = bpf_ntohs(udp.dest);

		off += sizeof(udp);
		if (dport && (dport == cfg_vxlan_port || dport == cfg_vxlan_port2)) {
			off += 8; /* the VXLAN header, then an Ethernet frame */
			proto = NETQOS_ETH_P_TEB;
		} else if (dport && dport == cfg_geneve_port) {
			__u8 gnv[4]; /* version + option length (4-byte words), flags, protocol */

			if (bpf_skb_load_bytes(skb, off, gnv, sizeof(gnv)))
				return 0;
			proto = (__u16)((gnv[2] << 8) | gnv[3]);
			off += 8 + (gnv[0] & 0x3f) * 4;
		} else {
			return 0;
		}
		if (proto == NETQOS_ETH_P_TEB) {
			__be16 type;

			if (bpf_skb_load_bytes(skb, off + 12, &type, sizeof(type)))
				return 0;
			proto = bpf_ntohs(type);
			off += ETH_HLEN;
		}
	} else if (pkt->proto == IPPROTO_IPIP) {
		proto = ETH_P_IP;
	} else if (pkt->proto == IPPROTO_IPV6) {
		proto = ETH_P_IPV6;
	}
	if (proto == ETH_P_IP) {
		__be32 v4;

		if (bpf_skb_load_bytes(skb, off + __builtin_offsetof(struct iphdr, saddr), &v4,
				       sizeof(v4)))
			return 0;
		netqos_v4_addr(&inner, v4);
	} else if (proto == ETH_P_IPV6) {
		if (bpf_skb_load_bytes(skb, off + __builtin_offsetof(struct ipv6hdr, saddr),
				       inner.addr, sizeof(inner.addr)))
			return 0;
	} else {
		return 0;
	}
	return netqos_pod_of(&inner);
}

/* The container tag of the local TCP/UDP socket the packet is for, 0 if none. *found says whether
 * there is such a socket at all (a host service's has no tag). *state says whether the tag's copy
 * of the class is current (netqos_tag_read): then *cls holds it, or the socket has none.
 */
static __always_inline __u64 netqos_socket_of(struct __sk_buff *skb, struct netqos_pkt *pkt,
					      int *found, struct netqos_class *cls,
					      enum netqos_tag_state *state)
{
	struct bpf_sock_tuple tuple = {};
	__u32 tuple_size;
	struct bpf_sock *sk;
	__u64 cgroup_id = 0;

	if (!pkt->ports || (pkt->proto != IPPROTO_TCP && pkt->proto != IPPROTO_UDP))
		return 0;
	if (pkt->ipv6) {
		__builtin_memcpy(tuple.ipv6.saddr, pkt->saddr.addr, sizeof(tuple.ipv6.saddr));
		__builtin_memcpy(tuple.ipv6.daddr, pkt->daddr.addr, sizeof(tuple.ipv6.daddr));
		if (bpf_skb_load_bytes(skb, pkt->l4_off, &tuple.ipv6.sport, 2 * sizeof(__be16)))
			return 0;
		tuple_size = sizeof(tuple.ipv6);
	} else {
		tuple.ipv4.saddr = pkt->saddr.addr[3];
		tuple.ipv4.daddr = pkt->daddr.addr[3];
		if (bpf_skb_load_bytes(skb, pkt->l4_off, &tuple.ipv4.sport, 2 * sizeof(__be16)))
			return 0;
		tuple_size = sizeof(tuple.ipv4);
	}
	/* Read before the tag: see netqos_sock_class. */
	__u64 gen = netqos_class_generation();

	if (pkt->proto == IPPROTO_TCP)
		sk = bpf_sk_lookup_tcp(skb, &tuple, tuple_size, BPF_F_CURRENT_NETNS, 0);
	else
		sk = bpf_sk_lookup_udp(skb, &tuple, tuple_size, BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return 0;
	*found = 1;
	struct netqos_sock_tag *tag = bpf_sk_storage_get(&NETQOS_MAP_SOCK_TAG, sk, 0, 0);

	if (tag) {
		*state = netqos_tag_read(tag, gen, cls, &cgroup_id);
		/* Stale: the container the tag names, whose entry the caller looks up. */
		if (*state == NETQOS_TAG_STALE)
			cgroup_id = tag->cgroup_id;
	}
	bpf_sk_release(sk);
	return cgroup_id;
}

static __always_inline void netqos_frag_key_of(struct netqos_frag_key *key, struct netqos_pkt *pkt)
{
	key->saddr = pkt->saddr;
	key->daddr = pkt->daddr;
	key->id = pkt->frag_id;
	key->proto = pkt->proto;
}

/* shaped: the packet's HTB class on the IFB can hold it back. TC_ACT_UNSPEC ends this filter
 * without a verdict, so the next one runs: netqos's u32 rule, one pref up, whose act_mirred
 * redirects the packet to the IFB. Not bpf_redirect(): before 6.12 the IFB drops every packet
 * that did not come from act_mirred (it wants the skb marked as redirected, with the device it
 * came from). The others pass straight on (TC_ACT_OK ends classification): the detour through
 * the IFB and its qdisc lock costs them a large share of their packet rate (docs/benchmarks.md)
 * and buys nothing.
 */
static __always_inline int netqos_done(int shaped)
{
	if (cfg_redirect_to_ifb && shaped)
		return TC_ACT_UNSPEC;
	return TC_ACT_OK;
}

SEC("tc")
int netqos_ingress(struct __sk_buff *skb)
{
	struct netqos_pkt pkt = {};
	struct netqos_frag_key key = {};
	struct netqos_class copy;
	enum netqos_tag_state state = NETQOS_TAG_STALE;
	__u64 cgroup_id;

	if (!netqos_parse(skb, &pkt))
		return netqos_done(cfg_redirect_unclassified);
	/* A pod behind a CNI: its address names it in every packet, fragments included. */
	cgroup_id = netqos_pod_of(&pkt.daddr);
	int socket = 0;
	/* Routed on into a pod's veth: only a packet placed by its pod address. A local socket (or
	 * the owner learned at one) of the same pod is in this namespace: nothing else shapes it.
	 */
	int to_veth = cgroup_id != 0;

	if (!cgroup_id && pkt.ports) {
		cgroup_id = netqos_socket_of(skb, &pkt, &socket, &copy, &state);
		if (cgroup_id && pkt.fragment) {
			netqos_frag_key_of(&key, &pkt);
			bpf_map_update_elem(&NETQOS_MAP_FRAG, &key, &cgroup_id, BPF_ANY);
		}
	} else if (!cgroup_id && pkt.fragment) {
		netqos_frag_key_of(&key, &pkt);
		__u64 *first = bpf_map_lookup_elem(&NETQOS_MAP_FRAG, &key);

		if (first)
			cgroup_id = *first;
	}
	/* No socket to look up (ICMP, raw IP, a chain of extension headers too long to walk), or
	 * none found: the owner the socket side learned. A host service's socket ends it.
	 */
	if (!cgroup_id && !socket && !pkt.fragment)
		cgroup_id = netqos_learned_owner(&pkt);
	if (!cgroup_id || state == NETQOS_TAG_NONE)
		return netqos_done(cfg_redirect_unclassified);

	struct netqos_class *cls = &copy;

	if (state != NETQOS_TAG_CLASSIFIED)
		cls = bpf_map_lookup_elem(&NETQOS_MAP_CLASS, &cgroup_id);

	if (!cls)
		return netqos_done(cfg_redirect_unclassified);
	/* Shaped at the pod's veth, after the node's DNAT and decapsulation: not twice. */
	if (to_veth && (cls->flags & NETQOS_CLASS_F_VETH))
		return TC_ACT_OK;
	if (cls->priority)
		skb->priority = cls->priority;
	/* Not counted here: netqos_rx counts the packet when it reaches the socket. */
	return netqos_done(cls->flags & NETQOS_CLASS_F_INGRESS_SHAPED);
}

/* Whether skb's socket is one the cgroup_skb programs saw (and counted): AF_INET or AF_INET6.
 * Request and timewait sockets are TCP's.
 */
static __always_inline int netqos_inet_socket(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;

	if (!sk)
		return 0;
	sk = bpf_sk_fullsock(sk);
	if (!sk)
		return 1;
	return sk->family == 2 /* AF_INET */ || sk->family == 10 /* AF_INET6 */;
}

#define NETQOS_NSEC_PER_SEC 1000000000ULL

/* The fq band of a QoS level (EDT mode). */
static __always_inline __u32 netqos_edt_priority(const struct netqos_class *cls)
{
	if (!cls)
		return NETQOS_EDT_PRIO_BESTEFFORT;
	switch (cls->qos_level) {
	case NETQOS_QOS_SYSTEM:
	case NETQOS_QOS_DEDICATED:
		return NETQOS_EDT_PRIO_INTERACTIVE;
	case NETQOS_QOS_RECLAIMED:
		return NETQOS_EDT_PRIO_BULK;
	default:
		return NETQOS_EDT_PRIO_BESTEFFORT;
	}
}

/* Gives the packet its departure time from the container's rate: the later of the time its
 * sender chose (TCP's own pacing) and the container's previous departure plus this packet's
 * share of the rate. Returns TC_ACT_SHOT beyond the horizon. wire_len counts every segment of a
 * GSO packet with its headers, as they leave the NIC.
 */
static __always_inline int netqos_edt_pace_by(struct __sk_buff *skb, struct netqos_edt *e)
{
	__u64 rate, now, t, delay, next;

	if (!e)
		return TC_ACT_OK;
	rate = e->rate;
	if (!rate)
		return TC_ACT_OK;
	now = bpf_ktime_get_ns();
	t = skb->tstamp;
	if (t < now)
		t = now;
	delay = (__u64)skb->wire_len * NETQOS_NSEC_PER_SEC / rate;
	bpf_spin_lock(&e->lock);
	next = e->t_last + delay;
	if (next <= t) {
		/* The container was idle for longer than this packet's share: it leaves when its
		 * sender wanted, and at most NETQOS_EDT_CREDIT_NS of the idle time carries over.
		 */
		e->t_last = next + NETQOS_EDT_CREDIT_NS > t ? next : t - NETQOS_EDT_CREDIT_NS;
		bpf_spin_unlock(&e->lock);
		return TC_ACT_OK;
	}
	if (next - now > cfg_edt_horizon_ns) {
		bpf_spin_unlock(&e->lock);
		return TC_ACT_SHOT;
	}
	e->t_last = next;
	bpf_spin_unlock(&e->lock);
	skb->tstamp = next;
	return TC_ACT_OK;
}

static __always_inline int netqos_edt_pace(struct __sk_buff *skb, const struct netqos_class *cls)
{
	/* Keyed by the leaf, not the container: the containers of a pod-level leaf (a pod-level
	 * allocation, a pod capped by its annotations) share one budget.
	 */
	__u64 leaf = cls->priority;

	return netqos_edt_pace_by(skb, bpf_map_lookup_elem(&NETQOS_MAP_EDT, &leaf));
}

/* The leaf's own pacing, then its namespace's aggregate's (NETQOS_CLASS_F_AGGREGATE): a packet
 * leaves at the later of the two departure times, each budget moved by it. The aggregate's map is
 * looked at only for flagged classes.
 */
static __always_inline int netqos_edt_pace_all(struct __sk_buff *skb,
					       const struct netqos_class *cls)
{
	__u64 leaf = cls->priority;
	__u64 *aggregate;

	if (netqos_edt_pace(skb, cls) == TC_ACT_SHOT)
		return TC_ACT_SHOT;
	if (!(cls->flags & NETQOS_CLASS_F_AGGREGATE))
		return TC_ACT_OK;
	aggregate = bpf_map_lookup_elem(&NETQOS_MAP_AGG, &leaf);
	if (!aggregate)
		return TC_ACT_OK;
	return netqos_edt_pace_by(skb, bpf_map_lookup_elem(&NETQOS_MAP_EDT, aggregate));
}

/* Counts a packet the horizon dropped (the container's counters' drops). */
static __always_inline void netqos_count_drop(__u64 cgroup_id)
{
	struct netqos_counters *c = netqos_counters_get(&NETQOS_MAP_CG_STATS, &cgroup_id);

	if (c)
		c->drops += 1;
}

/* Rewrites the packet's DS field to dscp, keeping its 2 ECN bits (the class entry has
 * NETQOS_CLASS_F_SET_DSCP). IPv4: the TOS byte, and the header checksum by the difference (the
 * header's sum is unchanged, so skb->csum of a CHECKSUM_COMPLETE skb stays right). IPv6: the
 * traffic class, across the first two bytes; no header checksum, and the DS field is not in the
 * transport pseudo-header. Ethernet only, where netqos_parse looks (skb->protocol is the inner
 * protocol of an offloaded VLAN tag; a frame with the tag in its data is left alone). Only
 * bpf_skb_load_bytes/store_bytes, so no packet pointer outlives a helper that may move the data.
 * A GSO packet's segments copy the rewritten header, and their IPv4 checksums are recomputed.
 */
static __always_inline void netqos_set_dscp(struct __sk_buff *skb, __u8 dscp)
{
	__u8 hdr[2];

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		/* hdr[0]: version and IHL, hdr[1]: TOS (DSCP << 2 | ECN) */
		if (bpf_skb_load_bytes(skb, ETH_HLEN, hdr, sizeof(hdr)) || (hdr[0] >> 4) != 4)
			return;
		__u8 tos = (__u8)((dscp << 2) | (hdr[1] & 0x3));

		if (tos == hdr[1])
			return;
		/* The TOS byte is the low byte of the header's first 16-bit word. */
		if (bpf_l3_csum_replace(skb, ETH_HLEN + __builtin_offsetof(struct iphdr, check),
					bpf_htons(hdr[1]), bpf_htons(tos), sizeof(__u16)))
			return;
		bpf_skb_store_bytes(skb, ETH_HLEN + __builtin_offsetof(struct iphdr, tos), &tos,
				    sizeof(tos), 0);
		return;
	}
	if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		/* version (4 bits), traffic class (8), then the flow label's first 4 bits */
		if (bpf_skb_load_bytes(skb, ETH_HLEN, hdr, sizeof(hdr)) || (hdr[0] >> 4) != 6)
			return;
		__u8 tclass = (__u8)((hdr[0] << 4) | (hdr[1] >> 4));
		__u8 want = (__u8)((dscp << 2) | (tclass & 0x3));

		if (want == tclass)
			return;
		hdr[0] = (__u8)((hdr[0] & 0xf0) | (want >> 4));
		hdr[1] = (__u8)((hdr[1] & 0x0f) | (want << 4));
		bpf_skb_store_bytes(skb, ETH_HLEN, hdr, sizeof(hdr), BPF_F_RECOMPUTE_CSUM);
	}
}

/* The DSCP a sent packet leaves with: its class's, else --dscp-default's, else the sender's. One
 * test of a flag for the packets of classes that are not marked, one more when the default is off.
 */
static __always_inline void netqos_mark(struct __sk_buff *skb, const struct netqos_class *cls)
{
	if (cls && (cls->flags & NETQOS_CLASS_F_SET_DSCP))
		netqos_set_dscp(skb, cls->dscp);
	else if (cfg_unmarked_dscp & NETQOS_UNMARKED_DSCP_ON)
		netqos_set_dscp(skb, (__u8)(cfg_unmarked_dscp & 0x3f));
}

SEC("tc")
int netqos_nic_tx(struct __sk_buff *skb)
{
	struct netqos_pkt pkt = {};
	struct netqos_class copy;
	__u64 cgroup_id;
	/* A full socket's tag, written by the cgroup programs (a socket of another family has
	 * none, nor do request and timewait sockets: those resolve as before).
	 */
	struct bpf_sock *sk = skb->sk;

	if (sk)
		sk = bpf_sk_fullsock(sk);
	struct netqos_class *cls = netqos_sock_class(skb, sk, 0, &copy, &cgroup_id);

	if (cls) {
		if (!netqos_inet_socket(skb)) {
			__u32 segs = skb->gso_segs ? skb->gso_segs : 1;

			netqos_count(cgroup_id, cls->net_class_id, skb->len, segs, 0);
		}
	} else {
		cls = netqos_carried_class(skb, &cgroup_id);
		/* No container's socket and no carrier (or a slot already freed): routed from a
		 * pod netqos classifies by address only, or tunnelled by an overlay device of the
		 * node (which drops the carrier). Unclassified host sockets pay these lookups too.
		 */
		if (!cls && netqos_parse(skb, &pkt)) {
			cgroup_id = netqos_pod_of(&pkt.saddr);
			if (!cgroup_id)
				cgroup_id = netqos_tunnel_pod_of(skb, &pkt);
			if (cgroup_id)
				cls = bpf_map_lookup_elem(&NETQOS_MAP_CLASS, &cgroup_id);
		}
	}
	netqos_mark(skb, cls);
	/* Never the sender's own value: SO_PRIORITY could otherwise pick any leaf, or HTB's direct
	 * queue (the root's handle), which no cap holds; in EDT mode, fq's first band.
	 */
	if (cfg_edt) {
		skb->priority = netqos_edt_priority(cls);
		if (cls && !(cls->flags & NETQOS_CLASS_F_NO_LEAF) &&
		    netqos_edt_pace_all(skb, cls) == TC_ACT_SHOT) {
			netqos_count_drop(cgroup_id);
			return TC_ACT_SHOT;
		}
		return TC_ACT_OK;
	}
	skb->priority = cls ? cls->priority : 0;
	return TC_ACT_OK;
}

/* The kernel's license_is_gpl_compatible() accepts "Dual BSD/GPL": GPL-only helpers stay usable. */
char LICENSE[] SEC("license") = "Dual BSD/GPL";
