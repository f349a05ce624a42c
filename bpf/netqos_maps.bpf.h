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

#define NETQOS_READ_ONCE(x) (*(volatile __typeof__(x) *)&(x))
#define NETQOS_WRITE_ONCE(x, v) (*(volatile __typeof__(x) *)&(x) = (v))
#define netqos_barrier() asm volatile("" ::: "memory")

/* What netqos_tag_read found in a socket's tag. */
enum netqos_tag_state {
	NETQOS_TAG_STALE = 0, /* resolved at another generation (or being rewritten): resolve */
	NETQOS_TAG_CLASSIFIED = 1, /* *cls and *cgroup_id hold the socket's class */
	NETQOS_TAG_NONE = 2,	   /* no class for the socket's cgroup or its ancestors */
};

/* The class map's generation, which netqosd moves after every class map write
 * (userspace/bpf/class_generation.h), kept in the carrier array's unused slot 0
 * (NETQOS_CLASS_GEN_SLOT): one array lookup. 0 (never written, or a value without
 * NETQOS_CLASS_GEN_BIT, which netqosd never writes there) matches no tag.
 */
static __always_inline __u64 netqos_class_generation(void)
{
	__u32 slot = NETQOS_CLASS_GEN_SLOT;
	__u64 *gen = bpf_map_lookup_elem(&NETQOS_MAP_CARRIER, &slot);
	__u64 value = gen ? NETQOS_READ_ONCE(*gen) : 0;

	return value & NETQOS_CLASS_GEN_BIT ? value : 0;
}

/* Copies the tag's resolution when it was made at generation gen. Lock-free: a writer zeroes the
 * generation before it changes the fields and sets it after, and the generation is read again
 * after the copy, so a copy that overlapped a rewrite is thrown away rather than mixed.
 */
static __always_inline enum netqos_tag_state
netqos_tag_read(struct netqos_sock_tag *tag, __u64 gen, struct netqos_class *cls, __u64 *cgroup_id)
{
	__u64 seen = NETQOS_READ_ONCE(tag->generation);
	__u32 classified;

	if (!gen || seen != gen)
		return NETQOS_TAG_STALE;
	netqos_barrier();
	*cls = tag->cls;
	*cgroup_id = tag->cgroup_id;
	classified = tag->classified;
	netqos_barrier();
	if (NETQOS_READ_ONCE(tag->generation) != seen)
		return NETQOS_TAG_STALE;
	return classified ? NETQOS_TAG_CLASSIFIED : NETQOS_TAG_NONE;
}

/* Stores a resolution made at generation gen (cls NULL: none). Writers take the tag's lock: two
 * of them (the receive and the send path of one socket on two CPUs, one having read the
 * generation before netqosd moved it and one after) would otherwise leave one's generation over
 * the other's fields. The last writer wins; if it resolved at an older generation, its tag is
 * stale and the next packet resolves again.
 */
static __always_inline void netqos_tag_write(struct netqos_sock_tag *tag, __u64 gen,
					     __u64 cgroup_id, const struct netqos_class *cls)
{
	struct netqos_class copy = {};

	if (cls)
		copy = *cls;
	bpf_spin_lock(&tag->lock);
	NETQOS_WRITE_ONCE(tag->generation, 0);
	netqos_barrier();
	tag->cgroup_id = cgroup_id;
	tag->cls = copy;
	tag->classified = cls != 0;
	netqos_barrier();
	NETQOS_WRITE_ONCE(tag->generation, gen);
	bpf_spin_unlock(&tag->lock);
}

/* netqos_skb_class through the socket's tag: the tag's copy when it was resolved at the current
 * generation, else netqos_skb_class, and the tag refreshed. sk is skb's socket (a full socket),
 * or NULL; create: whether a socket without a tag gets one (the cgroup programs; the tc programs
 * leave tagging to them). Returns the class (copy, or the class map's entry) or NULL, with
 * *cgroup_id as netqos_skb_class sets it.
 *
 * Why a tag can never outlive the class map it was resolved from: netqosd writes the class map
 * first and moves the generation after (one syscall each); a program reads the generation first
 * and the class map after. A program that saw an entry's old state read the generation before
 * netqosd moved it, so it stores the old generation with the old state, which the next packet
 * sees is stale. A program that read the moved generation reads the class map after it, so
 * after the write. (The kernel orders the writer's two syscalls; on the reading side this relies
 * on the CPU not satisfying the class map's loads before the generation's, which x86-64 never
 * does.) A class entry removed and written back in between is two writes and two moves. The
 * tag's own fields are made consistent by netqos_tag_write/netqos_tag_read.
 */
static __always_inline struct netqos_class *netqos_sock_class(struct __sk_buff *skb,
							      struct bpf_sock *sk, __u64 create,
							      struct netqos_class *copy,
							      __u64 *cgroup_id)
{
	__u64 gen = netqos_class_generation();
	struct netqos_sock_tag *tag = 0;
	struct netqos_class *cls;

	if (sk)
		tag = bpf_sk_storage_get(&NETQOS_MAP_SOCK_TAG, sk, 0, create);
	if (tag) {
		enum netqos_tag_state state = netqos_tag_read(tag, gen, copy, cgroup_id);

		if (state == NETQOS_TAG_CLASSIFIED)
			return copy;
		if (state == NETQOS_TAG_NONE)
			return 0;
	}
	cls = netqos_skb_class(skb, cgroup_id);
	/* Generation 0 (netqosd has not written the class map yet) never matches: keep the cgroup
	 * for the ingress path, and skip the lock while it is unchanged.
	 */
	if (tag && (gen || tag->cgroup_id != *cgroup_id))
		netqos_tag_write(tag, gen, *cgroup_id, cls);
	return cls;
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
