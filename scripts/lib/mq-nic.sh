#!/usr/bin/env bash
# shellcheck shell=bash
# A multi-queue NIC as production nodes have it, for the privileged tests and benchmarks: a veth
# pair with N TX/RX queues (default 4) whose host end carries an `mq` root with one `fq` (or
# fq_codel: MQ_NIC_LEAF) per TX queue, the other end in a network namespace of its own.
#
# Run it:
#   scripts/lib/mq-nic.sh up   NAME NETNS [HOST_CIDR [PEER_CIDR [QUEUES]]]
#   scripts/lib/mq-nic.sh down NAME NETNS
#   scripts/lib/mq-nic.sh check NAME [QUEUES]   exit 0 iff NAME has mq + QUEUES leaves
# or source it and call mq_nic_up / mq_nic_down / mq_nic_check with the same arguments.
#   defaults: HOST_CIDR 10.251.0.1/24, PEER_CIDR 10.251.0.2/24, QUEUES 4; the peer end is
#   NAME + "p" (so NAME has at most 14 characters).
# Needs sch_mq (built into every kernel of the lab) and sch_fq: the host VM here has no sch_fq,
# the kernel lab's guests (scripts/kernel-lab.sh) do.

# mq_nic_up NAME NETNS [HOST_CIDR [PEER_CIDR [QUEUES]]]
mq_nic_up() {
  local name=$1 ns=$2 host_cidr=${3:-10.251.0.1/24} peer_cidr=${4:-10.251.0.2/24} queues=${5:-4}
  local leaf=${MQ_NIC_LEAF:-fq} peer=${1}p i
  ((${#name} <= 14)) || { echo "mq-nic: NAME '$name' is longer than 14 characters" >&2; return 2; }
  [[ -e /run/netns/$ns ]] || ip netns add "$ns" || return
  ip link add "$name" numtxqueues "$queues" numrxqueues "$queues" type veth \
    peer name "$peer" numtxqueues "$queues" numrxqueues "$queues" netns "$ns" || return
  ip addr add "$host_cidr" dev "$name" &&
    ip link set "$name" up &&
    ip -n "$ns" addr add "$peer_cidr" dev "$peer" &&
    ip -n "$ns" link set "$peer" up &&
    ip -n "$ns" link set lo up || return
  # mq's classes are 1:1 .. 1:N, one per TX queue; each gets its own leaf qdisc.
  tc qdisc replace dev "$name" root handle 1: mq || return
  for ((i = 1; i <= queues; i++)); do
    tc qdisc replace dev "$name" parent "1:$(printf %x "$i")" handle "$(printf %x $((0x10 + i)))": "$leaf" ||
      return
  done
  mq_nic_check "$name" "$queues"
}

# mq_nic_down NAME NETNS: the pair (deleting one end deletes both) and the namespace.
mq_nic_down() {
  local name=$1 ns=$2
  ip link del "$name" 2>/dev/null
  [[ ! -e /run/netns/$ns ]] || ip netns del "$ns"
  ! ip link show "$name" >/dev/null 2>&1
}

# mq_nic_check NAME [QUEUES]: NAME's root is mq with QUEUES leaves of MQ_NIC_LEAF (default fq),
# and it has that many TX and RX queues.
mq_nic_check() {
  local name=$1 queues=${2:-4} leaf=${MQ_NIC_LEAF:-fq} show roots leaves tx rx
  show=$(tc qdisc show dev "$name") || return
  roots=$(grep -c '^qdisc mq 1: root' <<<"$show")
  leaves=$(grep -c "^qdisc $leaf [0-9a-f]*: parent 1:" <<<"$show")
  tx=$(find "/sys/class/net/$name/queues" -maxdepth 1 -name 'tx-*' | wc -l)
  rx=$(find "/sys/class/net/$name/queues" -maxdepth 1 -name 'rx-*' | wc -l)
  if ((roots == 1 && leaves == queues && tx == queues && rx == queues)); then return 0; fi
  echo "mq-nic: $name has $roots mq root(s), $leaves $leaf leaves, $tx tx and $rx rx queues; want 1, $queues, $queues, $queues:" >&2
  echo "$show" >&2
  return 1
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -uo pipefail
  cmd=${1:-}
  shift || true
  case $cmd in
    up) (($# >= 2)) || { sed -n '7,10p' "$0" >&2; exit 2; }; mq_nic_up "$@" ;;
    down) (($# == 2)) || { sed -n '7,10p' "$0" >&2; exit 2; }; mq_nic_down "$@" ;;
    check) (($# >= 1)) || { sed -n '7,10p' "$0" >&2; exit 2; }; mq_nic_check "$@" ;;
    *) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
fi
