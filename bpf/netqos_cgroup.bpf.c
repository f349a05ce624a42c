// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* The cgroup programs, all attached (pinned bpf_links) to the cgroup v2 root netqos watches.
 *
 * netqos_egress (cgroup_skb/egress) maps each sent skb's cgroup to its container's class entry,
 * sets skb->priority from it, counts tx, and tags the socket with the container's cgroup and a
 * copy of its class (netqos_sock_tag), for its own next packets and the tc ingress program. The
 * NIC's own tc egress program (netqos_nic.bpf.c) sets the priority again, authoritatively: this one
 * matters for NICs netqos does not shape.
 *
 * netqos_rx (cgroup_skb/ingress) runs where a received skb reaches its socket (sk_filter): there
 * the skb's cgroup is the receiving socket's, whatever device or namespace the packet came
 * through, and after any IFB shaping, so it counts what the container received. It tags the
 * socket too: a socket that only receives (a UDP sink) would otherwise never be tagged, and the
 * tc ingress program could not find its container to shape its later packets. A packet that
 * reaches a shaped container in the host's namespace without the NIC's ingress program having
 * placed it (ICMP or raw IP: no ports to look a socket up by; an IPv6 extension-header chain too
 * long to walk) teaches that program its owner (NETQOS_MAP_RX_OWNER, by its two addresses), so
 * the flow's next packets are shaped.
 *
 * netqos_sockopt (cgroup/setsockopt) refuses PACKET_QDISC_BYPASS to processes of classified
 * containers: frames sent that way skip every qdisc and tc hook, so no cap could hold them.
 * netqos_sockopt_pods, attached to each of the kubelet's cgroup roots, refuses it, and every
 * AF_XDP socket option (an AF_XDP socket in copy mode sends past qdiscs and tc as well), to every
 * process of every pod, classified or not yet.
 *
 * None drops packets: a local TCP drop stalls the socket (probe0 timer).
 */
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_endian.h>

#include "netqos_maps.bpf.h"

/* <linux/if_packet.h> would pull in more than these two numbers. */
#define NETQOS_SOL_PACKET 263
#define NETQOS_PACKET_QDISC_BYPASS 20
#define NETQOS_SOL_XDP 283
#define NETQOS_PAGE_SIZE 4096

/* Both programs read the class through the socket's tag and tag the socket, so its next packets
 * skip the class map (and, for a socket of no class or of a cgroup below its container's, the
 * walk up its ancestors), and the tc ingress program finds the container a received packet's
 * socket belongs to. A socket an older netqosd tagged (netqos_sktag_v1) has no tag here until its
 * first packet through one of these programs: during an upgrade, the NIC's ingress program places
 * the first packet that reaches such a socket by its learned owner or not at all (unshaped), and
 * the later ones by the new tag, once netqos_rx has seen the first.
 */
SEC("cgroup_skb/egress")
int netqos_egress(struct __sk_buff *skb)
{
	struct netqos_class copy;
	__u64 cgroup_id;
	struct netqos_class *cls =
	    netqos_sock_class(skb, skb->sk, BPF_SK_STORAGE_GET_F_CREATE, &copy, &cgroup_id);

	if (!cls)
		return 1;
	if (cls->priority)
		skb->priority = cls->priority;
	/* cgroup_skb sees GSO super-packets: count segments, not invocations. */
	__u32 segs = skb->gso_segs ? skb->gso_segs : 1;

	netqos_count(cgroup_id, cls->net_class_id, skb->len, segs, 0);
	return 1;
}

#define NETQOS_LOOPBACK_IFINDEX 1

/* Records the container as the owner of packets from this one's source to its destination, when
 * the NIC's ingress program did not place it (its priority is not the class's). Pods classified
 * at their veth are shaped there, whatever the protocol; loopback traffic never crossed a NIC.
 */
static __always_inline void netqos_learn_owner(struct __sk_buff *skb,
					       const struct netqos_class *cls, __u64 cgroup_id)
{
	struct netqos_flow_key key = {};

	if (!(cls->flags & NETQOS_CLASS_F_INGRESS_SHAPED) || (cls->flags & NETQOS_CLASS_F_VETH) ||
	    skb->priority == cls->priority || skb->ingress_ifindex == NETQOS_LOOPBACK_IFINDEX)
		return;
	/* cgroup_skb data starts at the network header. */
	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		__be32 a[2]; /* saddr, daddr */

		if (bpf_skb_load_bytes(skb, __builtin_offsetof(struct iphdr, saddr), a, sizeof(a)))
			return;
		key.saddr.addr[2] = bpf_htonl(0xffff);
		key.saddr.addr[3] = a[0];
		key.daddr.addr[2] = bpf_htonl(0xffff);
		key.daddr.addr[3] = a[1];
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		if (bpf_skb_load_bytes(skb, __builtin_offsetof(struct ipv6hdr, saddr), &key,
				       sizeof(key)))
			return;
	} else {
		return;
	}
	__u64 *owner = bpf_map_lookup_elem(&NETQOS_MAP_RX_OWNER, &key);

	if (!owner || *owner != cgroup_id)
		bpf_map_update_elem(&NETQOS_MAP_RX_OWNER, &key, &cgroup_id, BPF_ANY);
}

SEC("cgroup_skb/ingress")
int netqos_rx(struct __sk_buff *skb)
{
	struct netqos_class copy;
	__u64 cgroup_id;
	struct netqos_class *cls =
	    netqos_sock_class(skb, skb->sk, BPF_SK_STORAGE_GET_F_CREATE, &copy, &cgroup_id);

	/* Sockets of cgroups netqos does not classify are tagged (as of no class, so their next
	 * packets stop at the tag) but not counted.
	 */
	if (!cls)
		return 1;
	netqos_learn_owner(skb, cls, cgroup_id);
	/* GRO packets: count the segments they were built from. */
	__u32 segs = skb->gso_segs ? skb->gso_segs : 1;

	netqos_count(cgroup_id, cls->net_class_id, skb->len, segs, 1);
	return 1;
}

/* Whether the calling task runs in a classified container's cgroup or below one. */
static __always_inline int netqos_current_classified(void)
{
	__u64 id = bpf_get_current_cgroup_id();

	if (bpf_map_lookup_elem(&NETQOS_MAP_CLASS, &id))
		return 1;
	for (int level = 1; level < NETQOS_MAX_CGROUP_DEPTH; level++) {
		__u64 anc = bpf_get_current_ancestor_cgroup_id(level);

		if (!anc || anc == id)
			break;
		if (bpf_map_lookup_elem(&NETQOS_MAP_CLASS, &anc))
			return 1;
	}
	return 0;
}

static __always_inline int netqos_sockopt_verdict(struct bpf_sockopt *ctx, int classified)
{
	if (ctx->level == NETQOS_SOL_PACKET && ctx->optname == NETQOS_PACKET_QDISC_BYPASS &&
	    classified)
		return 0; /* EPERM */
	/* Values over a page are not copied for us: 0 tells the kernel to use the caller's. */
	if (ctx->optlen > NETQOS_PAGE_SIZE) {
		/* Keeps clang from storing through ctx+offset, which the verifier refuses. */
		asm volatile("" : "+r"(ctx));
		ctx->optlen = 0;
	}
	return 1;
}

SEC("cgroup/setsockopt")
int netqos_sockopt(struct bpf_sockopt *ctx)
{
	if (ctx->level != NETQOS_SOL_PACKET)
		return netqos_sockopt_verdict(ctx, 0);
	return netqos_sockopt_verdict(ctx, netqos_current_classified());
}

/* For kernels whose cgroup/setsockopt programs lack bpf_get_current_ancestor_cgroup_id (5.10):
 * the container's own cgroup only. The loader picks one of the two.
 */
SEC("cgroup/setsockopt")
int netqos_sockopt_flat(struct bpf_sockopt *ctx)
{
	if (ctx->level != NETQOS_SOL_PACKET)
		return netqos_sockopt_verdict(ctx, 0);
	__u64 id = bpf_get_current_cgroup_id();

	return netqos_sockopt_verdict(ctx, bpf_map_lookup_elem(&NETQOS_MAP_CLASS, &id) != 0);
}

/* Attached to a kubelet cgroup root: whoever calls runs in a pod. No AF_XDP socket can be set up
 * without its SOL_XDP options (the UMEM, the rings).
 */
SEC("cgroup/setsockopt")
int netqos_sockopt_pods(struct bpf_sockopt *ctx)
{
	if (ctx->level == NETQOS_SOL_XDP)
		return 0; /* EPERM */
	return netqos_sockopt_verdict(ctx, 1);
}

/* The kernel's license_is_gpl_compatible() accepts "Dual BSD/GPL": GPL-only helpers stay usable. */
char LICENSE[] SEC("license") = "Dual BSD/GPL";
