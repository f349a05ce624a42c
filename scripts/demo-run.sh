#!/usr/bin/env bash
# The netqos demo in one run of the real daemon, enforcement on, on this machine's kernel:
# two "NICs" from veth pairs (NIC A in the host namespace, NIC B in a namespace of its own, found
# through Katalyst's multi-namespace mode), netqosctl playing the kubelet (plugin-watcher
# registration, hints, Allocate for shared, dedicated and reclaimed containers spread over both
# NICs, one request refused; a fifth pod capped by kubernetes.io/{egress,ingress}-bandwidth alone),
# bulk TCP from each container's cgroup measured on the wire against its cap (one borrowing beyond
# its allocation, netqos.io/container-ceil=level), DSCP marks per level and by annotation,
# `netqosctl top`, kill -9 under traffic, a restart that adopts the pinned state, RemovePod and
# --uninstall. Exits non-zero when a check fails (a rate outside its cap +-2 Mbit/s, a DSCP not
# as asked, the oversized request granted, anything left behind); removes everything it created
# on exit, also on failure and Ctrl-C.
#
# Usage: scripts/demo-run.sh [BUILD_DIR]   (root; scripts/demo.sh installs and builds first)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD_DIR=${1:-${BUILD_DIR:-build}}
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
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
for tool in iperf3 bpftool ip tc nsenter mountpoint; do
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
SOCK_DIR=$WORK/plugins_registry
STATE_DIR=$WORK/qrm_advisor
SOCK=$SOCK_DIR/qrm_network_plugin_static.sock
LOG=$WORK/netqosd.log
DAEMON_PID=
source scripts/lib/demo-lab.sh
source scripts/lib/demo-traffic.sh

finish() {
  local rc=$? left
  trap - EXIT INT TERM
  flows_stop 2>/dev/null
  ((rc == 130)) && echo "interrupted: cleaning up" >&2
  if ((rc != 0 && rc != 130)) && [[ -s $LOG ]]; then
    echo "--- netqosd log (last 30 lines) ---" >&2
    tail -n 30 "$LOG" >&2
  fi
  lab_down
  left=$(lab_leftovers)
  if [[ -n $left ]]; then
    echo "FAIL: cleanup left objects behind:" >&2
    echo "$left" >&2
    exit 1
  fi
  if ((rc == 0)); then
    bold "demo passed in ${SECONDS}s; every namespace, link, cgroup, mount, pin and process removed"
  fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

ctl() { "$NETQOSCTL" --socket "$SOCK" "$@"; }

# Four containers of three QoS levels allocated through the plugin, and a fifth with no
# allocation capped by the standard bandwidth annotations alone. The kubelet's pod list (file://
# stands in for its API) tells netqosd which cgroup belongs to which container, and carries the
# pods' annotations: web asks for DSCP EF on its packets, cache may borrow beyond its allocation
# up to its QoS level's ceiling (docs/enforcement.md, "The bandwidth model"); the tenant policy
# lets namespace demo ask for both (docs/tenant-policy.md).
C_LABEL=(web/app db/db batch/worker cache/app video/app)
C_POD=(web db batch cache video)
C_CONTAINER=(app db worker app app)
C_UID=(web-1 db-1 batch-1 cache-1 video-1)
C_CID=(c0ffee0a c0ffee0b c0ffee0c c0ffee0d c0ffee0e)
C_QOS=(shared_cores dedicated_cores reclaimed_cores shared_cores shared_cores)
C_POD_QOS=(Burstable Guaranteed BestEffort Burstable Burstable)
C_MBPS=(100 200 50 150 0)  # 0: not allocated
C_PORT=(15401 15402 15403 15404 15405)
C_ANN=(', "netqos.io/dscp": "EF"' '' '' ', "netqos.io/container-ceil": "level"'
  ', "kubernetes.io/egress-bandwidth": "20M", "kubernetes.io/ingress-bandwidth": "40M"')
# What each container's leaf holds it to when it sends: its allocation, at least its allocation
# (it borrows), or its annotated cap.
C_EXPECT=(100 200 50 150 20)
C_BORROWS=(0 0 0 1 0)
C_CAP=("100 (alloc)" "200 (alloc)" "50 (alloc)" ">=150 (borrows)" "20 (annotation)")
# The DS field each sends with: web's annotation, then --qos-level-dscp's per-level marks, and CS0
# for the others (--dscp-default auto: some levels are marked, so no sender chooses its own).
C_WANT_DSCP=(46 34 8 0 0)
# network_enhancement: host_ns pins a container to host NICs (NIC A), anti_host_ns to the NICs of
# other namespaces (NIC B); topology_affinity_restricted keeps db on its NUMA hint.
ENH=katalyst.kubewharf.io/network_enhancement
C_ENH=('{"namespace_type":"host_ns"}'
  '{"namespace_type":"host_ns","topology_affinity_restricted":"true"}'
  '{"namespace_type":"anti_host_ns"}' '{"namespace_type":"anti_host_ns"}')
C_CG=() C_NIC=() C_NETNS=() C_NETNS_PATH=() C_REMOTE=() C_LEAF=() C_PRIO=()
for i in "${!C_LABEL[@]}"; do C_CG[i]=$DEMO_CG/pod${C_UID[$i]}/${C_CID[$i]}; done

write_pod_list() {
  local i sep=
  {
    echo '{"kind": "PodList", "items": ['
    for i in "${!C_LABEL[@]}"; do
      printf '%s{"metadata": {"uid": "%s", "namespace": "demo", "name": "%s", "annotations":
        {"katalyst.kubewharf.io/qos_level": "%s"%s}}, "status": {"qosClass": "%s",
        "containerStatuses": [{"name": "%s", "containerID": "containerd://%s"}]}}\n' \
        "$sep" "${C_UID[$i]}" "${C_POD[$i]}" "${C_QOS[$i]}" "${C_ANN[$i]}" "${C_POD_QOS[$i]}" \
        "${C_CONTAINER[$i]}" "${C_CID[$i]}"
      sep=,
    done
    echo ']}'
  } >"$WORK/pods.json"
}

# The demo measures each container's rate on its HTB leaf. Its veths have one TX queue per CPU,
# so on a kernel with sch_fq the default --shaping-mode=auto would pace them in EDT mode instead
# (no leaves): there the demo asks for htb, and says so. (This VM's kernel has no sch_fq.)
SHAPING_MODE=auto
if ip netns add "$TAG-fq" 2>/dev/null; then
  tc -n "$TAG-fq" qdisc add dev lo root fq 2>/dev/null && SHAPING_MODE=htb
  ip netns del "$TAG-fq"
fi

# Only the two demo NICs are NICs for this daemon: every other host link (a PCI eth0 would
# count by default) is denied. Veths report no speed: it is given per NIC.
start_daemon() {
  local deny='' link
  for link in /sys/class/net/*; do
    [[ ${link##*/} == "$NIC_A" ]] || deny+=${deny:+,}${link##*/}
  done
  # A session of its own: Ctrl-C in the terminal interrupts the demo, whose cleanup then stops the
  # daemon, rather than stopping the daemon under a command that is still talking to it.
  setsid "$NETQOSD" --machine-net-multi-ns --machine-net-ns-dir="$NS_DIR" \
    --nic-allow="$NIC_A,$NIC_B" --nic-deny="$deny" \
    --nic-speed-override="$NIC_A=1000" --nic-speed-override="$NIC_B=500" \
    --network-resource-plugin-reserved-bandwidth=100 \
    --network-resource-plugin-class-id-shared-cores=20 \
    --network-resource-plugin-class-id-reclaimed-cores=10 \
    --network-resource-plugin-class-id-dedicated-cores=30 \
    --enforce-nics="$NIC_A,$NS_B/$NIC_B" --shaping-mode="$SHAPING_MODE" \
    --qos-level-dscp=dedicated_cores=AF41,reclaimed_cores=CS1 \
    --tenant-policy-file="$WORK/tenant-policy.json" \
    --pod-source=kubelet \
    --kubelet-pods-url="file://$WORK/pods.json" --addition-cgroup-paths="/$CG_ROOT_NAME" \
    --bpf-pin-dir="$PIN_DIR" --qrm-socket-dirs="$SOCK_DIR" --qrm-state-dir="$STATE_DIR" \
    --enforcement-resync-period=5 >>"$LOG" 2>&1 &
  DAEMON_PID=$!
  for _ in $(seq 100); do
    ctl plugin-info >/dev/null 2>&1 && return 0
    kill -0 "$DAEMON_PID" 2>/dev/null || break
    sleep 0.1
  done
  fail "netqosd did not start (its log follows)"
}

bold "two NICs from veth pairs: A in the host namespace, B in a namespace of its own"
lab_up
forward_update_priority() {
  nsenter --net="/var/run/netns/$NS_B" cat /proc/sys/net/ipv4/ip_forward_update_priority
}
FWD_PRIO_B=$(forward_update_priority)  # netqosd leaves it alone (it classifies routed packets itself)
write_pod_list
# What the tenants of namespace demo may ask for beyond what is stricter: borrowing, and DSCP EF.
echo '{"version": 1, "namespaces": {"demo": {"borrow": true, "dscp": ["EF"]}}}' \
  >"$WORK/tenant-policy.json"
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

# Container i's request, as the kubelet sends it.
request() {
  REQ=(--pod-uid "${C_UID[$1]}" --pod-namespace demo --pod-name "${C_POD[$1]}"
    --container "${C_CONTAINER[$1]}" --qos "${C_QOS[$1]}" --mbps "${C_MBPS[$1]}"
    --annotation "$ENH=${C_ENH[$1]}")
}
# The value of an allocation annotation in `netqosctl allocate`'s table ("" prints as "").
annotation() { awk -v k="qrm.katalyst.kubewharf.io/$1" '$1 == k { print ($2 == "\"\"") ? "" : $2 }'; }

# Allocates container i the way the kubelet does: hints, then Allocate with the hint it merged
# (db is restricted to its NUMA hint). Records the NIC and namespace the allocation names; prints
# the whole response for the first container on NIC B, a summary for the others.
allocate() {
  local i=$1 hint=() out nic netns_path nodes
  request "$i"
  if [[ ${C_QOS[$i]} == dedicated_cores ]]; then
    show ctl hints "${REQ[@]}"
    out=$(ctl hints "${REQ[@]}")
    echo "$out"
    nodes=$(awk '$2 == "true" { print $1; exit }' <<<"$out")  # the first preferred hint
    [[ -n $nodes ]] || fail "no preferred hint for ${C_LABEL[$i]}"
    hint=(--hint "$nodes" --preferred)
  fi
  show ctl allocate "${REQ[@]}" "${hint[@]}"
  out=$(ctl allocate "${REQ[@]}" "${hint[@]}")
  nic=$(annotation nic_name <<<"$out")
  netns_path=$(annotation netns_path <<<"$out")
  [[ -n $nic ]] || fail "Allocate for ${C_LABEL[$i]} named no NIC: $out"
  C_NIC[i]=$nic
  C_NETNS_PATH[i]=$netns_path
  C_NETNS[i]=${netns_path:+$(basename "$netns_path")}
  if [[ -z $netns_path ]]; then C_REMOTE[i]=$REMOTE_A; else C_REMOTE[i]=$REMOTE_B; fi
  if ((i == 2)); then
    echo "$out"
  else
    echo "   -> ${C_MBPS[$i]} Mbps on $nic${netns_path:+ (netns_path $netns_path)}," \
      "netcls_id $(annotation netcls_id <<<"$out")"
  fi
}

bold "hints and allocations: shared, dedicated and reclaimed containers on both NICs"
for i in "${!C_LABEL[@]}"; do ((C_MBPS[i] > 0)) && allocate "$i"; done
# video has no allocation: its annotations cap it on every enforced NIC; it sends over NIC A.
C_NIC[4]=$NIC_A C_NETNS[4]='' C_NETNS_PATH[4]='' C_REMOTE[4]=$REMOTE_A
[[ ${C_NIC[0]} == "$NIC_A" && ${C_NIC[1]} == "$NIC_A" && -z ${C_NETNS[0]}${C_NETNS[1]} ]] ||
  fail "host_ns containers were not given NIC A: ${C_NIC[*]}"
[[ ${C_NIC[2]} == "$NIC_B" && ${C_NIC[3]} == "$NIC_B" && ${C_NETNS[2]} == "$NS_B" &&
  ${C_NETNS[3]} == "$NS_B" ]] ||
  fail "anti_host_ns containers were not given NIC B in $NS_B: ${C_NIC[*]} ${C_NETNS[*]}"

# Every allocated container still holds its allocation: one entry each, with its pod uid.
check_allocations() {
  local json n i want=0
  json=$(ctl --json allocations)
  n=$(grep -c '"pod_uid"' <<<"$json" || true)
  for i in "${!C_LABEL[@]}"; do
    ((C_MBPS[i] > 0)) || continue
    ((++want))
    [[ $json == *"\"${C_UID[$i]}\""* ]] || fail "$1: ${C_LABEL[$i]} lost its allocation"
  done
  ((n == want)) || fail "$1: $n allocations held, expected $want"
}

bold "a request for more than NIC B has left is refused, and nothing already allocated is lost"
HUGE=(--pod-uid ml-1 --pod-namespace demo --pod-name ml --container trainer --qos shared_cores
  --mbps 400 --annotation "$ENH={\"namespace_type\":\"anti_host_ns\"}")
run ctl hints "${HUGE[@]}"
show ctl allocate "${HUGE[@]}"
if ctl allocate "${HUGE[@]}"; then fail "400 Mbps on NIC B (250 free) was granted"; fi
run ctl allocations
check_allocations "after the refused request"

bold "the runtime starts the containers: their cgroups appear and netqosd classifies them"
for i in "${!C_LABEL[@]}"; do mkdir -p "${C_CG[$i]}"; done
for _ in $(seq 100); do
  ready=1
  for i in "${!C_LABEL[@]}"; do [[ -n $(priority_of "${C_CG[$i]}") ]] || ready=0; done
  ((ready)) && break
  sleep 0.1
done
((ready)) || fail "the class map did not get every container"
for i in "${!C_LABEL[@]}"; do
  C_PRIO[i]=$(priority_of "${C_CG[$i]}")
  C_LEAF[i]=$(leaf_of_priority "${C_PRIO[$i]}")
done
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
run kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null || true
DAEMON_PID=
sleep 0.5
check_rates " (no daemon)"
print_table

bold "a restarted netqosd adopts the pinned state: same leaves, no qdisc re-created"
: >"$LOG"
start_daemon
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
flows_stop

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
