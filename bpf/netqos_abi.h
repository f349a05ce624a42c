/* SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only) */
/* The one ABI shared by the BPF programs (the .bpf.c files) and userspace (userspace/bpf/): map
 * names, keys and values. Plain __u32/__u64 with explicit padding; a layout change needs a new _vN
 * name.
 */
#ifndef NETQOS_ABI_H
#define NETQOS_ABI_H

#include <linux/bpf.h> /* struct bpf_spin_lock */
#include <linux/types.h>

/* QoS level of a container (Katalyst). */
enum netqos_qos_level {
	NETQOS_QOS_SYSTEM = 0,
	NETQOS_QOS_DEDICATED = 1,
	NETQOS_QOS_SHARED = 2,
	NETQOS_QOS_RECLAIMED = 3,
	NETQOS_QOS_UNKNOWN = 255,
};

/* Map names: used as C identifiers in the BPF objects and as pin file names. At most 15
 * characters (the kernel keeps 16 bytes with the NUL); bump the suffix when a layout changes.
 */
#define NETQOS_MAP_CLASS netqos_cls_v1	      /* hash: __u64 cgroup id -> netqos_class */
#define NETQOS_MAP_CG_STATS netqos_cgst_v2    /* percpu hash: __u64 cgroup id -> netqos_counters */
#define NETQOS_MAP_CLASS_STATS netqos_clst_v2 /* percpu hash: __u32 class id -> netqos_counters */
#define NETQOS_MAP_SOCK_TAG netqos_sktag_v2   /* sk storage: socket -> netqos_sock_tag */
#define NETQOS_MAP_POD_ADDR netqos_podip_v1   /* hash: netqos_addr -> __u64 cgroup id */
#define NETQOS_MAP_FRAG netqos_frag_v1	      /* lru hash: netqos_frag_key -> __u64 cgroup id */
#define NETQOS_MAP_EDT netqos_edt_v1	      /* hash: __u64 leaf class handle -> netqos_edt */
#define NETQOS_MAP_AGG netqos_agg_v1	      /* hash: __u64 leaf class handle -> __u64 aggregate */
#define NETQOS_MAP_VETH netqos_veth_v1	      /* hash: __u32 ifindex -> netqos_veth */
#define NETQOS_MAP_CARRIER netqos_carry_v1    /* array: __u32 slot -> __u64 cgroup id */
#define NETQOS_MAP_RX_OWNER netqos_rxown_v1   /* lru hash: netqos_flow_key -> __u64 cgroup id */
/* Pinned by netqosd itself, read by no program: the format stamp of the pin directory (array, one
 * entry, key __u32 0 -> struct netqos_format_stamp). Its layout never changes, so that every
 * release can read it (userspace/common/format_stamp.h).
 */
#define NETQOS_PIN_FORMAT netqos_format

#define NETQOS_STR_INNER(x) #x
#define NETQOS_STR(x) NETQOS_STR_INNER(x)

#define NETQOS_MAX_ENTRIES 65536
/* Fragmented datagrams in flight to host-namespace sockets whose first fragment was classified. */
#define NETQOS_MAX_FRAGS 16384
/* How deep below the cgroup v2 root the programs look for a container's class (a process in a
 * cgroup a tenant made below its container's counts as the container).
 */
#define NETQOS_MAX_CGROUP_DEPTH 16

/* The carrier: a pod's sent packets carry their container's class from the host end of the pod's
 * veth to the NIC in skb->queue_mapping, as NETQOS_CARRIER_FLAG | slot. The field survives
 * routing, NAT and forwarding up to the NIC's tc egress hook (the TX queue is picked after it);
 * skb->priority does not (the veth clears it, ip_forward may rewrite it), nor does the mark (the
 * netns crossing clears it). A received packet's queue_mapping is its RX queue + 1, far below the
 * flag. Slot 0 means none (the NIC's program refuses it: it holds NETQOS_CLASS_GEN_SLOT); slots
 * index NETQOS_MAP_CARRIER.
 */
#define NETQOS_CARRIER_FLAG 0x8000u
#define NETQOS_CARRIER_SLOTS 32768
/* Slot 0 of NETQOS_MAP_CARRIER, which no carrier uses, holds the class map's generation
 * (netqos_sock_tag): netqosd moves it after every write to the class map. It lives there and not
 * in a map of its own so that nothing new is pinned: a release that does not know the generation
 * (0.1.0 and older never write slot 0 and skip it when they list carriers) adopts, uninstalls and
 * removes the pin directory as before. Every generation has NETQOS_CLASS_GEN_BIT set, which no
 * cgroup id has (they are inode numbers), so a packet that still named slot 0 would find no
 * class; 0 means netqosd has not written the class map yet.
 */
#define NETQOS_CLASS_GEN_SLOT 0
#define NETQOS_CLASS_GEN_BIT (1ULL << 63)
/* Learned owners of received packets the NIC's ingress program could not place (protocols
 * without ports, IPv6 extension-header chains longer than it walks): see netqos_rx.
 */
#define NETQOS_MAX_RX_OWNERS 16384

/* Layout history (what map_migration converts from):
 * v1 counters (netqos_cgst_v1, netqos_clst_v1): preallocated per-CPU hashes; 65536 entries x 40
 *    bytes x every possible CPU (~2.6 MiB per CPU and map, ~500 MiB on a 96-CPU node).
 * v2 counters: BPF_F_NO_PREALLOC, memory follows the containers actually seen.
 */

/* Value of NETQOS_MAP_CLASS, keyed by the cgroup v2 id (== the cgroup directory's inode). */
struct netqos_class {
	__u32 priority;	    /* skb->priority = HTB class handle major:minor; 0 = leave untouched */
	__u32 net_class_id; /* Katalyst class id; keys NETQOS_MAP_CLASS_STATS */
	__u8 qos_level;	    /* enum netqos_qos_level */
	__u8 dscp;	    /* DSCP 0..63 to mark with when NETQOS_CLASS_F_SET_DSCP */
	__u16 slot;	    /* the container's carrier slot (NETQOS_MAP_CARRIER), 0 = none */
	__u32 flags;	    /* NETQOS_CLASS_F_* */
};

/* netqos_class.flags: the class's received packets are redirected to the NIC's IFB, whose HTB
 * can hold them back (an ingress leaf, or a QoS level whose ceiling is below the link). Without
 * it they skip the IFB: an uncapped container's ingress pays the classifier only.
 */
#define NETQOS_CLASS_F_INGRESS_SHAPED 0x1u
/* netqos_class.flags: netqos_nic_tx rewrites the DSCP of the class's packets (IPv4 and IPv6, the
 * ECN bits kept) to netqos_class.dscp on the enforced NICs. A flag and not dscp != 0, since DSCP 0
 * (CS0) is a mark too. The byte was padding and the bit unused before: entries an older netqosd
 * wrote have both zero (not marked), and an older netqosd or program ignores them, so the layout
 * is compatible both ways and the map kept its name (netqos_cls_v1).
 */
#define NETQOS_CLASS_F_SET_DSCP 0x2u
/* netqos_class.flags: the container's pod is behind a veth netqos found: its packets are
 * classified at that veth (both ways) and its received packets shaped there; the NIC's ingress
 * program leaves them alone. Bits 0x8 and 0x10 are reserved for the tenant policy's aggregates.
 * netqos_class.slot was padding before (zero in entries an older netqosd wrote: no slot).
 */
#define NETQOS_CLASS_F_VETH 0x4u
/* netqos_class.flags: the container's leaf is in its namespace's aggregate (the tenant policy's):
 * in EDT mode netqos_nic_tx also paces its packets by the aggregate's budget, the netqos_edt_v1
 * entry of the aggregate's class handle that NETQOS_MAP_AGG names for the leaf. Without the bit
 * the map is never looked at: pods of namespaces without an aggregate pay nothing.
 */
#define NETQOS_CLASS_F_AGGREGATE 0x8u
/* netqos_class.flags: the container has no leaf of its own (its packets are its QoS level's
 * default class's), so no netqos_edt_v1 entry can pace it: in EDT mode netqos_nic_tx skips that
 * lookup, and an uncapped container's sent packets cost classification alone. The inverse of
 * "paced" on purpose: an entry an older netqosd wrote lacks the bit and is looked up, as it was.
 */
#define NETQOS_CLASS_F_NO_LEAF 0x20u

/* netqos_nic_tx's cfg_unmarked_dscp (--dscp-default): this bit set, the low 6 bits are the DSCP of
 * every packet whose class sets none, and of every packet of no class; clear: those are left as
 * their sender marked them.
 */
#define NETQOS_UNMARKED_DSCP_ON 0x100u

/* Value of both counter maps (per CPU; userspace sums). */
struct netqos_counters {
	__u64 tx_bytes;
	__u64 tx_packets;
	__u64 rx_bytes;
	__u64 rx_packets;
	__u64 drops;
};

/* Key of NETQOS_MAP_POD_ADDR: a pod's address as IPv6, an IPv4 address as ::ffff:a.b.c.d;
 * network byte order. Its value is the cgroup id of the container whose class entry the pod's
 * routed traffic takes (the pod's own network namespace has no socket the NIC could see).
 */
struct netqos_addr {
	__u32 addr[4];
};

/* Key of NETQOS_MAP_FRAG: one fragmented datagram (IPv4 id, or the IPv6 fragment header's). */
struct netqos_frag_key {
	struct netqos_addr saddr;
	struct netqos_addr daddr;
	__u32 id;
	__u32 proto;
};

/* Value of NETQOS_MAP_SOCK_TAG: what the class map said about the socket's cgroup, so that its
 * packets need not ask again. cgroup_id is the container cgroup the socket belongs to (its own
 * cgroup, or the classified ancestor it runs below; its own cgroup when none is classified), for
 * the ingress path and the counters. cls and classified are a copy of that container's class
 * entry (classified 0: neither the socket's cgroup nor an ancestor has one), valid only while
 * generation equals the class map's generation (NETQOS_CLASS_GEN_SLOT): a socket's cgroup never
 * changes, so only a write to the class map can make them wrong, and netqosd moves the generation
 * after each one (netqos_sock_class in netqos_maps.bpf.h tells why the order makes that safe).
 * generation 0 never matches. Only the BPF programs write it, under lock (writers of two
 * generations could otherwise interleave their fields); readers do not take the lock but check
 * generation before and after copying (a writer sets it to 0 while it writes).
 * (netqos_sktag_v1 held cgroup_id alone; sk storage cannot be listed, so nothing is migrated:
 * a socket tagged by an older netqosd is tagged again at its next packet through the cgroup
 * programs.)
 */
struct netqos_sock_tag {
	/* First: a program reaches it without pointer arithmetic. Without CAP_PERFMON (netqosd's
	 * DaemonSet has CAP_BPF and CAP_NET_ADMIN only) the verifier refuses arithmetic that points
	 * a map value pointer at the lock ("bpf_spin_lock cannot be accessed directly").
	 */
	struct bpf_spin_lock lock;
	__u32 classified;
	__u64 cgroup_id;
	__u64 generation;
	struct netqos_class cls;
};

/* Value of NETQOS_MAP_VETH, keyed by the ifindex of the host end of a pod's veth (in the
 * namespace netqosd runs in): the container whose class the pod's packets take when their socket
 * names no container (packets the pod forwards, the kernel's own replies), and whose ingress cap
 * holds what the pod receives.
 */
struct netqos_veth {
	__u64 cgroup_id;
};

/* Key of NETQOS_MAP_RX_OWNER: the remote and the local address of packets to a host-namespace
 * socket (network byte order, IPv4 as ::ffff:a.b.c.d).
 */
struct netqos_flow_key {
	struct netqos_addr saddr;
	struct netqos_addr daddr;
};

/* Value of NETQOS_MAP_EDT: a leaf's pacing on NICs in EDT mode, keyed by the leaf's class handle
 * (netqos_class.priority, 0x10MMMM as a __u64), so the containers sharing a pod's leaf share its
 * budget. (netqosd before the bandwidth model keyed it by cgroup id; the first pass of either
 * clears the other's entries.) Userspace writes rate (and zeroes t_last when the rate changes);
 * the NIC egress program moves t_last under lock, since every CPU that sends for the leaf
 * updates the same entry.
 */
struct netqos_edt {
	__u64 rate;   /* bytes per second on the wire; 0 = not paced */
	__u64 t_last; /* CLOCK_MONOTONIC departure time (ns) given to the container's last packet */
	struct bpf_spin_lock lock;
	__u32 pad;
};

/* EDT: idle time a container may make up for, in ns. A sender woken late (a TCP small-queues
 * wake-up delayed by a busy CPU) would otherwise lose the gap for good and fall below its rate;
 * with it, it may send this much of its rate at once after an idle spell, then is paced again:
 * the burst HTB's leaves allow too (1 ms of rate plus a packet).
 */
#define NETQOS_EDT_CREDIT_NS 2000000ULL

/* skb->priority in EDT mode: a TC_PRIO_* value per QoS level, which fq (6.8+) maps to its three
 * bands as pfifo_fast does (interactive first, bulk last). In HTB mode it is the leaf's handle.
 */
#define NETQOS_EDT_PRIO_INTERACTIVE 6 /* TC_PRIO_INTERACTIVE: system, dedicated */
#define NETQOS_EDT_PRIO_BESTEFFORT 0  /* TC_PRIO_BESTEFFORT: shared, unclassified */
#define NETQOS_EDT_PRIO_BULK 2	      /* TC_PRIO_BULK: reclaimed */

/* Value of NETQOS_PIN_FORMAT: the format generation of what the pin directory holds, the oldest
 * generation that may use it, and the release that wrote it (NUL-terminated).
 */
struct netqos_format_stamp {
	__u32 generation;
	__u32 min_reader;
	char release[56];
};

#endif /* NETQOS_ABI_H */
