// SPDX-License-Identifier: GPL-2.0
/* The cgroup programs, both attached (bpf_link) to the cgroup v2 root netqos watches.
 *
 * netqos_egress maps each sent skb's cgroup to its HTB class via skb->priority, counts tx, and tags
 * the socket with its cgroup for the tc ingress program.
 *
 * netqos_rx runs where a received skb reaches its socket (sk_filter): there the skb's cgroup is the
 * receiving socket's, whatever device or namespace the packet came through, and after any IFB
 * shaping, so it counts what the container received. It tags the socket too: a socket that only
 * receives (a UDP sink) would otherwise never be tagged, and the tc ingress program could not
 * find its container to shape its later packets.
 *
 * Neither drops: a local TCP drop stalls the socket (probe0 timer).
 */
#include "netqos_maps.bpf.h"

static __always_inline void netqos_tag_socket(struct bpf_sock *sk, __u64 cgroup_id)
{
	if (!sk)
		return;
	struct netqos_sock_tag *tag =
		bpf_sk_storage_get(&NETQOS_MAP_SOCK_TAG, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);

	if (tag && tag->cgroup_id != cgroup_id)
		tag->cgroup_id = cgroup_id;
}

SEC("cgroup_skb/egress")
int netqos_egress(struct __sk_buff *skb)
{
	__u64 cgroup_id = bpf_skb_cgroup_id(skb);

	netqos_tag_socket(skb->sk, cgroup_id);

	struct netqos_class *cls = bpf_map_lookup_elem(&NETQOS_MAP_CLASS, &cgroup_id);

	if (!cls)
		return 1;
	if (cls->priority)
		skb->priority = cls->priority;
	/* cgroup_skb sees GSO super-packets: count segments, not invocations. */
	__u32 segs = skb->gso_segs ? skb->gso_segs : 1;

	netqos_count(cgroup_id, cls->net_class_id, skb->len, segs, 0);
	return 1;
}

SEC("cgroup_skb/ingress")
int netqos_rx(struct __sk_buff *skb)
{
	__u64 cgroup_id = bpf_skb_cgroup_id(skb);
	struct netqos_class *cls = bpf_map_lookup_elem(&NETQOS_MAP_CLASS, &cgroup_id);

	/* Sockets of cgroups netqos does not classify are neither tagged nor counted: the ingress
	 * program would find no class for them anyway.
	 */
	if (!cls)
		return 1;
	netqos_tag_socket(skb->sk, cgroup_id);
	/* GRO packets: count the segments they were built from. */
	__u32 segs = skb->gso_segs ? skb->gso_segs : 1;

	netqos_count(cgroup_id, cls->net_class_id, skb->len, segs, 1);
	return 1;
}

char LICENSE[] SEC("license") = "GPL";
