// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* The tc programs on the host end of a pod's veth (cls_bpf on its clsact qdisc; one instance
 * shared by every pod veth netqos found). There a pod's packets are still the pod's: they carry
 * its own addresses and, for what it sends, its socket, before the node masquerades, tunnels or
 * DNATs them, and after it decapsulates and DNATs what it receives.
 *
 * netqos_pod_tx (tc ingress: what the pod sends) finds the container: the sending socket's (the
 * socket of the pod's namespace is still on the packet here), else the pod's own (NETQOS_MAP_VETH:
 * whatever leaves the pod's veth is the pod's, whatever its source address says). It writes the
 * container's carrier slot into skb->queue_mapping, where the NIC's egress program finds it
 * (NETQOS_CARRIER_FLAG in netqos_abi.h): the class then holds on every NIC the packet leaves by,
 * masqueraded or not.
 *
 * netqos_pod_rx (tc egress: what the pod receives) gives each packet the pod's class and, when
 * that class is shaped on ingress, leaves it to the next filter: netqos's u32 rule, whose
 * act_mirred redirects it to the IFB of the pod's NIC (whose HTB holds the pod's ingress leaf);
 * the IFB sends it back out of this veth past tc. Node-local packets (from the host's own
 * sockets, or from another pod's veth: they carry a carrier) are left alone unless
 * cfg_shape_node_local.
 *
 * Neither counts: the cgroup programs count at the sockets.
 */
#include <linux/pkt_cls.h>

#include "netqos_maps.bpf.h"

/* Set by the loader: node-local packets (which never cross a NIC) are shaped by the receiving
 * pod's ingress cap too.
 */
const volatile __u32 cfg_shape_node_local = 0;

/* The class entry of the container that owns the veth's pod, or NULL. */
static __always_inline struct netqos_class *netqos_veth_class(struct __sk_buff *skb)
{
	__u32 ifindex = skb->ifindex;
	struct netqos_veth *v = bpf_map_lookup_elem(&NETQOS_MAP_VETH, &ifindex);

	if (!v)
		return 0;
	__u64 id = v->cgroup_id;

	return bpf_map_lookup_elem(&NETQOS_MAP_CLASS, &id);
}

SEC("tc")
int netqos_pod_tx(struct __sk_buff *skb)
{
	__u64 cgroup_id;
	struct netqos_class *cls = netqos_skb_class(skb, &cgroup_id);

	/* A socket that names no container with a slot (the sandbox's, a kernel reply's, none at
	 * all for what the pod forwards) is the pod's.
	 */
	if (!cls || !cls->slot)
		cls = netqos_veth_class(skb);
	if (cls && cls->slot)
		skb->queue_mapping = NETQOS_CARRIER_FLAG | cls->slot;
	return TC_ACT_OK;
}

SEC("tc")
int netqos_pod_rx(struct __sk_buff *skb)
{
	/* From the host's own sockets (no receiving device), or carried from another pod's veth. */
	if (!cfg_shape_node_local &&
	    (!skb->ingress_ifindex || (skb->queue_mapping & NETQOS_CARRIER_FLAG)))
		return TC_ACT_OK;
	struct netqos_class *cls = netqos_veth_class(skb);

	if (!cls)
		return TC_ACT_OK;
	if (cls->priority)
		skb->priority = cls->priority;
	return (cls->flags & NETQOS_CLASS_F_INGRESS_SHAPED) ? TC_ACT_UNSPEC : TC_ACT_OK;
}

/* The kernel's license_is_gpl_compatible() accepts "Dual BSD/GPL": GPL-only helpers stay usable. */
char LICENSE[] SEC("license") = "Dual BSD/GPL";
