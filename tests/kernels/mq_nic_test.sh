#!/usr/bin/env bash
# The multi-queue NIC helper (scripts/lib/mq-nic.sh), proven: a 4-queue veth with an mq root and
# 4 fq leaves, TCP across it spread over more than one of them, and nothing left after `down`.
# Needs root and sch_fq: it runs inside the kernel lab (scripts/kernel-lab.sh), whose guests have
# fq; on a kernel without sch_fq it fails, saying so.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=scripts/lib/mq-nic.sh
. scripts/lib/mq-nic.sh

NIC=nqmq$$ NS=nqmq-$$ PEER_IP=10.251.0.2
fail() { echo "FAIL: $*" >&2; exit 1; }
server=
cleanup() {
  [[ -z $server ]] || kill -KILL "$server" 2>/dev/null
  mq_nic_down "$NIC" "$NS" >/dev/null 2>&1
}
trap cleanup EXIT

grep -qw '^sch_fq' /proc/modules || modprobe sch_fq 2>/dev/null || fail "no sch_fq in $(uname -r)"
mq_nic_up "$NIC" "$NS" 10.251.0.1/24 "$PEER_IP/24" 4 || fail "mq_nic_up"
echo "tc qdisc show dev $NIC:"
tc qdisc show dev "$NIC" | sed 's/^/  /'
mq_nic_check "$NIC" 4 || fail "not mq + 4 fq"

nsenter --net="/run/netns/$NS" iperf3 -s -1 -B "$PEER_IP" -p 5299 >/dev/null 2>&1 &
server=$!
for _ in $(seq 50); do
  nsenter --net="/run/netns/$NS" ss -ltn 2>/dev/null | grep -q ":5299 " && break
  sleep 0.1
done
iperf3 -c "$PEER_IP" -p 5299 -P 8 -t 2 >/dev/null || fail "iperf3 across $NIC"
wait "$server" 2>/dev/null
server=

# Packets per fq leaf: TCP flows are hashed over the TX queues.
mapfile -t sent < <(tc -s qdisc show dev "$NIC" | awk '/^qdisc fq / { q = 1; next } q && /Sent/ { print $4; q = 0 }')
used=0
for p in "${sent[@]}"; do ((p > 0)) && used=$((used + 1)); done
echo "packets per fq leaf: ${sent[*]}"
((${#sent[@]} == 4)) || fail "${#sent[@]} fq leaves have statistics, want 4"
((used >= 2)) || fail "8 TCP flows used $used of 4 queues"

mq_nic_down "$NIC" "$NS" || fail "mq_nic_down"
ip link show "$NIC" >/dev/null 2>&1 && fail "$NIC still exists"
[[ -e /run/netns/$NS ]] && fail "netns $NS still exists"
echo "PASS: mq + 4 fq on a 4-queue veth, traffic over $used queues, nothing left"
