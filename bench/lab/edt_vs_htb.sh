#!/usr/bin/env bash
# EDT next to HTB on a production-shaped NIC, for the kernel lab (scripts/bench.sh part `lab`
# runs it in a guest through scripts/kernel-lab.sh): a 4-queue veth whose host end has an `mq`
# root with fq_codel under each queue (Debian's default), the peer end in a network namespace.
# For each shaping mode (--shaping-mode=htb with --replace-root-qdisc, then edt), with the real
# netqosd enforcing the NIC:
#   1. an uncapped container (listed, no allocation) against nothing attached: bulk TCP (Mbit/s)
#      and 64-byte UDP (packets per second delivered), nothing attached measured right before
#      the daemon starts and right after --uninstall, the mean of both being the baseline; then
#      the same container next to one capped at 50 Mbit/s (idle: what its cap costs the NIC's
#      other traffic), sending and receiving, with each netqos program's own counters
#      (kernel.bpf_stats_enabled: run_time_ns and run_cnt) turned into BPF time per 64-byte UDP
#      packet;
#   2. p50/p99 ping RTT from an uncapped container while another container sends bulk TCP at a
#      cap of 100 Mbit/s, next to the same ping with nothing attached (idle, and next to an
#      uncapped bulk flow);
#   3. wire rate vs cap: N containers (1, 10, 50) each allocated C (10, 100, 1000 Mbit/s) send
#      bulk TCP at once, each to its own iperf3 server; each container's rate is counted at the
#      peer's ingress by a u32 filter on its server's port (wire bytes: the 14-byte Ethernet
#      header added per packet). Cells whose N x C exceeds 90 % of what N uncapped containers
#      reach in the same mode are sender-limited: the emulated guest, not netqos, is the limit.
#
# The guest's writes do not reach the host, so the report goes to stdout: lines "LABMD: <markdown>"
# (the part's section) and "LABTARGET: <summary table row>"; everything else is progress.
#
#   bench/lab/edt_vs_htb.sh [--quick] [--uncapped-only] BUILD_DIR
#     (root; a kernel with sch_fq: the lab's guests; --uncapped-only: part 1 alone, a few minutes)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=scripts/lib/mq-nic.sh
. scripts/lib/mq-nic.sh
# shellcheck source=scripts/lib/lab-work.sh
. scripts/lib/lab-work.sh
# shellcheck source=scripts/lib/lab-netqosd.sh
. scripts/lib/lab-netqosd.sh
QUICK=0 UNCAPPED_ONLY=0
while [[ ${1:-} == --* ]]; do
  case $1 in
    --quick) QUICK=1 ;;
    --uncapped-only) UNCAPPED_ONLY=1 ;;
    *) fail "unknown option $1" ;;
  esac
  shift
done
BUILD_DIR=${1:?usage: edt_vs_htb.sh [--quick] [--uncapped-only] BUILD_DIR}
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$PWD/$BUILD_DIR
NETQOSD=$BUILD_DIR/bin/netqosd
NETQOSCTL=$BUILD_DIR/bin/netqosctl
((EUID == 0)) || fail "needs root"
for t in "$NETQOSD" "$NETQOSCTL"; do [[ -x $t ]] || fail "missing $t"; done
for t in iperf3 ping python3 bpftool sysctl; do command -v "$t" >/dev/null || fail "missing $t"; done

if ((QUICK)); then
  COUNTS=(1 10) CAPS=(10 100) WARM=2 WINDOW=2 RUN=4 PINGS=200
else
  COUNTS=(1 10 50) CAPS=(10 100 1000) WARM=3 WINDOW=5 RUN=5 PINGS=500
fi
TAG=nql$(($$ % 10000))
NS=$TAG-r NIC=${TAG}a PEER=${TAG}ap IP=10.254.1.1 REMOTE=10.254.1.2
BASE_PORT=16000
WORK=$(mktemp -d /tmp/netqos-labbench.XXXXXX)
PIN_DIR=$WORK/bpf/netqos STATE=$WORK/state SOCK_DIR=$WORK/sock LOG=$WORK/netqosd.log
SOCK=$SOCK_DIR/qrm_network_plugin_static.sock
CGROOT=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
[[ $CGROOT == /sys/fs/cgroup ]] || fail "cgroup2 is mounted at '$CGROOT', not unified at /sys/fs/cgroup"
ROOT_NAME=netqos-labbench-$TAG
DAEMON="" CLIENTS="" SERVERS=""
export MQ_NIC_LEAF=fq_codel

md() { printf 'LABMD: %s\n' "$*"; }
target() { printf 'LABTARGET: %s\n' "$*"; }

# SIGINT: iperf3 tells its server the test is over, so the server takes the next one at once
# (after SIGKILL it may still refuse one as busy).
stop_clients() {
  local p
  for p in $CLIENTS; do kill -INT "$p" 2>/dev/null; done
  for _ in $(seq 30); do
    for p in $CLIENTS; do kill -0 "$p" 2>/dev/null && { sleep 0.1; continue 2; }; done
    break
  done
  sleep 0.1
  for p in $CLIENTS; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  CLIENTS=""
}
stop_servers() {
  local p
  for p in $SERVERS; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  SERVERS=""
}
stop_daemon() {
  [[ -n $DAEMON ]] && { kill -TERM "$DAEMON" 2>/dev/null; wait "$DAEMON" 2>/dev/null; }
  DAEMON=""
  "$NETQOSD" --uninstall --bpf-pin-dir="$PIN_DIR" --qrm-state-dir="$STATE" >>"$LOG" 2>&1
  rm -rf "$STATE"
  mkdir -p "$STATE"
}
cleanup() {
  stop_clients
  stop_servers
  [[ -n $DAEMON ]] && { kill -KILL "$DAEMON" 2>/dev/null; wait "$DAEMON" 2>/dev/null; }
  [[ -e $PIN_DIR ]] && "$NETQOSD" --uninstall --bpf-pin-dir="$PIN_DIR" --qrm-state-dir="$STATE" >/dev/null 2>&1
  mq_nic_down "$NIC" "$NS" >/dev/null 2>&1
  lab_work_down "$CGROOT/$ROOT_NAME" "$WORK"
  [[ -n ${STATS_WAS:-} ]] && sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS"
}
trap cleanup EXIT

# Container i: pod uid lab-i, container id c0ffee<i>, cgroup below the extra kubepods root.
cg_of() { echo "$CGROOT/$ROOT_NAME/podlab-$1/c0ffee$(printf %04x "$1")"; }
# pods.json listing containers 0..$1-1 (host-network pods: classified by cgroup).
write_pods() {
  local n=$1 i sep=""
  {
    echo '{"kind": "PodList", "items": ['
    for ((i = 0; i < n; i++)); do
      printf '%s{"metadata": {"uid": "lab-%d", "namespace": "lab", "name": "p%d", "annotations": {"katalyst.kubewharf.io/qos_level": "shared_cores"}}, "spec": {"hostNetwork": true}, "status": {"qosClass": "Burstable", "phase": "Running", "containerStatuses": [{"name": "app", "containerID": "containerd://c0ffee%04x"}]}}\n' \
        "$sep" "$i" "$i" "$i"
      sep=,
    done
    echo ']}'
  } >"$WORK/pods.json.tmp" && mv "$WORK/pods.json.tmp" "$WORK/pods.json"
}
make_cgroups() { local i; for ((i = 0; i < $1; i++)); do mkdir -p "$(cg_of "$i")" || fail "mkdir"; done; }
remove_cgroups() {
  local i
  for ((i = 0; i < $1; i++)); do
    rmdir "$(cg_of "$i")" "$(dirname "$(cg_of "$i")")" 2>/dev/null
  done
}

start_daemon() {  # $1: shaping mode
  local extra=()
  [[ $1 == htb ]] && extra=(--replace-root-qdisc)
  NIC_SPEED=100000 lab_netqosd_start --shaping-mode="$1" "${extra[@]}"
}

# iperf3 servers in the peer namespace on ports BASE_PORT .. BASE_PORT+$1-1, and a u32 filter
# per port on the peer's ingress (pref 100+i) whose counter is that container's wire bytes.
start_servers() {
  local n=$1 i
  tc -n "$NS" qdisc replace dev "$PEER" clsact || fail "clsact on $PEER"
  for ((i = 0; i < n; i++)); do
    ip netns exec "$NS" iperf3 -s -B "$REMOTE" -p $((BASE_PORT + i)) >/dev/null 2>&1 &
    SERVERS+=" $!"
    tc -n "$NS" filter replace dev "$PEER" ingress pref $((100 + i)) protocol ip u32 \
      match ip protocol 6 0xff match ip dport $((BASE_PORT + i)) 0xffff action ok || fail "filter $i"
  done
  for _ in $(seq 200); do
    (($(ss -N "$NS" -Hltn "src $REMOTE" 2>/dev/null | wc -l) >= n)) && return 0
    sleep 0.1
  done
  fail "iperf3 servers did not listen"
}

# Bulk TCP from containers 0..$1-1, each to its own server, until stop_clients (a fixed -t
# would race the measurement: on a TCG guest starting python and tc takes seconds).
start_client() {
  sh -c "echo \$\$ > $(cg_of "$1")/cgroup.procs && exec iperf3 -c $REMOTE -p $((BASE_PORT + $1)) -t 600" \
    >"$WORK/client-$1.log" 2>&1 &
  PIDS[$1]=$!
}
start_clients() {
  local n=$1 i attempt
  PIDS=()
  for ((i = 0; i < n; i++)); do start_client "$i"; done
  # A client refused at once (its server still closing the previous test) is started again.
  for attempt in 1 2 3 4 5; do
    sleep 1
    local again=0
    for ((i = 0; i < n; i++)); do
      kill -0 "${PIDS[$i]}" 2>/dev/null && continue
      wait "${PIDS[$i]}" 2>/dev/null
      start_client "$i"
      again=1
    done
    ((again)) || break
  done
  CLIENTS="${PIDS[*]}"
}

# Per-container wire Mbit/s over WINDOW s after WARM s, one per line (container 0 first). The
# sampler runs ahead of the senders in the scheduler: they saturate the guest's vCPUs.
measure_containers() {
  local n=$1 i
  nice -n -20 python3 bench/lab/port_rates.py "$NS" "$PEER" "$WARM" "$WINDOW" |
    awk -v n="$n" '$1 >= 100 && $1 < 100 + n { print $2 }' | tee "$WORK/rates"
  # A sender that got nothing through is a broken run, not a figure: say why.
  if grep -qx '0.00' "$WORK/rates"; then
    for ((i = 0; i < n; i++)); do echo "client $i: $(head -c 300 "$WORK/client-$i.log")" >&2; done
  fi
}

# Until containers 0..$1-1 are capped at $2 Mbit/s in mode $3 (edt: their pacing rate in
# netqos_edt_v1; htb: a container leaf in netqos_cls_v1), at most 60 s.
wait_caps() {
  local n=$1 cap=$2 mode=$3 ids=() i
  for ((i = 0; i < n; i++)); do ids+=("$(stat -c %i "$(cg_of "$i")")"); done
  for _ in $(seq 120); do
    # edt: the map is keyed by each container's leaf handle (its class entry's priority).
    if [[ $mode == edt ]]; then
      { bpftool -j map dump pinned "$PIN_DIR/netqos_cls_v1" 2>/dev/null || echo '[]'
        bpftool -j map dump pinned "$PIN_DIR/netqos_edt_v1" 2>/dev/null || echo '[]'; }
    else
      bpftool -j map dump pinned "$PIN_DIR/netqos_cls_v1" 2>/dev/null
    fi | python3 -c '
import json, sys
mode, rate, want = sys.argv[1], int(sys.argv[2]) * 125000, set(int(x) for x in sys.argv[3:])
dec, text, docs = json.JSONDecoder(), sys.stdin.read().strip(), []
while text:
    doc, end = dec.raw_decode(text)
    docs.append(doc)
    text = text[end:].strip()
got = set()
if mode == "edt":
    prio = {int(e.get("formatted", e)["key"]): int(e.get("formatted", e)["value"]["priority"])
            for e in docs[0]}
    paced = {int(e.get("formatted", e)["key"]) for e in docs[1]
             if e.get("formatted", e)["value"].get("rate") == rate}
    got = {cg for cg, p in prio.items() if p in paced}
for e in (docs[0] if mode == "htb" else []):
    f = e.get("formatted", e)
    v = f["value"]
    if mode == "htb" and (v.get("priority", 0) >> 16) == 0x10 and 0x100 <= (v.get("priority", 0) & 0xffff) < 0xffff:
        got.add(int(f["key"]))
sys.exit(0 if want <= got else 1)' "$mode" "$cap" "${ids[@]}" && return 0
    sleep 0.5
  done
  tail -n 20 "$LOG" >&2
  fail "$mode: containers 0..$((n - 1)) not capped at $cap Mbit/s within 60 s"
}
# Until no container is capped (after RemovePod), at most 60 s: the next cell starts clean.
wait_uncapped() {
  local mode=$1
  for _ in $(seq 120); do
    if [[ $mode == edt ]]; then
      [[ $(bpftool -j map dump pinned "$PIN_DIR/netqos_edt_v1" 2>/dev/null) == "[]" ]] && return 0
    else
      bpftool -j map dump pinned "$PIN_DIR/netqos_cls_v1" 2>/dev/null | python3 -c '
import json, sys
sys.exit(1 if any(0x100 <= (e.get("formatted", e)["value"].get("priority", 0) & 0xffff) < 0xffff
                  and (e.get("formatted", e)["value"].get("priority", 0) >> 16) == 0x10
                  for e in json.load(sys.stdin)) else 0)' && return 0
    fi
    sleep 0.5
  done
  fail "$mode: containers still capped 60 s after RemovePod"
}

# The NIC's own queues again (mq + fq_codel), whatever a mode's --uninstall left.
reset_nic() {
  local i
  tc qdisc replace dev "$NIC" root handle 1: mq || fail "mq root"
  for ((i = 1; i <= 4; i++)); do
    tc qdisc replace dev "$NIC" parent "1:$i" handle "$((10 + i)):" fq_codel || fail "fq_codel $i"
  done
  mq_nic_check "$NIC" 4 || fail "the NIC's queues"
}

# One bulk TCP or 64-byte UDP run of RUN s from cgroup $2 through the NIC (with $3 = in: to
# it, iperf3 -R): Mbit/s received, or packets/s delivered.
single_run() {  # $1: tcp|udp, $2: cgroup, $3: out (default) or in
  local kind=$1 cg=$2 args=() out
  [[ $kind == udp ]] && args=(-u -b 0 -l 64)
  [[ ${3:-out} == in ]] && args+=(-R)
  out=$(sh -c "echo \$\$ > $cg/cgroup.procs && exec iperf3 -J -c $REMOTE -p $BASE_PORT -t $RUN -O 1 ${args[*]}") ||
    fail "iperf3 $kind from $cg"
  python3 -c '
import json, sys
d = json.load(sys.stdin)["end"]
if sys.argv[1] == "tcp":
    print("%.0f" % (d["sum_received"]["bits_per_second"] / 1e6))
else:
    s = d["sum"]
    print("%.0f" % ((s["packets"] - s["lost_packets"]) / s["seconds"]))' "$kind" <<<"$out"
}

# p50 and p99 of $PINGS pings (10 ms apart) from cgroup $1 to the peer, in microseconds.
ping_p() {
  sh -c "echo \$\$ > $1/cgroup.procs && exec ping -n -i 0.01 -c $PINGS $REMOTE" 2>/dev/null |
    sed -n 's/.*time=\([0-9.]*\) ms.*/\1/p' | sort -g | awk '{ v[NR] = $1 * 1000 } END {
      if (NR == 0) { print "- -"; exit }
      i50 = int(NR * 0.50 + 0.5); i99 = int(NR * 0.99 + 0.5); if (i99 < 1) i99 = 1
      printf "%.0f %.0f\n", v[i50], v[i99] }'
}

# Every netqos program's run_time_ns and run_cnt, summed by name: "name ns runs" lines.
bpf_stats() {
  bpftool -j prog show | python3 -c '
import json, sys
tot = {}
for p in json.load(sys.stdin):
    n = p.get("name", "")
    if n.startswith("netqos_"):
        t = tot.setdefault(n, [0, 0])
        t[0] += p.get("run_time_ns", 0)
        t[1] += p.get("run_cnt", 0)
for n, (ns, cnt) in sorted(tot.items()):
    print(n, ns, cnt)'
}
# BPF time per packet between two bpf_stats: $3 names the program that runs once per packet of
# the flow (netqos_egress for a container's sent packets, netqos_rx for those it receives), the
# denominator; $4 the program left out, which runs for the peer: the cgroup programs are
# attached where every process of the guest is below them, the iperf3 at the other end of the
# veth too, and on a node that end is another machine (netqos_rx when the container sends,
# netqos_egress when it receives). Prints "TOTAL_NS_PER_PACKET PROGRAM NS_PER_RUN ns ×
# RUNS_PER_PACKET, ...".
bpf_cost() {
  python3 - "$3" "$4" 3<<<"$1" 4<<<"$2" <<'PY'
import sys
def read(fd):
    out = {}
    with open(fd) as f:
        for line in f:
            if line.strip():
                n, ns, cnt = line.split()
                out[n] = (int(ns), int(cnt))
    return out
a, b, per, peer = read(3), read(4), sys.argv[1], sys.argv[2]
d = {n: (b[n][0] - a.get(n, (0, 0))[0], b[n][1] - a.get(n, (0, 0))[1]) for n in b if n != peer}
pkts = d.get(per, (0, 0))[1]
if pkts <= 0:
    print("- (%s did not run)" % per)
    sys.exit(0)
parts = ["%s %.0f ns × %.2f" % (n, ns / cnt, cnt / pkts) for n, (ns, cnt) in sorted(d.items()) if cnt > 0]
print("%.0f %s" % (sum(ns for ns, _ in d.values()) / pkts, ", ".join(parts)))
PY
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }'; }
mean2() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", (a + b) / 2 }'; }

echo "== $(uname -r), $(nproc) vCPUs: a 4-queue veth, mq root + fq_codel per queue"
mq_nic_up "$NIC" "$NS" "$IP/24" "$REMOTE/24" 4 || fail "mq_nic_up"
{ mkdir -p "$WORK/bpf" "$SOCK_DIR" "$STATE" "$CGROOT/$ROOT_NAME" && mount -t bpf bpf "$WORK/bpf"; } ||
  fail "bpffs"
MAXN=${COUNTS[-1]}
write_pods "$MAXN"
make_cgroups "$MAXN"
PLAIN=$CGROOT/$ROOT_NAME/plain   # a cgroup no pod names: nothing attached means no class at all
mkdir -p "$PLAIN"
start_servers "$MAXN"

STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled) || fail "kernel.bpf_stats_enabled"
sysctl -qw kernel.bpf_stats_enabled=1 || fail "kernel.bpf_stats_enabled=1"
declare -A R
for mode in htb edt; do
  echo "== $mode: nothing attached, then netqosd --shaping-mode=$mode"
  for k in tcp udp; do R[$mode,none1,$k]=$(single_run "$k" "$PLAIN"); done
  for k in tcp udp; do R[$mode,none1,$k,in]=$(single_run "$k" "$PLAIN" in); done
  if ((!UNCAPPED_ONLY)); then
    read -r R[$mode,idle,p50] R[$mode,idle,p99] < <(ping_p "$PLAIN")
    start_clients 1
    sleep 1
    read -r R[$mode,bloat,p50] R[$mode,bloat,p99] < <(ping_p "$(cg_of 1)")
    stop_clients
  fi
  start_daemon "$mode"
  sleep 3  # a resync: the listed containers are classified (their level's default class)
  if [[ $mode == edt ]]; then
    [[ $(tc qdisc show dev "$NIC") == *$'\n'"qdisc mq 1: root"* || $(tc qdisc show dev "$NIC") == "qdisc mq 1: root"* ]] ||
      fail "edt: the mq root is gone"
  fi
  ctl status | grep -E "^ *$NIC " >&2
  R[$mode,status]=$(ctl status | grep -E "^ *$NIC " | head -n 1 | sed 's/^ *//; s/  */ /g')
  for k in tcp udp; do R[$mode,uncapped,$k]=$(single_run "$k" "$(cg_of 0)"); done
  echo "  uncapped container: ${R[$mode,uncapped,tcp]} Mbit/s, ${R[$mode,uncapped,udp]} pps" >&2

  echo "== $mode: the uncapped container next to one capped at 50 Mbit/s (idle)"
  ctl allocate --pod-uid lab-0 --pod-namespace lab --pod-name p0 --container app \
    --qos shared_cores --mbps 50 >/dev/null || fail "Allocate"
  wait_caps 1 50 "$mode"
  for dir in out in; do
    per=netqos_egress peer=netqos_rx
    [[ $dir == in ]] && per=netqos_rx peer=netqos_egress
    for k in tcp udp; do
      before=$(bpf_stats)
      R[$mode,next,$k,$dir]=$(single_run "$k" "$(cg_of 1)" "$dir")
      R[$mode,cost,$k,$dir]=$(bpf_cost "$before" "$(bpf_stats)" "$per" "$peer")
    done
    echo "  $dir: ${R[$mode,next,tcp,$dir]} Mbit/s, ${R[$mode,next,udp,$dir]} pps; BPF ns per UDP packet: ${R[$mode,cost,udp,$dir]}" >&2
  done
  ctl remove --pod-uid lab-0 >/dev/null || fail "RemovePod"
  wait_uncapped "$mode"
  if ((!UNCAPPED_ONLY)); then
    echo "== $mode: ping next to a container capped at 100 Mbit/s"
    ctl allocate --pod-uid lab-0 --pod-namespace lab --pod-name p0 --container app \
      --qos shared_cores --mbps 100 >/dev/null || fail "Allocate"
    wait_caps 1 100 "$mode"
    start_clients 1
    sleep 1
    read -r R[$mode,rtt,p50] R[$mode,rtt,p99] < <(ping_p "$(cg_of 1)")
    stop_clients
    ctl remove --pod-uid lab-0 >/dev/null || fail "RemovePod"
    wait_uncapped "$mode"

    # Machine: what N uncapped containers reach together in this mode.
    for n in "${COUNTS[@]}"; do
      start_clients "$n"
      R[$mode,machine,$n]=$(measure_containers "$n" | awk '{ s += $1 } END { printf "%.0f", s }')
      stop_clients
      echo "  $n uncapped containers: ${R[$mode,machine,$n]} Mbit/s together" >&2
    done
    for n in "${COUNTS[@]}"; do
      for cap in "${CAPS[@]}"; do
        for ((i = 0; i < n; i++)); do
          ctl allocate --pod-uid "lab-$i" --pod-namespace lab --pod-name "p$i" --container app \
            --qos shared_cores --mbps "$cap" >/dev/null || fail "Allocate lab-$i"
        done
        wait_caps "$n" "$cap" "$mode"
        start_clients "$n"
        rates=$(measure_containers "$n")
        stop_clients
        for ((i = 0; i < n; i++)); do ctl remove --pod-uid "lab-$i" >/dev/null; done
        R[$mode,cell,$n,$cap]=$(awk -v c="$cap" -v m="${R[$mode,machine,$n]}" -v n="$n" '
          { r = $1 / c; s += $1; sum += r; if (NR == 1 || r < lo) lo = r; if (NR == 1 || r > hi) hi = r }
          END { printf "%.3f %.3f %.3f %.0f %s\n", sum / NR, lo, hi, s, (n * c > 0.9 * m) ? "sender-limited" : "fills" }' <<<"$rates")
        echo "  $n x $cap: ${R[$mode,cell,$n,$cap]}" >&2
        wait_uncapped "$mode"
      done
    done
  fi
  stop_daemon
  reset_nic
  for k in tcp udp; do R[$mode,none2,$k]=$(single_run "$k" "$PLAIN"); done
  for k in tcp udp; do R[$mode,none2,$k,in]=$(single_run "$k" "$PLAIN" in); done
done
cleanup_ok=1

# ------------------------------------------------------------------------------------------------
md "## Lab: EDT next to HTB on a 4-queue NIC"
md ""
md "\`bench/lab/edt_vs_htb.sh\`, in the kernel lab (\`scripts/kernel-lab.sh\`, Debian's $(uname -r)"
md "under qemu TCG with $(nproc) vCPUs: every figure is an emulated guest's, for comparing the modes"
md "with each other, not for absolute throughput). The NIC is a veth with 4 TX queues whose host end"
md "has an \`mq\` root with fq_codel under each queue, as Debian configures a multi-queue NIC; the peer"
md "end is in a network namespace. *htb*: \`--shaping-mode=htb --replace-root-qdisc\` (one HTB root"
md "on the NIC); *edt*: \`--shaping-mode=edt\` (the \`mq\` root kept, \`fq\` under each queue, departure"
md "times from the NIC's BPF program). Both shape ingress on the IFB. netqosctl status said:"
md ""
for mode in htb edt; do md "- $mode: \`${R[$mode,status]}\`"; done
md ""
md "### Uncapped container vs nothing attached"
md ""
md "A container listed in the pod list with no allocation sends through the NIC for ${RUN} s (iperf3,"
md "the first second omitted); *nothing attached* is a cgroup no pod names, with netqosd not running,"
md "measured just before the daemon started and just after \`--uninstall\` (the baseline is their mean)."
md ""
md "| mode | figure | nothing attached (before / after) | uncapped container | ratio |"
md "|---|---|---|---|---|"
for mode in htb edt; do
  for k in tcp udp; do
    if [[ $k == tcp ]]; then fig="bulk TCP (Mbit/s)"; else fig="64-byte UDP (packets/s delivered)"; fi
    base=$(mean2 "${R[$mode,none1,$k]}" "${R[$mode,none2,$k]}")
    r=$(ratio "${R[$mode,uncapped,$k]}" "$base")
    R[$mode,ratio,$k]=$r
    md "| $mode | $fig | ${R[$mode,none1,$k]} / ${R[$mode,none2,$k]} | ${R[$mode,uncapped,$k]} | ${r}× |"
  done
done
md ""
md "### Uncapped container next to a capped one, both directions, and the BPF time per packet"
md ""
md "The same uncapped container with another container of the node allocated 50 Mbit/s (idle), sending"
md "(*out*) and receiving (*in*, iperf3 -R) for ${RUN} s, against nothing attached in the same"
md "direction (the mean of before and after). *BPF ns per packet*: the sum of the netqos programs'"
md "run time over the run (the kernel's own counters, \`kernel.bpf_stats_enabled\`), divided by the"
md "packets of the 64-byte UDP flow (the runs of \`netqos_egress\` sending, of \`netqos_rx\` receiving);"
md "each program as ns per run × runs per packet. Left out: the cgroup program that runs for the"
md "iperf3 at the other end (\`netqos_rx\` sending, \`netqos_egress\` receiving), which is in the same"
md "guest here and on another machine on a node. Under TCG a nanosecond is an emulated one: compare"
md "the modes and the programs with each other, not with a real NIC's figures."
md ""
md "| mode | direction | bulk TCP: nothing / next to capped (Mbit/s) | ratio | 64-byte UDP: nothing / next to capped (pps) | ratio | BPF ns per UDP packet | per program |"
md "|---|---|---|---|---|---|---|---|"
for mode in htb edt; do
  for dir in out in; do
    sfx=""
    [[ $dir == in ]] && sfx=",in"
    bt=$(mean2 "${R[$mode,none1,tcp$sfx]}" "${R[$mode,none2,tcp$sfx]}")
    bu=$(mean2 "${R[$mode,none1,udp$sfx]}" "${R[$mode,none2,udp$sfx]}")
    R[$mode,nratio,tcp,$dir]=$(ratio "${R[$mode,next,tcp,$dir]}" "$bt")
    R[$mode,nratio,udp,$dir]=$(ratio "${R[$mode,next,udp,$dir]}" "$bu")
    read -r total progs <<<"${R[$mode,cost,udp,$dir]}"
    R[$mode,ns,$dir]=$total
    md "| $mode | $dir | $bt / ${R[$mode,next,tcp,$dir]} | ${R[$mode,nratio,tcp,$dir]}× | $bu / ${R[$mode,next,udp,$dir]} | ${R[$mode,nratio,udp,$dir]}× | $total | $progs |"
  done
done
md ""
if ((!UNCAPPED_ONLY)); then
md "### Latency next to a capped bulk flow"
md ""
md "${PINGS} pings 10 ms apart from an uncapped container while another container sends bulk TCP;"
md "RTT in µs. *Nothing attached*: the NIC's own fq_codel queues, idle and next to an uncapped bulk"
md "flow; *netqos*: the bulk container allocated 100 Mbit/s."
md ""
md "| mode | nothing attached, idle: p50 / p99 | nothing attached, next to uncapped bulk | netqos, next to bulk capped at 100 |"
md "|---|---|---|---|"
for mode in htb edt; do
  md "| $mode | ${R[$mode,idle,p50]} / ${R[$mode,idle,p99]} | ${R[$mode,bloat,p50]} / ${R[$mode,bloat,p99]} | ${R[$mode,rtt,p50]} / ${R[$mode,rtt,p99]} |"
done
md ""
md "### Wire rate vs cap"
md ""
md "N containers, each allocated the cap, send bulk TCP at once, each to its own iperf3 server; a"
md "container's rate is what the peer's ingress counted for its server's port (a u32 filter; wire"
md "bytes) over ${WINDOW} s after ${WARM} s of warm-up. *Machine*: what the same N uncapped containers"
md "reached together in the same mode; a cell whose N × cap exceeds 90 % of it is sender-limited (the"
md "guest cannot fill the caps; the cap must still not be exceeded)."
md ""
md "| containers | cap (Mbit/s) | mode | mean rate/cap | min | max | aggregate | machine (uncapped) | verdict |"
md "|---|---|---|---|---|---|---|---|---|"
declare -A WORST ABOVE
for mode in htb edt; do WORST[$mode]=0; ABOVE[$mode]=0; done
for n in "${COUNTS[@]}"; do
  for cap in "${CAPS[@]}"; do
    for mode in htb edt; do
      read -r mean lo hi agg fills <<<"${R[$mode,cell,$n,$cap]}"
      verdict=$(awk -v lo="$lo" -v hi="$hi" -v f="$fills" 'BEGIN {
        if (hi > 1.02) print "**above cap**"; else if (f != "fills") print "sender-limited";
        else if (lo >= 0.98) print "within ±2 %"; else print "**below cap**" }')
      [[ $verdict == "**above cap**" ]] && ABOVE[$mode]=1
      if [[ $fills == fills ]]; then
        WORST[$mode]=$(awk -v w="${WORST[$mode]}" -v lo="$lo" -v hi="$hi" 'BEGIN {
          a = 1 - lo; b = hi - 1; if (b > a) a = b; if (a > w) w = a; printf "%.4f", w }')
      fi
      md "| $n | $cap | $mode | $mean | $lo | $hi | $agg | ${R[$mode,machine,$n]} | $verdict |"
    done
  done
done
md ""
for mode in htb edt; do
  worst=$(awk -v w="${WORST[$mode]}" 'BEGIN { printf "%.1f", w * 100 }')
  note="no container above its cap"
  ((ABOVE[$mode])) && note="**a container above its cap by more than 2 %**"
  target "| lab ($mode, 4-queue NIC): wire rate vs cap, cells the guest can fill | worst container $worst % off its cap | no target | $note |"
done
fi
for mode in htb edt; do
  target "| lab ($mode, 4-queue NIC): uncapped container vs nothing attached | TCP ${R[$mode,ratio,tcp]}×, 64-byte UDP ${R[$mode,ratio,udp]}× | no target | emulated guest |"
done
for mode in htb edt; do
  target "| lab ($mode, 4-queue NIC): uncapped container next to a capped one vs nothing attached (out / in) | 64-byte UDP ${R[$mode,nratio,udp,out]}× / ${R[$mode,nratio,udp,in]}×, TCP ${R[$mode,nratio,tcp,out]}× / ${R[$mode,nratio,tcp,in]}×; BPF ${R[$mode,ns,out]} / ${R[$mode,ns,in]} ns per UDP packet | UDP ≥ 0.90×, TCP ≥ 0.97× (the host's targets) | emulated guest: the kernel's counters are the figure to compare |"
done
((UNCAPPED_ONLY)) || target "| lab: p99 RTT next to a bulk flow capped at 100 Mbit/s | htb ${R[htb,rtt,p99]} µs, edt ${R[edt,rtt,p99]} µs | no target | idle: ${R[edt,idle,p99]} µs |"
echo "== done" >&2
exit $((cleanup_ok ? 0 : 1))
