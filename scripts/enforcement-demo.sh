#!/usr/bin/env bash
# Enforcement end to end, on this machine, with real kernel objects: two "containers" (cgroups)
# get 100 and 300 Mbit/s through the plugin's gRPC socket, send bulk TCP over a veth into a
# network namespace, and are held to their allocations on the wire (HTB leaf bytes, +-2 Mbit/s);
# the pinned class map shows both with named fields; the caps survive `kill -9` of netqosd; a
# restarted netqosd adopts the pinned state; a removed pod loses its cap; --uninstall removes it all.
# Exits non-zero when a check fails. Every object it creates is removed on exit, also on failure.
#
# Usage: scripts/enforcement-demo.sh [BUILD_DIR]   (root; needs iperf3, bpftool, iproute2)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD_DIR=${1:-${BUILD_DIR:-build}}
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
NETQOSD=$BUILD_DIR/bin/netqosd
NETQOSCTL=$BUILD_DIR/bin/netqosctl
for tool in "$NETQOSD" "$NETQOSCTL"; do
  [[ -x $tool ]] || { echo "missing $tool: build first (cmake --build $BUILD_DIR)" >&2; exit 2; }
done
for tool in iperf3 bpftool ip tc nsenter; do
  command -v "$tool" >/dev/null || { echo "missing $tool (scripts/install-deps.sh)" >&2; exit 2; }
done
if [[ $(id -u) != 0 ]]; then
  echo "run as root: this creates namespaces, cgroups and BPF programs" >&2
  [[ ${CI:-} == true ]] && exit 1  # CI runs as root: a missing privilege is a failure there
  exit 77                          # CTest's skip code
fi

bold() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

TAG=nqd$(( $$ % 100000 ))
NS=${TAG}ns
HOST_IF=${TAG}h
PEER_IF=${TAG}p
CGROOT=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
[[ -n $CGROOT ]] || fail "no cgroup2 mount"
DEMO_CG=$CGROOT/netqos-demo-$TAG      # an extra kubepods root (--addition-cgroup-paths)
WORK=$(mktemp -d /tmp/netqos-enforce.XXXXXX)
PIN_DIR=$WORK/bpf/netqos
SOCK_DIR=$WORK/plugins_registry
STATE_DIR=$WORK/qrm_advisor
SOCK=$SOCK_DIR/qrm_network_plugin_static.sock
DAEMON_PID=
PIDS=()

kill_cgroup() {  # kill every process of a cgroup tree, then remove it (deepest first)
  local dir=$1
  [[ -d $dir ]] || return 0
  find "$dir" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
  sleep 0.2
  find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null || true
}
cleanup() {
  set +e
  [[ -n $DAEMON_PID ]] && kill -KILL "$DAEMON_PID" 2>/dev/null
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  if [[ -d $PIN_DIR || -e $STATE_DIR/netqos-enforced-links.json ]]; then
    "$NETQOSD" --uninstall --bpf-pin-dir="$PIN_DIR" --qrm-state-dir="$STATE_DIR" \
      --enforce-nics="$HOST_IF" >/dev/null 2>&1
  fi
  kill_cgroup "$DEMO_CG"
  ip netns pids "$NS" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
  ip netns del "$NS" 2>/dev/null
  ip link del "$HOST_IF" 2>/dev/null
  mountpoint -q "$WORK/bpf" && umount "$WORK/bpf"
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ctl() { "$NETQOSCTL" --socket "$SOCK" "$@"; }

bold "a veth into a network namespace, two container cgroups, a private bpffs"
ip netns add "$NS"
ip link add "$HOST_IF" type veth peer name "$PEER_IF"
ip link set "$PEER_IF" netns "$NS"
ip addr add 10.251.0.1/24 dev "$HOST_IF" && ip link set "$HOST_IF" up
ip -n "$NS" addr add 10.251.0.2/24 dev "$PEER_IF"
ip -n "$NS" link set "$PEER_IF" up && ip -n "$NS" link set lo up
mkdir -p "$WORK/bpf" && mount -t bpf bpf "$WORK/bpf"
POD_A=aaaaaaaa-0000-4000-8000-00000000000a; CID_A=c0ffee0a
POD_B=bbbbbbbb-0000-4000-8000-00000000000b; CID_B=c0ffee0b
CG_A=$DEMO_CG/pod$POD_A/$CID_A
CG_B=$DEMO_CG/pod$POD_B/$CID_B
mkdir -p "$CG_A" "$CG_B"
echo "veth $HOST_IF (10.251.0.1) <-> $NS/$PEER_IF (10.251.0.2); cgroups $CG_A (id $(stat -c %i "$CG_A")), $CG_B (id $(stat -c %i "$CG_B"))"

# What the kubelet's /pods would say about the two pods (file:// stands in for the kubelet API).
cat >"$WORK/pods.json" <<EOF
{"kind": "PodList", "items": [
 {"metadata": {"uid": "$POD_A", "namespace": "demo", "name": "pod-a"},
  "status": {"qosClass": "Burstable", "containerStatuses": [{"name": "app", "containerID": "containerd://$CID_A"}]}},
 {"metadata": {"uid": "$POD_B", "namespace": "demo", "name": "pod-b"},
  "status": {"qosClass": "Burstable", "containerStatuses": [{"name": "app", "containerID": "containerd://$CID_B"}]}}
]}
EOF

# Only the demo veth is a NIC for this daemon: deny every other link of the host.
DENY=$(ls /sys/class/net | grep -vx "$HOST_IF" | paste -sd, -)
start_daemon() {
  "$NETQOSD" --nic-allow="$HOST_IF" --nic-deny="$DENY" --enforce-nics="$HOST_IF" \
    --kubelet-pods-url="file://$WORK/pods.json" --addition-cgroup-paths="/netqos-demo-$TAG" \
    --bpf-pin-dir="$PIN_DIR" --qrm-socket-dirs="$SOCK_DIR" --qrm-state-dir="$STATE_DIR" \
    --enforcement-resync-period=5 >>"$WORK/netqosd.log" 2>&1 &
  DAEMON_PID=$!
  for _ in $(seq 100); do
    ctl plugin-info >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  cat "$WORK/netqosd.log" >&2
  fail "netqosd did not start"
}

bold "start netqosd: eBPF classification on the cgroup v2 root, HTB on $HOST_IF"
start_daemon
grep -E "enforcement starting|shaping applied|forward_update" "$WORK/netqosd.log" || true

bold "the kubelet allocates 100 and 300 Mbit/s through the gRPC socket"
run ctl allocate --pod-uid "$POD_A" --pod-namespace demo --pod-name pod-a --container app --qos shared_cores --mbps 100
run ctl allocate --pod-uid "$POD_B" --pod-namespace demo --pod-name pod-b --container app --qos shared_cores --mbps 300

class_dump() { bpftool map dump pinned "$PIN_DIR/netqos_cls_v1"; }
# The priority (HTB class handle) the class map holds for a cgroup; empty when there is none.
priority_of() {
  class_dump | grep -A3 "\"key\": $(stat -c %i "$1")," | sed -n 's/.*"priority": \([0-9]*\).*/\1/p'
}
for _ in $(seq 50); do
  [[ -n $(priority_of "$CG_A") && -n $(priority_of "$CG_B") ]] && break
  sleep 0.1
done
PRIO_A=$(priority_of "$CG_A"); PRIO_B=$(priority_of "$CG_B")
[[ -n $PRIO_A && -n $PRIO_B ]] || fail "the class map did not get both containers"
LEAF_A=$(printf '10:%x' $((PRIO_A & 0xffff))); LEAF_B=$(printf '10:%x' $((PRIO_B & 0xffff)))

bold "bpftool shows both containers in the pinned class map, with named fields"
run bpftool map dump pinned "$PIN_DIR/netqos_cls_v1"
[[ $(class_dump) == *'"net_class_id"'* ]] || fail "no BTF field names in the dump"
echo "container A -> HTB leaf $LEAF_A, container B -> HTB leaf $LEAF_B"
run tc class show dev "$HOST_IF" classid "$LEAF_A"
run tc class show dev "$HOST_IF" classid "$LEAF_B"

nsenter --net=/var/run/netns/"$NS" iperf3 -s -p 15301 >/dev/null 2>&1 & PIDS+=($!)
nsenter --net=/var/run/netns/"$NS" iperf3 -s -p 15302 >/dev/null 2>&1 & PIDS+=($!)
sleep 0.5
# Bulk TCP from inside a cgroup: the shell joins the cgroup, then becomes iperf3.
send_from() { sh -c "echo \$\$ > $1/cgroup.procs && exec iperf3 -c 10.251.0.2 -p $2 -t $3" >/dev/null 2>&1 & PIDS+=($!); }
leaf_bytes() { tc -s class show dev "$HOST_IF" classid "$1" | sed -n 's/.*Sent \([0-9]*\) bytes.*/\1/p'; }
# Wire rate of both leaves over a window, in Mbit/s (HTB counts whole frames as they leave).
measure() {
  local a0 b0 t0 a1 b1 t1
  a0=$(leaf_bytes "$LEAF_A"); b0=$(leaf_bytes "$LEAF_B"); t0=$(date +%s.%N)
  sleep "$1"
  a1=$(leaf_bytes "$LEAF_A"); b1=$(leaf_bytes "$LEAF_B"); t1=$(date +%s.%N)
  RATE_A=$(awk -v d=$((a1 - a0)) -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.1f", d * 8 / (t1 - t0) / 1e6 }')
  RATE_B=$(awk -v d=$((b1 - b0)) -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.1f", d * 8 / (t1 - t0) / 1e6 }')
}
within() { awk -v r="$1" -v c="$2" 'BEGIN { exit !(r >= c - 2 && r <= c + 2) }'; }
above() { awk -v r="$1" -v c="$2" 'BEGIN { exit !(r > c + 2) }'; }
# Both leaves within +-2 Mbit/s of their caps. Above the cap fails at once; below it means the
# sender did not keep its queue full (a CPU-starved machine), so one more window is measured.
check_caps() {
  local label=$1
  measure 3
  if ! above "$RATE_A" 100 && ! above "$RATE_B" 300 && { ! within "$RATE_A" 100 || ! within "$RATE_B" 300; }; then
    echo "below the caps ($RATE_A, $RATE_B Mbit/s): the senders did not saturate; measuring again"
    measure 3
  fi
  within "$RATE_A" 100 && echo "ok   container A$label: $RATE_A Mbit/s on the wire (allocated 100)" \
    || fail "container A$label: $RATE_A Mbit/s on the wire, allocated 100 (+-2)"
  within "$RATE_B" 300 && echo "ok   container B$label: $RATE_B Mbit/s on the wire (allocated 300)" \
    || fail "container B$label: $RATE_B Mbit/s on the wire, allocated 300 (+-2)"
}

bold "both containers send bulk TCP at once"
send_from "$CG_A" 15301 12; send_from "$CG_B" 15302 12
sleep 1.5; check_caps ""
leaf_drops() { tc -s class show dev "$HOST_IF" classid "$1" | sed -n 's/.*dropped \([0-9]*\).*/\1/p'; }
printf '\n%-10s %-13s %-10s %-8s %10s %14s %7s\n' CONTAINER QOS NIC HTB ALLOCATED "MEASURED(wire)" DROPS
printf '%-10s %-13s %-10s %-8s %10s %14s %7s\n' pod-a/app shared_cores "$HOST_IF" "$LEAF_A" 100 "$RATE_A" "$(leaf_drops "$LEAF_A")"
printf '%-10s %-13s %-10s %-8s %10s %14s %7s\n' pod-b/app shared_cores "$HOST_IF" "$LEAF_B" 300 "$RATE_B" "$(leaf_drops "$LEAF_B")"
bold "netqosctl top: the same, live from the pinned counters (IP bytes, so ~4 % under the wire rate)"
run ctl top --iterations 2 --interval 1 --no-clear --bpf-pin-dir "$PIN_DIR" || true
wait "${PIDS[@]: -2}" 2>/dev/null || true

bold "per-container counters (bpftool, per CPU)"
bpftool map dump pinned "$PIN_DIR/netqos_cgst_v2" | grep -E '"key"|tx_bytes' | head -n 8

bold "kill -9 netqosd mid-flow: the pinned programs, maps and qdiscs keep the caps"
send_from "$CG_A" 15301 9; send_from "$CG_B" 15302 9
sleep 1
run kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null || true
DAEMON_PID=
sleep 0.5; check_caps ", no daemon"
wait "${PIDS[@]: -2}" 2>/dev/null || true

bold "a restarted netqosd adopts the pinned state (same leaves, nothing re-created)"
: >"$WORK/netqosd.log"
start_daemon
sleep 0.5
grep -E "adopting|class map synced|qdisc_created=true" "$WORK/netqosd.log" || true
[[ $(priority_of "$CG_A") == "$PRIO_A" && $(priority_of "$CG_B") == "$PRIO_B" ]] \
  || fail "the restarted daemon moved a container to another leaf"
grep -q "qdisc_created=true" "$WORK/netqosd.log" && fail "the restart re-created the root qdisc"
echo "ok   both containers kept leaves $LEAF_A and $LEAF_B"

bold "the kubelet removes pod A: its class entry and its leaf go away"
run ctl remove --pod-uid "$POD_A"
for _ in $(seq 30); do [[ -z $(priority_of "$CG_A") ]] && break; sleep 0.1; done
[[ -z $(priority_of "$CG_A") ]] || fail "pod A still has a class entry"
echo "ok   pod A unclassified; pod B still at $LEAF_B"

bold "netqosd --uninstall removes everything it installed"
kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null || true; DAEMON_PID=
run "$NETQOSD" --uninstall --bpf-pin-dir="$PIN_DIR" --qrm-state-dir="$STATE_DIR"
[[ ! -e $PIN_DIR ]] || fail "pins left in $PIN_DIR"
[[ $(tc qdisc show dev "$HOST_IF") == *htb* ]] && fail "HTB left on $HOST_IF"
echo "ok   no pins, no HTB"
bold "enforcement demo passed"
