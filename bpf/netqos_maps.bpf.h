/* SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only) */
/* Map definitions shared by every netqos BPF object. All are pinned by name under the daemon's
 * pin directory, so the egress and ingress objects (and daemon restarts) share one instance.
 */
#ifndef NETQOS_MAPS_BPF_H
#define NETQOS_MAPS_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "netqos_abi.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, NETQOS_MAX_ENTRIES);
	__type(key, __u64);
	__type(value, struct netqos_class);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} NETQOS_MAP_CLASS SEC(".maps");

/* Counters are created on a container's first packet, so they are not preallocated: a preallocated
 * per-CPU hash costs max_entries x value x every possible CPU up front.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, NETQOS_MAX_ENTRIES);
	__type(key, __u64);
	__type(value, struct netqos_counters);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} NETQOS_MAP_CG_STATS SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, NETQOS_MAX_ENTRIES);
	__type(key, __u32);
	__type(value, struct netqos_counters);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} NETQOS_MAP_CLASS_STATS SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct netqos_sock_tag);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} NETQOS_MAP_SOCK_TAG SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, NETQOS_MAX_ENTRIES);
	__type(key, struct netqos_addr);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} NETQOS_MAP_POD_ADDR SEC(".maps");

/* Written by the tc ingress program only, from a first fragment's socket; LRU, so a datagram
 * whose last fragment never came ages out by itself.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, NETQOS_MAX_FRAGS);
	__type(key, struct netqos_frag_key);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} NETQOS_MAP_FRAG SEC(".maps");

/* Pacing state of containers on NICs in EDT mode (netqos_nic_tx). Not preallocated: only capped
 * containers have an entry.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, NETQOS_MAX_ENTRIES);
	__type(key, __u64);
	__type(value, struct netqos_edt);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} NETQOS_MAP_EDT SEC(".maps");

/* EDT mode: the aggregate (its class handle, a key of NETQOS_MAP_EDT) a leaf's packets are also
 * paced by; looked up only for classes flagged NETQOS_CLASS_F_AGGREGATE. Only leaves of namespaces
 * with an aggregate have an entry.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, NETQOS_MAX_ENTRIES);
	__type(key, __u64);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} NETQOS_MAP_AGG SEC(".maps");

/* The host ends of pods' veths netqos classifies at (see netqos_pod.bpf.c). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, NETQOS_MAX_ENTRIES);
	__type(key, __u32);
	__type(value, struct netqos_veth);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} NETQOS_MAP_VETH SEC(".maps");

/* Carrier slot -> the cgroup id whose class entry the carried packet takes (NETQOS_CARRIER_FLAG).
 * An array: the lookup on the NIC's send path is an index, not a hash.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NETQOS_CARRIER_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} NETQOS_MAP_CARRIER SEC(".maps");

/* Written by netqos_rx (the cgroup ingress program), read by the NIC's ingress program; LRU, so
 * owners of flows that ended age out by themselves.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, NETQOS_MAX_RX_OWNERS);
	__type(key, struct netqos_flow_key);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} NETQOS_MAP_RX_OWNER SEC(".maps");

/* The class entry of the container an skb's socket belongs to, or NULL. *cgroup_id is the id the
 * entry is keyed by (the socket's own cgroup when nothing matched). The socket's cgroup is looked
 * up first: that is a container's own cgroup for nearly every packet. On a miss its ancestors are
 * looked up from the root down: a process in a cgroup below its container's (which a tenant may
 * create) still counts as that container, and containers never nest, so the first hit is it.
 * Works in cgroup_skb and tc programs alike (bpf_skb_cgroup_id follows skb->sk: 0 without one).
 */
static __always_inline struct netqos_class *netqos_skb_class(struct __sk_buff *skb,
							     __u64 *cgroup_id)
{
	__u64 id = bpf_skb_cgroup_id(skb);
	struct netqos_class *cls;

	*cgroup_id = id;
	if (!id)
		return 0;
	cls = bpf_map_lookup_elem(&NETQOS_MAP_CLASS, &id);
	if (cls)
		return cls;
	for (int level = 1; level < NETQOS_MAX_CGROUP_DEPTH; level++) {
		__u64 anc = bpf_skb_ancestor_cgroup_id(skb, level);

		if (!anc || anc == id)
			break;
		cls = bpf_map_lookup_elem(&NETQOS_MAP_CLASS, &anc);
		if (cls) {
			*cgroup_id = anc;
			return cls;
		}
	}
	return 0;
}

/* Returns the counters for key in map, creating a zeroed entry on first use. NULL only when the
 * map is full (the packet then goes uncounted; it is never dropped for that).
 */
static __always_inline struct netqos_counters *netqos_counters_get(void *map, const void *key)
{
	struct netqos_counters *c = bpf_map_lookup_elem(map, key);

	if (c)
		return c;
	struct netqos_counters zero = {};

	bpf_map_update_elem(map, key, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, key);
}

/* Adds one skb to the tx or rx side of the container and class counters (per CPU: no atomics). */
static __always_inline void netqos_count(__u64 cgroup_id, __u32 class_id, __u64 bytes,
					 __u64 packets, int rx)
{
	struct netqos_counters *c = netqos_counters_get(&NETQOS_MAP_CG_STATS, &cgroup_id);

	if (c) {
		if (rx) {
			c->rx_bytes += bytes;
			c->rx_packets += packets;
		} else {
			c->tx_bytes += bytes;
			c->tx_packets += packets;
		}
	}
	c = netqos_counters_get(&NETQOS_MAP_CLASS_STATS, &class_id);
	if (c) {
		if (rx) {
			c->rx_bytes += bytes;
			c->rx_packets += packets;
		} else {
			c->tx_bytes += bytes;
			c->tx_packets += packets;
		}
	}
}

#endif /* NETQOS_MAPS_BPF_H */
