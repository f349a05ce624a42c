// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* Test only: the maps of an imaginary older netqos build ("_v0"), with value layouts that differ
 * from bpf/netqos_abi.h (other member order, fewer members), to exercise the migration in
 * userspace/bpf/map_migration.cc. Deliberately does not include netqos_abi.h.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct netqos_class_v0 {
	__u32 net_class_id;
	__u32 priority;
};

struct netqos_counters_v0 {
	__u64 tx_bytes;
	__u64 tx_packets;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, struct netqos_class_v0);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} netqos_cls_v0 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, struct netqos_counters_v0);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} netqos_cgst_v0 SEC(".maps");

/* The old egress program, so the object loads and the maps have a user. */
SEC("cgroup_skb/egress")
int netqos_old_egress(struct __sk_buff *skb)
{
	__u64 cgroup_id = bpf_skb_cgroup_id(skb);
	struct netqos_class_v0 *cls = bpf_map_lookup_elem(&netqos_cls_v0, &cgroup_id);

	if (cls && cls->priority)
		skb->priority = cls->priority;
	return 1;
}

/* The kernel's license_is_gpl_compatible() accepts "Dual BSD/GPL": GPL-only helpers stay usable. */
char LICENSE[] SEC("license") = "Dual BSD/GPL";
