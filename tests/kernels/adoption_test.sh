#!/usr/bin/env bash
# netqosd's life on one kernel, for the kernel lab (scripts/kernel-lab.sh; test.sh's kernels
# stage): started with enforcement on the unified cgroup v2 hierarchy, it classifies a container
# by its cgroup id; the container's HTB leaf on the NIC holds what it sends to the cap (at most
# 2 % above, at most 5 % below: FLOOR), and its leaf on the NIC's IFB what it receives (netqos_ingress and the act_mirred redirect
# behind it); after kill -9 the pinned programs, filters and qdiscs keep both caps; a restarted
# netqosd adopts the pinned state (same leaf, no root qdisc re-created) and the caps still hold;
# `netqosd --uninstall` leaves no pin, qdisc, filter or IFB. A rate is measured on the wire (the
# leaf's byte counter) from samples whose timestamps bracket the read, with the bracket as the
# error bound, so that a TCG guest's jitter does not pass for a cap error (nor hide one). One
# direction at a time: the other flow's client is stopped (SIGSTOP) meanwhile, as each leaf also
# carries the other flow's ACKs (docs/enforcement.md, "One container, both directions at once").
#
#   tests/kernels/adoption_test.sh [BUILD_DIR]   (root; default build)
#   LAB_CAP_MBPS  the container's allocation (default 100: what a 2-vCPU TCG guest carries)
#   LAB_NO_TRAFFIC=1  no iperf3 and no rate checks: the rest (classification, kill -9, adoption,
#                 --uninstall), for a quick look
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=scripts/lib/lab-work.sh
. scripts/lib/lab-work.sh
# shellcheck source=scripts/lib/lab-netqosd.sh
. scripts/lib/lab-netqosd.sh
BUILD_DIR=${1:-build}
NETQOSD=$PWD/$BUILD_DIR/bin/netqosd
NETQOSCTL=$PWD/$BUILD_DIR/bin/netqosctl
CAP=${LAB_CAP_MBPS:-100}
TOL=0.02
# The floor: 5 % below the cap, not 2 %. HTB sleeps on a timer between bursts, and a TCG guest on
# a busy or slow host wakes it late: CI measured 97.5-98.4 % over five windows of the received
# flow on 5.10. A shaper holding a container far below its allocation still fails; above the cap
# the bound stays 2 %.
FLOOR=0.05
((EUID == 0)) || fail "needs root"
for t in "$NETQOSD" "$NETQOSCTL"; do [[ -x $t ]] || fail "missing $t"; done

TAG=nqk$(($$ % 10000))
NS=$TAG-r NIC=${TAG}a PEER=${TAG}p IP=10.250.1.1 REMOTE=10.250.1.2 PORT=15501 PORT_IN=15502
WORK=$(mktemp -d /tmp/netqos-adopt.XXXXXX)
PIN_DIR=$WORK/bpf/netqos STATE=$WORK/state SOCK_DIR=$WORK/sock LOG=$WORK/netqosd.log
SOCK=$SOCK_DIR/qrm_network_plugin_static.sock
CGROOT=$("$NETQOSCTL" cgroup-mount) || fail "no cgroup2 mount"
[[ $CGROOT == /sys/fs/cgroup ]] || fail "cgroup2 is mounted at '$CGROOT', not unified at /sys/fs/cgroup"
ROOT_NAME=netqos-lab-$TAG
UID_=lab-1 CID=c0ffee01
CG=$CGROOT/$ROOT_NAME/pod$UID_/$CID
DAEMON="" SERVER="" CLIENT="" SERVER_IN="" CLIENT_IN=""

cleanup() {
  local p
  for p in $CLIENT $CLIENT_IN $SERVER $SERVER_IN $DAEMON; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  [[ -e $PIN_DIR ]] && "$NETQOSD" --uninstall --bpf-pin-dir="$PIN_DIR" --qrm-state-dir="$STATE" >/dev/null 2>&1
  ip link del "$NIC" 2>/dev/null
  ip netns del "$NS" 2>/dev/null
  lab_work_down "$CGROOT/$ROOT_NAME" "$WORK"
}
trap cleanup EXIT


# skb->priority of the class map's entry for a cgroup (its HTB leaf handle), "" when none.
priority_of() {
  bpftool map dump pinned "$PIN_DIR/netqos_cls_v1" 2>/dev/null |
    grep -A3 "\"key\": $(stat -c %i "$1")," | sed -n 's/.*"priority": \([0-9]*\).*/\1/p'
}

# Mbit/s leaf $2 of device $1 sent over $3 seconds on the wire, and the bound of its timing error
# in % (tests/kernels/tc_rate.py).
leaf_mbps() { python3 tests/kernels/tc_rate.py "$1" "class $2" "$3"; }

# The cap holds on DEV's leaf (the NIC's: what the container sends; the IFB's: what it receives):
# a window provably above cap+2 % fails at once; below cap-5 % (the sender starved of CPU on a
# busy host, not an enforcement error: the guest's 2 TCG vCPUs carry both ends of the flow, its
# ACKs through the IFB, and netqosd's passes) or too uncertain to tell is measured again, at most
# 5 windows. Only the flow of that direction runs (the other one's client is stopped meanwhile).
check_cap() {
  local what=$1 dev=$2 out r e verdict attempt
  if [[ -n ${LAB_NO_TRAFFIC:-} ]]; then
    tc class show dev "$dev" classid "$LEAF" | grep -q "rate ${CAP}Mbit ceil ${CAP}Mbit" ||
      fail "$what: leaf $LEAF on $dev is gone or not $CAP Mbit/s"
    echo "  $what: leaf $LEAF on $dev is in place at $CAP Mbit/s (LAB_NO_TRAFFIC: rate not measured)"
    return 0
  fi
  if [[ $dev == "$NIC" ]]; then
    kill -STOP "$CLIENT_IN"; kill -CONT "$CLIENT"
  else
    kill -STOP "$CLIENT"; kill -CONT "$CLIENT_IN"
  fi
  sleep 2  # the stopped flow's queue drains, the other one fills its leaf
  for attempt in 1 2 3 4 5; do
    out=$(leaf_mbps "$dev" "$LEAF" 5) || fail "$what: measuring $LEAF on $dev"
    read -r r e <<<"$out"
    verdict=$(awk -v r="$r" -v e="$e" -v c="$CAP" -v t="$TOL" -v f="$FLOOR" 'BEGIN {
      lo = r * (1 - e / 100); hi = r * (1 + e / 100)
      print (lo > c * (1 + t)) ? "above" : (lo >= c * (1 - f) && hi <= c * (1 + t)) ? "ok" : "again" }')
    echo "  $what: leaf $LEAF on $dev sent $r Mbit/s on the wire (+-$e % timing; cap $CAP -5/+2 %; window $attempt)"
    case $verdict in
      ok) return 0 ;;
      above) fail "$what: $r Mbit/s is above the cap of $CAP Mbit/s + 2 %" ;;
    esac
  done
  fail "$what: $r Mbit/s (+-$e %) on $dev not shown within $CAP Mbit/s -5/+2 % in 5 windows"
}

# Both caps: what the container sends (its leaf on the NIC) and what it receives (on the IFB).
check_caps() {
  check_cap "$1, sent" "$NIC"
  check_cap "$1, received" "$IFB"
}

echo "== $(uname -r): a veth into a netns, a container cgroup under /$ROOT_NAME, a private bpffs"
ip netns add "$NS" || fail "ip netns add"
ip link add "$NIC" type veth peer name "$PEER" netns "$NS" || fail "veth"
{ ip addr add "$IP/24" dev "$NIC" && ip link set "$NIC" up &&
  ip -n "$NS" addr add "$REMOTE/24" dev "$PEER" && ip -n "$NS" link set "$PEER" up &&
  ip -n "$NS" link set lo up; } || fail "addresses"
{ mkdir -p "$WORK/bpf" "$SOCK_DIR" "$STATE" "$CGROOT/$ROOT_NAME" && mount -t bpf bpf "$WORK/bpf"; } ||
  fail "bpffs"
cat >"$WORK/pods.json" <<EOF
{"kind": "PodList", "items": [{"metadata": {"uid": "$UID_", "namespace": "lab", "name": "web",
  "annotations": {"katalyst.kubewharf.io/qos_level": "shared_cores"}},
  "status": {"qosClass": "Burstable", "containerStatuses": [{"name": "app", "containerID": "containerd://$CID"}]}}]}
EOF

echo "== netqosd with enforcement on $NIC; Allocate $CAP Mbit/s; the runtime creates the cgroup"
lab_netqosd_start --shaping-mode=htb
ctl allocate --pod-uid "$UID_" --pod-namespace lab --pod-name web --container app \
  --qos shared_cores --mbps "$CAP" >/dev/null || { log_tail; fail "Allocate"; }
mkdir -p "$CG" || fail "mkdir $CG"
PRIO=
for _ in $(seq 100); do PRIO=$(priority_of "$CG"); [[ -n $PRIO ]] && break; sleep 0.1; done
[[ -n $PRIO ]] || { log_tail; fail "no class map entry for cgroup id $(stat -c %i "$CG") after 10 s"; }
LEAF=$(printf '10:%x' $((PRIO & 0xffff)))
echo "  cgroup id $(stat -c %i "$CG") -> skb->priority $PRIO, HTB leaf $LEAF"
IFB=nqifb$(<"/sys/class/net/$NIC/ifindex")
for dev in "$NIC" "$IFB"; do
  tc class show dev "$dev" classid "$LEAF" | grep -q "rate ${CAP}Mbit ceil ${CAP}Mbit" ||
    fail "leaf $LEAF on $dev is not $CAP Mbit/s: $(tc class show dev "$dev" classid "$LEAF")"
done
echo "  leaf $LEAF at $CAP Mbit/s on $NIC (sent) and on $IFB (received)"
# netqos_ingress, then the u32 rule whose act_mirred hands the packets it picks to the IFB (both
# attached after the IFB's tree, so maybe a moment after its leaf).
redirect_attached() {
  local f
  f=$(tc filter show dev "$NIC" ingress)
  grep -q "netqos_ingress" <<<"$f" && grep -q "mirred (Egress Redirect to device $IFB)" <<<"$f"
}
for _ in $(seq 100); do redirect_attached && break; sleep 0.1; done
redirect_attached || { log_tail; fail "no netqos_ingress and redirect to $IFB on $NIC: $(tc filter show dev "$NIC" ingress)"; }

echo "== bulk TCP from and to the container's cgroup${LAB_NO_TRAFFIC:+ (not run: LAB_NO_TRAFFIC)}"
[[ -n ${LAB_NO_TRAFFIC:-} ]] || {
nsenter --net="/run/netns/$NS" iperf3 -s -B "$REMOTE" -p "$PORT" >/dev/null 2>&1 &
SERVER=$!
nsenter --net="/run/netns/$NS" iperf3 -s -B "$REMOTE" -p "$PORT_IN" >/dev/null 2>&1 &
SERVER_IN=$!
for port in "$PORT" "$PORT_IN"; do
  for _ in $(seq 150); do
    [[ -n $(ss -N "$NS" -Hltn "src $REMOTE:$port" 2>/dev/null) ]] && break
    sleep 0.1
  done
done
# Long enough for every check (each stopped while the other direction is measured).
sh -c "echo \$\$ > $CG/cgroup.procs && exec iperf3 -c $REMOTE -p $PORT -t 600" >/dev/null 2>&1 &
CLIENT=$!
sh -c "echo \$\$ > $CG/cgroup.procs && exec iperf3 -c $REMOTE -p $PORT_IN -t 600 -R" >/dev/null 2>&1 &
CLIENT_IN=$!
}
check_caps "netqosd running"

echo "== kill -9 netqosd: the pinned state keeps the caps"
kill -KILL "$DAEMON"; wait "$DAEMON" 2>/dev/null; DAEMON=
check_caps "no daemon"

echo "== restart: netqosd adopts the pinned state"
: >"$LOG"
lab_netqosd_start --shaping-mode=htb
sleep 1
[[ $(priority_of "$CG") == "$PRIO" ]] || fail "the restarted daemon moved the container off $LEAF"
grep -q 'qdisc_created=true' "$LOG" && { log_tail; fail "the restart re-created a root qdisc"; }
grep -E 'adopting|qdisc_created' "$LOG" | head -n 3 | sed 's/^/  log: /'
check_caps "restarted"

echo "== netqosd --uninstall"
for p in $CLIENT $CLIENT_IN; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
CLIENT='' CLIENT_IN=''
kill -TERM "$DAEMON"; wait "$DAEMON" 2>/dev/null; DAEMON=
"$NETQOSD" --uninstall --bpf-pin-dir="$PIN_DIR" --qrm-state-dir="$STATE" >>"$LOG" 2>&1 ||
  { log_tail; fail "--uninstall exited non-zero"; }
[[ -e $PIN_DIR ]] && fail "pins left in $PIN_DIR: $(ls "$PIN_DIR")"
tc qdisc show dev "$NIC" | grep -q htb && fail "HTB left on $NIC"
[[ -z $(tc filter show dev "$NIC" ingress) ]] || fail "filters left on $NIC ingress: $(tc filter show dev "$NIC" ingress)"
ip -o link show | grep -q nqifb && fail "an IFB left behind: $(ip -o link show | grep nqifb)"
bpftool cgroup show "$CGROOT" 2>/dev/null | grep -q netqos && fail "a cgroup program left on $CGROOT"
if [[ -n ${LAB_NO_TRAFFIC:-} ]]; then
  echo "PASS: classified by cgroup id, leaves kept (running, killed, adopted; no traffic), nothing left after --uninstall"
else
  echo "PASS: classified by cgroup id, cap held (-5/+2 %) sent and received (running, killed, adopted), nothing left after --uninstall"
fi
