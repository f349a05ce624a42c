// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* The baselines of the datapath benchmark: programs of the same types as netqos's that do
 * nothing, so BPF_PROG_TEST_RUN of each pair isolates what netqos's programs add per packet.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

SEC("cgroup_skb/egress")
int bench_empty_egress(struct __sk_buff *skb)
{
	return 1;
}

SEC("tc")
int bench_empty_tc(struct __sk_buff *skb)
{
	return TC_ACT_OK;
}

/* The kernel's license_is_gpl_compatible() accepts "Dual BSD/GPL": GPL-only helpers stay usable. */
char LICENSE[] SEC("license") = "Dual BSD/GPL";
