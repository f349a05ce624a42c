#!/usr/bin/env bash
# How long the kernel takes to create N HTB classes under one qdisc, without netqos: `tc -batch`
# adds N leaves to a fresh HTB tree on a veth in a namespace of its own, for each N given. The
# time per class grows with N: on every class creation the kernel walks all classes of the qdisc
# to re-bind filters (tc_ctl_tclass -> tc_bind_tclass), taking each class's filter-block mutex,
# so creating N classes costs O(N^2) whatever the netlink batching. docs/benchmarks.md ("Cold
# enforcement") records what this machine measured.
#
#   bench/htb_class_scaling.sh [N ...]   (root; default N: 1000 2000 5000 10000)
set -euo pipefail
ns=nqbench-htb-$$
batch=$(mktemp /tmp/nqbench-htb.XXXXXX)
cleanup() {
  ip netns del "$ns" 2>/dev/null || true
  rm -f "$batch"
}
trap cleanup EXIT INT TERM

counts=("$@")
((${#counts[@]})) || counts=(1000 2000 5000 10000)
printf '%8s %10s %14s %s\n' classes seconds "us per class" "vs the first"
first_per_class=""
for n in "${counts[@]}"; do
  [[ $n =~ ^[1-9][0-9]*$ && $n -le 60000 ]] || { echo "N must be 1..60000: $n" >&2; exit 2; }
  ip netns add "$ns"
  ip -n "$ns" link add b0 type veth peer name b1
  ip -n "$ns" link set b0 up
  ip netns exec "$ns" tc qdisc add dev b0 root handle 10: htb default 1
  ip netns exec "$ns" tc class add dev b0 parent 10: classid 10:1 htb rate 10gbit
  for ((i = 0; i < n; i++)); do
    printf 'class add dev b0 parent 10:1 classid 10:%x htb rate 10mbit ceil 10mbit prio 1 quantum 1514\n' \
      $((0x100 + i))
  done >"$batch"
  start=$(date +%s%N)
  ip netns exec "$ns" tc -batch "$batch"
  end=$(date +%s%N)
  made=$(ip netns exec "$ns" tc class show dev b0 | grep -c '^class htb 10:')
  ((made == n + 1)) || { echo "expected $((n + 1)) classes, found $made" >&2; exit 1; }
  ip netns del "$ns"
  per_class=$(((end - start) / 1000 / n))
  [[ -n $first_per_class ]] || first_per_class=$per_class
  # awk for the arithmetic: bc is not on a minimal Debian.
  awk -v n="$n" -v ns=$((end - start)) -v per="$per_class" -v first="$first_per_class" \
    'BEGIN { printf "%8d %10.3f %14d %11.1fx\n", n, ns / 1e9, per, per / (first > 0 ? first : 1) }'
done
