#!/usr/bin/env bash
# Does this kernel pass on a packet that a tc ingress program redirects to an IFB with
# bpf_redirect()? netqos's ingress shaping is exactly that (bpf/netqos_nic.bpf.c, netqos_done).
# Independent of netqos: a 1-line tc program (compiled here with clang), a veth into a netns, an
# IFB, 20 UDP datagrams sent to the veth. The IFB's counters tell: ifb_xmit() counts a packet it
# drops because the skb is not marked redirected in rx_dropped, one it passes on in tx_packets.
#
#   tests/kernels/ifb_redirect_probe.sh   (root)
#   exit 0: passes (tx_packets = 20); 3: drops (rx_dropped = 20); anything else: probe failed
set -uo pipefail
TAG=nqpr$(($$ % 10000))
NS=$TAG HOST=${TAG}h PEER=${TAG}p IFB=${TAG}i
WORK=$(mktemp -d /tmp/netqos-probe.XXXXXX)
# shellcheck disable=SC2317  # the EXIT trap calls it
cleanup() {
  ip link del "$HOST" 2>/dev/null
  ip link del "$IFB" 2>/dev/null
  ip netns del "$NS" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
err() { echo "ifb-redirect probe: $*" >&2; exit 2; }

{ ip netns add "$NS" && ip link add "$HOST" type veth peer name "$PEER" netns "$NS" &&
  ip addr add 10.249.0.1/24 dev "$HOST" && ip link set "$HOST" up &&
  ip -n "$NS" addr add 10.249.0.2/24 dev "$PEER" && ip -n "$NS" link set "$PEER" up &&
  ip link add "$IFB" type ifb && ip link set "$IFB" up; } || err "setup"
ifindex=$(<"/sys/class/net/$IFB/ifindex")

cat >"$WORK/probe.bpf.c" <<EOF
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
SEC("tc")
int to_ifb(struct __sk_buff *skb) { return bpf_redirect($ifindex, 0); }
char LICENSE[] SEC("license") = "GPL";
EOF
clang -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu -c "$WORK/probe.bpf.c" -o "$WORK/probe.bpf.o" ||
  err "clang"
{ tc qdisc add dev "$HOST" clsact &&
  tc filter add dev "$HOST" ingress bpf da obj "$WORK/probe.bpf.o" sec tc; } || err "attaching the tc program"

# The peer needs the host end's MAC before it sends: a static neighbour, so that no ARP reply
# (which would itself be redirected) is needed.
mac=$(<"/sys/class/net/$HOST/address")
ip -n "$NS" neigh replace 10.249.0.1 lladdr "$mac" dev "$PEER" nud permanent || err "neighbour"
stat() { cat "/sys/class/net/$IFB/statistics/$1"; }
d0=$(stat rx_dropped) t0=$(stat tx_packets)
# shellcheck disable=SC2016  # expanded by the inner bash
nsenter --net="/run/netns/$NS" bash -c 'for i in $(seq 20); do echo probe >/dev/udp/10.249.0.1/9; done' ||
  err "sending"
sleep 0.5
dropped=$(($(stat rx_dropped) - d0)) passed=$(($(stat tx_packets) - t0))
echo "ifb-redirect probe on $(uname -r): 20 datagrams redirected by bpf_redirect(); the IFB passed on $passed, dropped $dropped (rx_dropped)"
((passed >= 20)) && exit 0
((dropped >= 20)) && exit 3
err "inconclusive: passed $passed, dropped $dropped of 20"
