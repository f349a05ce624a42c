// SPDX-License-Identifier: GPL-2.0
/* Egress classification: attached (bpf_link) to a parent cgroup such as kubepods, it maps each
 * skb's cgroup to its HTB class via skb->priority, counts tx, and tags the socket with its cgroup
 * for the ingress path. It never drops: a local TCP drop stalls the socket (probe0 timer).
 */
#include "netqos_maps.bpf.h"

SEC("cgroup_skb/egress")
int netqos_egress(struct __sk_buff *skb)
{
	__u64 cgroup_id = bpf_skb_cgroup_id(skb);
	struct bpf_sock *sk = skb->sk;

	if (sk) {
		struct netqos_sock_tag *tag =
			bpf_sk_storage_get(&NETQOS_MAP_SOCK_TAG, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);

		if (tag && tag->cgroup_id != cgroup_id)
			tag->cgroup_id = cgroup_id;
	}

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

char LICENSE[] SEC("license") = "GPL";
