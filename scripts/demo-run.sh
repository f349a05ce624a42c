#!/usr/bin/env bash
# The netqos demo in one run of the real daemon, enforcement on, on this machine's kernel:
# two "NICs" from veth pairs (NIC A in the host namespace, NIC B in a namespace of its own, found
# through Katalyst's multi-namespace mode), netqosctl playing the kubelet (plugin-watcher
# registration, hints, Allocate for shared, dedicated and reclaimed containers spread over both
# NICs, one request refused; a fifth pod capped by kubernetes.io/{egress,ingress}-bandwidth alone),
# bulk TCP from each container's cgroup measured on the wire against its cap (one borrowing beyond
# its allocation, netqos.io/container-ceil=level), DSCP marks per level and by annotation,
# `netqosctl top`, kill -9 under traffic, a restart that adopts the pinned state, RemovePod and
# --uninstall; and a plot (PNG, $DEMO_PLOT, default BUILD_DIR/demo-rates.png) of each container's
# rate over that time against its cap, the kill and the restart marked. Exits non-zero when a
# check fails (a rate outside its cap +-2 Mbit/s, a DSCP not as asked, the oversized request
# granted, no plot, anything left behind); removes everything it created on exit, also on
# failure and Ctrl-C.
#
# Usage: scripts/demo-run.sh [BUILD_DIR]   (root; scripts/demo.sh installs and builds first)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD_DIR=${1:-${BUILD_DIR:-build}}
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
# The plot of each container's rate over time against its cap (a PNG; its SVG source beside it),
# kill -9 and restart marked.
DEMO_PLOT=${DEMO_PLOT:-$BUILD_DIR/demo-rates.png}
[[ $DEMO_PLOT == *.png ]] || { echo "DEMO_PLOT must name a .png file: $DEMO_PLOT" >&2; exit 2; }
[[ $DEMO_PLOT == /* ]] || DEMO_PLOT=$ROOT/$DEMO_PLOT
NETQOSD=$BUILD_DIR/bin/netqosd
NETQOSCTL=$BUILD_DIR/bin/netqosctl
if [[ $(id -u) != 0 ]]; then
  echo "run as root: the demo creates network namespaces, cgroups and BPF programs" >&2
  [[ ${CI:-} == true ]] && exit 1  # CI runs as root: a missing privilege is a failure there
  exit 77                          # CTest's skip code
fi
for tool in "$NETQOSD" "$NETQOSCTL"; do
  [[ -x $tool ]] || { echo "missing $tool: build first (cmake --build $BUILD_DIR)" >&2; exit 2; }
done
for tool in iperf3 bpftool ip tc nsenter mountpoint python3; do
  command -v "$tool" >/dev/null || { echo "missing $tool (scripts/install-deps.sh)" >&2; exit 2; }
done

bold() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
# Prints a command as one would type it (ctl is netqosctl with the demo's --socket).
show() {
  local a out=
  for a in "$@"; do
    [[ $a == *[\ \"{}*]* ]] && a="'$a'"
    out+=" $a"
  done
  out=${out# }
  [[ $1 == ctl ]] && out="netqosctl${out#ctl}"
  printf '$ %s\n' "$out"
}
run() { show "$@"; "$@"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

TAG=nqd$(($$ % 100000))
WORK=$(mktemp -d /tmp/netqos-demo.XXXXXX)
DAEMON_PID=
source scripts/lib/demo-lab.sh
source scripts/lib/demo-traffic.sh

finish() {
  local rc=$?
  trap - EXIT INT TERM
  flows_stop 2>/dev/null
  ((rc == 130)) && echo "interrupted: cleaning up" >&2
  if ((rc != 0 && rc != 130)) && [[ -s $LOG ]]; then
    echo "--- netqosd log (last 30 lines) ---" >&2
    tail -n 30 "$LOG" >&2
  fi
  lab_down_checked || exit 1
  if ((rc == 0)); then
    bold "demo passed in ${SECONDS}s; every namespace, link, cgroup, mount, pin and process removed"
  fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

ctl() { "$NETQOSCTL" --socket "$SOCK" "$@"; }

source scripts/lib/demo-pods.sh

bold "two NICs from veth pairs: A in the host namespace, B in a namespace of its own"
lab_up
forward_update_priority() {
  nsenter --net="/var/run/netns/$NS_B" cat /proc/sys/net/ipv4/ip_forward_update_priority
}
FWD_PRIO_B=$(forward_update_priority)  # netqosd leaves it alone (it classifies routed packets itself)
write_pod_list
cat <<EOF
NIC A  host:  $NIC_A $IP_A   <->  $NS_RA: $NIC_A_PEER $REMOTE_A   (1000 Mbit/s)
NIC B  $NS_B: $NIC_B $IP_B   <->  $NS_RB: $NIC_B_PEER $REMOTE_B   (500 Mbit/s)
netns dir for netqosd: $NS_DIR (holds $NS_B only)
EOF

bold "start netqosd: both NICs from the kernel (multi-namespace mode), eBPF on the cgroup root, HTB on both"
cat <<EOF
\$ netqosd --machine-net-multi-ns --machine-net-ns-dir=$NS_DIR \\
    --nic-allow=$NIC_A,$NIC_B --nic-speed-override=$NIC_A=1000 --nic-speed-override=$NIC_B=500 \\
    --enforce-nics=$NIC_A,$NS_B/$NIC_B --shaping-mode=$SHAPING_MODE \\
    --qos-level-dscp=dedicated_cores=AF41,reclaimed_cores=CS1 \\
    --tenant-policy-file=$WORK/tenant-policy.json \\
    --network-resource-plugin-reserved-bandwidth=100 \\
    --network-resource-plugin-class-id-{shared,reclaimed,dedicated}-cores=20,10,30 \\
    --pod-source=kubelet --kubelet-pods-url=file://$WORK/pods.json ...   (socket, state and bpffs in $WORK)
EOF
start_daemon
echo "(netqosctl below stands for: $NETQOSCTL --socket $SOCK)"
run ctl topology

bold "the kubelet's plugin watcher finds the socket and registers the plugin"
run ctl plugin-info
run ctl notify-registered
run ctl options
run ctl capacity

bold "hints and allocations: shared, dedicated and reclaimed containers on both NICs"
allocate_all

bold "a request for more than NIC B has left is refused, and nothing already allocated is lost"
HUGE=(--pod-uid ml-1 --pod-namespace demo --pod-name ml --container trainer --qos shared_cores
  --mbps 400 --annotation "$ENH={\"namespace_type\":\"anti_host_ns\"}")
run ctl hints "${HUGE[@]}"
show ctl allocate "${HUGE[@]}"
if ctl allocate "${HUGE[@]}"; then fail "400 Mbps on NIC B (250 free) was granted"; fi
run ctl allocations
check_allocations "after the refused request"

bold "the runtime starts the containers: their cgroups appear and netqosd classifies them"
start_containers
run ctl classes --bpf-pin-dir "$PIN_DIR"

bold "each enforced NIC's shaping mode and why (--shaping-mode=$SHAPING_MODE; auto picks edt where a NIC has several TX queues and the kernel has fq)"
status=$(ctl status) || fail "netqosctl status"
show ctl status
sed -n '/^NIC /,/^$/p' <<<"$status"
for nic in "$NIC_A" "$NS_B-$NIC_B"; do  # resource identifiers: [netns-]name
  grep -E "^$nic +.*(htb|edt) \(" <<<"$status" >/dev/null || fail "netqosctl status shows no shaping mode for $nic"
done

bold "every container sends bulk TCP at once, over its NIC; rates measured on the wire (HTB leaf)"
servers_start
flows_start 60
rates_record_start  # for the plot of each container's rate over time (DEMO_PLOT)
sleep 1.5
check_rates ""
print_table
for i in "${!C_LABEL[@]}"; do
  [[ ${C_DSCP[$i]} == "${C_WANT_DSCP[$i]}" ]] ||
    fail "${C_LABEL[$i]} is marked DSCP ${C_DSCP[$i]}, expected ${C_WANT_DSCP[$i]}"
done
echo "ok   caps from allocations and annotations, cache borrowing above its allocation, DSCP marks as asked"

bold "netqosctl top: the same, live from the pinned counters (IP bytes, ~4 % under the wire)"
run ctl top --iterations 1 --interval 1 --no-clear --bpf-pin-dir "$PIN_DIR"

bold "kill -9 netqosd under traffic: the pinned programs, maps and qdiscs keep every cap"
rates_mark "kill -9 netqosd"
run kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null || true
DAEMON_PID=
sleep 0.5
check_rates " (no daemon)"
print_table

bold "a restarted netqosd adopts the pinned state: same leaves, no qdisc re-created"
: >"$LOG"
start_daemon
rates_mark "netqosd restarted"
sleep 0.5
grep -E "adopting|qdisc_created" "$LOG" | head -n 6 || true
for i in "${!C_LABEL[@]}"; do
  [[ $(priority_of "${C_CG[$i]}") == "${C_PRIO[$i]}" ]] ||
    fail "the restarted daemon moved ${C_LABEL[$i]} off leaf ${C_LEAF[$i]}"
done
[[ $(<"$LOG") == *qdisc_created=true* ]] && fail "the restart re-created a root qdisc"
check_allocations "after the restart"
echo "ok   every container kept its leaf; all four allocations restored from the checkpoint"
check_rates " (restarted)"
echo "ok   every rate still within ${TOLERANCE_MBPS} Mbit/s of its cap"
rates_plot "$DEMO_PLOT"
flows_stop
echo "the rates over time, kill -9 and restart marked: $DEMO_PLOT"

bold "the kubelet removes pod batch: its class entry and its leaf on NIC B go away"
run ctl remove --pod-uid "${C_UID[2]}"
for _ in $(seq 50); do [[ -z $(priority_of "${C_CG[2]}") ]] && break; sleep 0.1; done
[[ -z $(priority_of "${C_CG[2]}") ]] || fail "batch/worker still has a class entry"
for _ in $(seq 50); do
  [[ -z $(tc_in "$NS_B" class show dev "$NIC_B" classid "${C_LEAF[2]}") ]] && break
  sleep 0.1
done
[[ -z $(tc_in "$NS_B" class show dev "$NIC_B" classid "${C_LEAF[2]}") ]] ||
  fail "leaf ${C_LEAF[2]} of batch/worker is still on $NIC_B"
[[ -n $(tc_in "$NS_B" class show dev "$NIC_B" classid "${C_LEAF[3]}") &&
  $(priority_of "${C_CG[3]}") == "${C_PRIO[3]}" ]] || fail "cache/app lost its leaf ${C_LEAF[3]}"
echo "ok   batch/worker unclassified, leaf ${C_LEAF[2]} gone; cache/app keeps ${C_LEAF[3]} on $NIC_B"

bold "netqosd --uninstall removes everything it installed, on both NICs"
[[ -e /sys/class/net/$IFB_A ]] || fail "no IFB $IFB_A for $NIC_A's ingress"
[[ $(ip -n "$NS_B" -o link show) == *nqifb* ]] || fail "no IFB in $NS_B for $NIC_B's ingress"
kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null || true; DAEMON_PID=
run "$NETQOSD" --uninstall --bpf-pin-dir="$PIN_DIR" --qrm-state-dir="$STATE_DIR"
[[ ! -e $PIN_DIR ]] || fail "pins left in $PIN_DIR"
[[ $(tc qdisc show dev "$NIC_A") == *htb* ]] && fail "HTB left on $NIC_A"
[[ $(tc -n "$NS_B" qdisc show dev "$NIC_B") == *htb* ]] && fail "HTB left on $NS_B/$NIC_B"
[[ -e /sys/class/net/$IFB_A ]] && fail "IFB $IFB_A of $NIC_A left behind"
[[ $(ip -n "$NS_B" -o link show) == *nqifb* ]] && fail "an IFB was left behind in $NS_B"
[[ $(forward_update_priority) == "$FWD_PRIO_B" ]] ||
  fail "ip_forward_update_priority in $NS_B changed from $FWD_PRIO_B"
echo "ok   no pins, no HTB, no IFB on either NIC; ip_forward_update_priority in $NS_B untouched ($FWD_PRIO_B)"
