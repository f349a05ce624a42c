#!/usr/bin/env bash
# Does this kernel's IFB pass on the packets netqos's ingress shaping hands it? netqos does it the
# way this probe's first case does (bpf/netqos_nic.bpf.c netqos_done, userspace/bpf/nic_attach.h):
# a tc program at clsact ingress gives the packet no verdict (TC_ACT_UNSPEC), and the next filter,
# a u32 rule matching every packet, redirects it to the IFB with act_mirred. The second case is
# what netqos did before: the program itself calls bpf_redirect(). Kept as the record of why: on
# Debian's 5.10 and 6.1 the IFB drops every packet bpf_redirect() sends it (ifb_xmit wants the skb
# marked as redirected, with the device it came from, which only act_mirred does there); 6.12
# passes them on.
# Independent of netqos: 1-line tc programs (compiled here with clang), a veth into a netns, an
# IFB, 20 UDP datagrams sent to the veth per case. The IFB's counters tell: ifb_xmit() counts a
# packet it drops in rx_dropped, one it passes on in tx_packets.
#
#   tests/kernels/ifb_redirect_probe.sh   (root)
#   prints one line per case; exit 0: the act_mirred case passes (tx_packets +20); 3: it drops
#   (rx_dropped +20); anything else: the probe failed. The bpf_redirect() case's result is printed
#   only, and in the last line: "bpf_redirect: passes" or "bpf_redirect: drops".
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
  ip link add "$IFB" type ifb; } || err "setup"
# The IFB's own IPv6 packets (router solicitations, MLD) would land in its rx_dropped too.
{ echo 1 >"/proc/sys/net/ipv6/conf/$IFB/disable_ipv6"; } 2>/dev/null
ip link set "$IFB" up || err "setup"
ifindex=$(<"/sys/class/net/$IFB/ifindex")

# prog NAME BODY: compiles a tc program whose body is BODY to $WORK/NAME.o
prog() {
  cat >"$WORK/$1.bpf.c" <<EOF
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
SEC("tc")
int $1(struct __sk_buff *skb) { $2 }
char LICENSE[] SEC("license") = "GPL";
EOF
  clang -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu -c "$WORK/$1.bpf.c" -o "$WORK/$1.o" ||
    err "clang $1"
}
prog no_verdict "return TC_ACT_UNSPEC;"
prog to_ifb "return bpf_redirect($ifindex, 0);"

# The peer needs the host end's MAC before it sends: a static neighbour, so that no ARP reply
# (which would itself be redirected) is needed.
mac=$(<"/sys/class/net/$HOST/address")
ip -n "$NS" neigh replace 10.249.0.1 lladdr "$mac" dev "$PEER" nud permanent || err "neighbour"
stat() { cat "/sys/class/net/$IFB/statistics/$1"; }

# probe WHAT: sends 20 datagrams through the filters on $HOST now; prints a line, sets $verdict.
probe() {
  local d0 t0 dropped passed
  d0=$(stat rx_dropped) t0=$(stat tx_packets)
  # shellcheck disable=SC2016  # expanded by the inner bash
  nsenter --net="/run/netns/$NS" bash -c 'for i in $(seq 20); do echo probe >/dev/udp/10.249.0.1/9; done' ||
    err "sending"
  sleep 0.5
  dropped=$(($(stat rx_dropped) - d0)) passed=$(($(stat tx_packets) - t0))
  echo "ifb-redirect probe on $(uname -r): 20 datagrams redirected by $1; the IFB passed on $passed, dropped $dropped (rx_dropped)"
  if ((passed >= 20)); then verdict=passes
  elif ((dropped >= 20)); then verdict=drops
  else err "inconclusive ($1): passed $passed, dropped $dropped of 20"
  fi
}

# netqos's way: no verdict from the program, act_mirred in the next filter.
{ tc qdisc add dev "$HOST" clsact &&
  tc filter add dev "$HOST" ingress pref 1 bpf da obj "$WORK/no_verdict.o" sec tc &&
  tc filter add dev "$HOST" ingress pref 2 protocol all u32 match u32 0 0 \
    action mirred egress redirect dev "$IFB"; } || err "attaching the tc program and the u32 filter"
probe "a tc program's TC_ACT_UNSPEC and act_mirred (netqos)"
mirred=$verdict

# The record: bpf_redirect() from the program.
{ tc qdisc del dev "$HOST" clsact && tc qdisc add dev "$HOST" clsact &&
  tc filter add dev "$HOST" ingress bpf da obj "$WORK/to_ifb.o" sec tc; } || err "attaching the bpf_redirect() program"
probe "bpf_redirect()"
echo "act_mirred: $mirred; bpf_redirect: $verdict"
[[ $mirred == passes ]] && exit 0
exit 3
