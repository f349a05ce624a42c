#!/usr/bin/env bash
# EDT mode on a production-shaped NIC, for the kernel lab (scripts/kernel-lab.sh; smoke.sh): a
# 4-queue veth with an mq root and fq_codel under each queue (the Debian default). netqosd with
# the default --shaping-mode=auto must pick edt there and say why, keep the mq root, put fq under
# each queue, and hold a container to its cap within 2 % by departure times alone (no HTB on the
# NIC): bulk TCP from the container, TCP from a cgroup the tenant made below it, and raw
# AF_PACKET frames from it (no cgroup hook sees those; only the NIC program does), and a pod behind
# a CNI routed out of the NIC (classified by its address, its sender in no container's cgroup).
# Attacks, each held on the wire: a process below another capped container floods with
# SO_PRIORITY forged to the container's HTB class and to values that pick each fq band (the
# container keeps its cap, the attacker stays within its own: pacing is by cgroup id); UDP
# datagrams larger than the MTU (fragments) to a socket the container holds, held by the IFB to
# its ingress cap with nothing going around the IFB; and what the CNI pod receives, held by the
# IFB to its cap (classified by its address). Three pods of a namespace with an aggregate (the
# tenant policy's) are held to it together by the aggregate's budget in the NIC program. A tenant's
# annotations lift nothing with netqosd's default flags, both ways: borrowing with 10G bandwidth
# annotations, an implicit request, an invalid QoS level, a 1Gi burst, an EF DSCP, system_cores on
# a pod without an allocation. After
# kill -9 the cap holds; a restarted netqosd
# adopts without re-creating qdiscs; --uninstall gives the NIC back its fq_codel queues and leaves
# no clsact, pin or IFB.
#
#   tests/kernels/edt_test.sh [BUILD_DIR]   (root, a kernel with sch_fq and sch_fq_codel)
#   LAB_CAP_MBPS  the container's allocation (default 100: what a 2-vCPU TCG guest carries)
#   LAB_NO_TRAFFIC=1  every step and check but the rates: the traffic still flows through each
#                 case for a moment, no window is measured (smoke.sh --no-traffic)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=scripts/lib/mq-nic.sh
. scripts/lib/mq-nic.sh
# shellcheck source=scripts/lib/lab-work.sh
. scripts/lib/lab-work.sh
# shellcheck source=scripts/lib/lab-netqosd.sh
. scripts/lib/lab-netqosd.sh
BUILD_DIR=${1:-build}
NETQOSD=$PWD/$BUILD_DIR/bin/netqosd
NETQOSCTL=$PWD/$BUILD_DIR/bin/netqosctl
ATTACK=$PWD/$BUILD_DIR/bin/netqos_attack_sender
CAP=${LAB_CAP_MBPS:-100} CAP_ALL=${LAB_CAP_MBPS:-100}
TOL=0.02
# What an HTB leaf (the IFB's, for what is received) must reach at least: 5 % below its cap, not
# 2 %. HTB sleeps on a timer between bursts, and a TCG guest on a busy or slow host wakes it
# late: CI measured 97.5-98.4 % over five windows of a received TCP flow on 5.10. A shaper
# holding a container far below its allocation still fails; above the cap the bound stays 2 %.
HTB_FLOOR=0.05
NO_TRAFFIC=${LAB_NO_TRAFFIC:-}
# The windows of the attack cases' own loops: none when rates are not measured.
ATTACK_WINDOWS="1 2 3 4 5"
[[ -z $NO_TRAFFIC ]] || ATTACK_WINDOWS=""
((EUID == 0)) || fail "needs root"
for t in "$NETQOSD" "$NETQOSCTL" "$ATTACK"; do [[ -x $t ]] || fail "missing $t"; done

TAG=nqe$(($$ % 10000))
NS=$TAG-r NIC=${TAG}a PEER=${TAG}ap IP=10.252.1.1 REMOTE=10.252.1.2 PORT=15601
# The attacker's destination: a second address of the peer, so that the peer's ingress counts
# the attacker's traffic apart from the victim's. PORT_FRAG: the capped receiver's UDP socket.
REMOTE2=10.252.1.3 PORT_FRAG=15602 PORT_POD=15603
# A pod behind a CNI: its own netns, a veth to the host, routed out of $NIC.
POD_NS=$TAG-pod POD_HOST=${TAG}ph POD_IF=${TAG}pp POD_GW=10.253.1.1 POD_IP=10.253.1.2
FORWARD_BEFORE=$(cat /proc/sys/net/ipv4/ip_forward)
WORK=$(mktemp -d /tmp/netqos-edt.XXXXXX)
PIN_DIR=$WORK/bpf/netqos STATE=$WORK/state SOCK_DIR=$WORK/sock LOG=$WORK/netqosd.log
SOCK=$SOCK_DIR/qrm_network_plugin_static.sock
CGROOT=$("$NETQOSCTL" cgroup-mount) || fail "no cgroup2 mount"
[[ $CGROOT == /sys/fs/cgroup ]] || fail "cgroup2 is mounted at '$CGROOT', not unified at /sys/fs/cgroup"
ROOT_NAME=netqos-edt-$TAG
UID_=edt-1 CID=c0ffee0e
CG=$CGROOT/$ROOT_NAME/pod$UID_/$CID
# A second container, capped at half the first's: the SO_PRIORITY attacker runs below it.
UID_A=edt-2 CID_A=c0ffee0f CAP_A=$((CAP / 2))
CG_A=$CGROOT/$ROOT_NAME/pod$UID_A/$CID_A
# A pod with no allocation, capped by its kubernetes.io/egress-bandwidth annotation alone: one
# leaf for the pod, paced at the annotation.
UID_V=edt-3 CID_V=c0ffee10 CAP_V=$((CAP / 2))
CG_V=$CGROOT/$ROOT_NAME/pod$UID_V/$CID_V
# Three pods of namespace agg, no caps of their own, its aggregate $CAP Mbit/s (tenant policy).
AGG_CIDS=(c0ffee21 c0ffee22 c0ffee23)
# Tenants' annotations that lifted a cap before the tenant policy (docs/tenant-policy.md), each on
# a pod of its own: "greedy" (allocation $CAP_E) asks to borrow up to 10G both ways, a 1Gi burst
# and EF; "implicit" declares $CAP_E Mbit/s without reserving them; "bogus" has an invalid QoS
# level and ${CAP_Q}M annotations, no allocation; "sys" claims system_cores, no allocation.
CAP_E=$((CAP / 2)) CAP_Q=$((CAP / 4))
UID_E=edt-e CID_E=c0ffee31 UID_I=edt-i CID_I=c0ffee32 UID_Q=edt-q CID_Q=c0ffee33 UID_S=edt-s CID_S=c0ffee34
CG_E=$CGROOT/$ROOT_NAME/pod$UID_E/$CID_E CG_I=$CGROOT/$ROOT_NAME/pod$UID_I/$CID_I
CG_Q=$CGROOT/$ROOT_NAME/pod$UID_Q/$CID_Q CG_S=$CGROOT/$ROOT_NAME/pod$UID_S/$CID_S
# The operator marks the shared level 8; the lab's netqosd runs with nothing else that is not the
# default.
DSCP_FLAG=--qos-level-dscp=shared_cores=8
DAEMON="" SERVER="" CLIENT="" FLOODS=""
export MQ_NIC_LEAF=fq_codel

# A CNI-style pod: netns $POD_NS behind a veth, its traffic routed by the host out of $NIC.
pod_up() {
  ip netns add "$POD_NS" &&
    ip link add "$POD_HOST" type veth peer name "$POD_IF" netns "$POD_NS" &&
    ip addr add "$POD_GW/24" dev "$POD_HOST" && ip link set "$POD_HOST" up &&
    ip -n "$POD_NS" addr add "$POD_IP/24" dev "$POD_IF" && ip -n "$POD_NS" link set "$POD_IF" up &&
    ip -n "$POD_NS" link set lo up && ip -n "$POD_NS" route add default via "$POD_GW" &&
    ip -n "$NS" route add "${POD_IP%.*}.0/24" via "$IP" &&
    echo 1 >/proc/sys/net/ipv4/ip_forward
}

stop_traffic() {
  local p
  # One by one: a bare `wait` (both empty) would wait for netqosd too.
  for p in $CLIENT $SERVER $FLOODS; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  CLIENT="" SERVER="" FLOODS=""
}
cleanup() {
  stop_traffic
  [[ -z $DAEMON ]] || { kill -KILL "$DAEMON" 2>/dev/null; wait "$DAEMON" 2>/dev/null; }
  [[ -e $PIN_DIR ]] && "$NETQOSD" --uninstall --bpf-pin-dir="$PIN_DIR" --qrm-state-dir="$STATE" >/dev/null 2>&1
  mq_nic_down "$NIC" "$NS" >/dev/null 2>&1
  ip link del "$POD_HOST" 2>/dev/null
  ip netns del "$POD_NS" 2>/dev/null
  echo "$FORWARD_BEFORE" >/proc/sys/net/ipv4/ip_forward
  lab_work_down "$CGROOT/$ROOT_NAME" "$WORK"
}
trap cleanup EXIT

# $1: the NIC's whole egress (the classes of its mq root 1:, one per TX queue) sends at the cap within 2 %: a
# window provably above the cap fails at once; one below it or too uncertain is measured again.
# With $2 = "at-most", only the upper bound counts (a flood paced by a dropping horizon).
check_rate() { check_wire "$1" "${2:-exact}" "$NIC" "class 1:1,1:2,1:3,1:4" 3; }

# skb->priority of the class map's entry for cgroup $1 (its HTB leaf on the IFB), "" when none.
priority_of() {
  bpftool map dump pinned "$PIN_DIR/netqos_cls_v1" 2>/dev/null |
    grep -A3 "\"key\": $(stat -c %i "$1")," | sed -n 's/.*"priority": \([0-9]*\).*/\1/p'
}
# The rate netqos_edt_v1 holds for cgroup $1's leaf (bytes/s; the map is keyed by the leaf's
# class handle, which is the class entry's priority), "" when none.
edt_rate_of() {
  local leaf
  leaf=$(priority_of "$1")
  [[ -n $leaf ]] || return 0
  bpftool map dump pinned "$PIN_DIR/netqos_edt_v1" 2>/dev/null |
    grep -A3 "\"key\": $leaf," | sed -n 's/.*"rate": \([0-9]*\).*/\1/p'
}

# Waits up to 10 s for cgroup $1's leaf to be paced at $2 Mbit/s in netqos_edt_v1; fails naming $3.
wait_edt_rate() {
  local rate=
  for _ in $(seq 100); do
    rate=$(edt_rate_of "$1")
    [[ $rate == $(($2 * 125000)) ]] && return 0
    sleep 0.1
  done
  log_tail
  fail "$3: netqos_edt_v1 holds '$rate' bytes/s for its leaf, want $(($2 * 125000))"
}
# The IFB leaf ("10:1a4") of cgroup $1's class entry.
ifb_leaf_of() { printf '10:%x' $(($(priority_of "$1") & 0xffff)); }
# A clsact on the peer for counting filters, once.
peer_clsact() {
  tc -n "$NS" qdisc show dev "$PEER" | grep -q clsact || tc -n "$NS" qdisc add dev "$PEER" clsact
}
# Packets counted so far by the filter at pref $1 on the peer's ingress.
peer_packets() {
  tc -s -n "$NS" filter show dev "$PEER" ingress pref "$1" |
    awk '/Sent [0-9]+ bytes [0-9]+ pkt/ { for (i = 1; i <= NF; i++) if ($i == "pkt") n += $(i - 1) } END { print n + 0 }'
}

# Bulk TCP between each of the three pods of namespace agg and a server of its own on the peer
# (-R: the pods receive), for the measurement that follows.
agg_tcp() {
  local i
  for i in 0 1 2; do
    nsenter --net="/run/netns/$NS" iperf3 -s -B "$REMOTE" -p $((PORT + 10 + i)) >/dev/null 2>&1 &
    SERVER="$SERVER $!"
  done
  sleep 1
  for i in 0 1 2; do
    sh -c "echo \$\$ > ${AGG_CGS[$i]}/cgroup.procs && exec iperf3 -c $REMOTE -p $((PORT + 10 + i)) -t 120 $*" \
      >/dev/null 2>&1 &
    CLIENT="$CLIENT $!"
  done
  sleep 2
}

# An iperf3 server in netns $1 on $2:$3 (SERVER), back once it listens (at most 15 s).
start_server() {
  nsenter --net="/run/netns/$1" iperf3 -s -B "$2" -p "$3" >/dev/null 2>&1 &
  SERVER=$!
  for _ in $(seq 150); do
    [[ -n $(ss -N "$1" -Hltn "src $2:$3" 2>/dev/null) ]] && break
    sleep 0.1
  done
}

# Bulk TCP from cgroup $1 to the peer (from the pod's netns with $2 = pod), for the measurement
# that follows; further arguments go to iperf3 (-R: the peer sends, the cgroup receives).
start_tcp() {
  start_server "$NS" "$REMOTE" "$PORT"
  local in_pod=""
  [[ ${2:-} == pod ]] && in_pod="nsenter --net=/run/netns/$POD_NS"
  sh -c "echo \$\$ > $1/cgroup.procs && exec $in_pod iperf3 -c $REMOTE -p $PORT -t 120 ${*:3}" >/dev/null 2>&1 &
  CLIENT=$!
  sleep 2
}

# The kinds of the qdiscs under the root's TX queues ("4 fq"). The root's handle is read, not
# assumed: an mq that --uninstall puts back after htb replaced it is numbered by the kernel.
queue_kinds() {
  tc qdisc show dev "$NIC" | awk '$4 == "root" { root = $3 }
    $4 == "parent" && root != "" && index($5, root) == 1 { print $2 }' | sort | uniq -c | xargs
}

echo "== $(uname -r): a 4-queue veth, mq root + fq_codel per queue, a container cgroup, a private bpffs"
mq_nic_up "$NIC" "$NS" "$IP/24" "$REMOTE/24" 4 || fail "mq_nic_up"
{ mkdir -p "$WORK/bpf" "$SOCK_DIR" "$STATE" "$CGROOT/$ROOT_NAME" && mount -t bpf bpf "$WORK/bpf"; } ||
  fail "bpffs"
cat >"$WORK/pods.json" <<JSON
{"kind": "PodList", "items": [{"metadata": {"uid": "$UID_", "namespace": "lab", "name": "web",
  "annotations": {"katalyst.kubewharf.io/qos_level": "shared_cores"}},
  "spec": {"hostNetwork": false},
  "status": {"qosClass": "Burstable", "phase": "Running", "podIPs": [{"ip": "$POD_IP"}],
    "containerStatuses": [{"name": "app", "containerID": "containerd://$CID"}]}},
  {"metadata": {"uid": "$UID_A", "namespace": "lab", "name": "evil",
  "annotations": {"katalyst.kubewharf.io/qos_level": "shared_cores"}},
  "spec": {"hostNetwork": true},
  "status": {"qosClass": "Burstable", "phase": "Running",
    "containerStatuses": [{"name": "app", "containerID": "containerd://$CID_A"}]}},
  {"metadata": {"uid": "$UID_V", "namespace": "lab", "name": "video",
  "annotations": {"katalyst.kubewharf.io/qos_level": "shared_cores",
    "kubernetes.io/egress-bandwidth": "${CAP_V}M"}},
  "spec": {"hostNetwork": true},
  "status": {"qosClass": "Burstable", "phase": "Running",
    "containerStatuses": [{"name": "app", "containerID": "containerd://$CID_V"}]}}$(
  for i in 0 1 2; do printf ',
  {"metadata": {"uid": "agg-%d", "namespace": "agg", "name": "agg-%d",
  "annotations": {"katalyst.kubewharf.io/qos_level": "shared_cores"}},
  "spec": {"hostNetwork": true},
  "status": {"qosClass": "Burstable", "phase": "Running",
    "containerStatuses": [{"name": "app", "containerID": "containerd://%s"}]}}' \
    "$i" "$i" "${AGG_CIDS[$i]}"; done)$(
  while read -r uid name cid annotations; do printf ',
  {"metadata": {"uid": "%s", "namespace": "lab", "name": "%s", "annotations": {%s}},
  "spec": {"hostNetwork": true},
  "status": {"qosClass": "Burstable", "phase": "Running",
    "containerStatuses": [{"name": "app", "containerID": "containerd://%s"}]}}' \
    "$uid" "$name" "$annotations" "$cid"; done <<PODS
$UID_E greedy $CID_E "katalyst.kubewharf.io/qos_level": "shared_cores", "netqos.io/container-ceil": "level", "kubernetes.io/egress-bandwidth": "10G", "kubernetes.io/ingress-bandwidth": "10G", "netqos.io/burst": "1Gi", "netqos.io/dscp": "46"
$UID_I implicit $CID_I "katalyst.kubewharf.io/qos_level": "shared_cores", "qrm.katalyst.kubewharf.io/quantity-from-qrm-declaration": "true"
$UID_Q bogus $CID_Q "katalyst.kubewharf.io/qos_level": "bogus", "kubernetes.io/egress-bandwidth": "${CAP_Q}M", "kubernetes.io/ingress-bandwidth": "${CAP_Q}M"
$UID_S sys $CID_S "katalyst.kubewharf.io/qos_level": "system_cores"
PODS
)]}
JSON
echo "{\"version\": 1, \"namespaces\": {\"agg\": {\"aggregate\": {\"egress\": \"${CAP}M\", \"ingress\": \"${CAP}M\"}}}}" \
  >"$WORK/tenant-policy.json"

echo "== netqosd (--shaping-mode default: auto) enforcing $NIC; Allocate $CAP Mbit/s"
lab_netqosd_start --tenant-policy-file="$WORK/tenant-policy.json" "$DSCP_FLAG"
ctl allocate --pod-uid "$UID_" --pod-namespace lab --pod-name web --container app \
  --qos shared_cores --mbps "$CAP" >/dev/null || { log_tail; fail "Allocate"; }
mkdir -p "$CG" || fail "mkdir $CG"
ID=$(stat -c %i "$CG")
RATE=
for _ in $(seq 100); do
  RATE=$(edt_rate_of "$CG")
  [[ -n $RATE ]] && break
  sleep 0.1
done
[[ $RATE == $((CAP * 125000)) ]] || { log_tail; fail "netqos_edt_v1 for the leaf of cgroup $ID is '$RATE', want $((CAP * 125000)) bytes/s"; }
echo "  cgroup id $ID's leaf -> netqos_edt_v1 rate $RATE bytes/s"
status=$(ctl status) || fail "netqosctl status"
grep -E "^ *$NIC .*edt \(auto: 4 TX queues and fq\)" <<<"$status" >/dev/null ||
  { echo "$status" >&2; fail "netqosctl status does not show $NIC in edt mode with its reason"; }
curl_metrics=$(ctl status --json | python3 -c 'import json,sys; d=json.load(sys.stdin)
print(" ".join(n["shaping_mode"] for n in d["daemon"]["nics"]))') || fail "netqosctl status --json"
[[ $curl_metrics == edt ]] || fail "status --json: shaping_mode '$curl_metrics', want edt"
qdiscs=$(tc qdisc show dev "$NIC")
grep -q '^qdisc mq 1: root' <<<"$qdiscs" || fail "the NIC's mq root 1: is gone: $qdiscs"
[[ $(queue_kinds) == "4 fq" ]] || fail "queues have '$(queue_kinds)', want 4 fq"
grep -q htb <<<"$qdiscs" && fail "an HTB qdisc on $NIC in EDT mode"
echo "  $NIC: mq 1: kept, fq under each of its 4 queues, no HTB"

echo "== bulk TCP from the container"
start_tcp "$CG"
check_rate "container"
stop_traffic

echo "== bulk TCP from a cgroup the tenant made below its container"
mkdir -p "$CG/escape" || fail "mkdir $CG/escape"
start_tcp "$CG/escape"
check_rate "nested cgroup"
stop_traffic

echo "== raw AF_PACKET frames from the container (no cgroup hook sees them)"
PEER_MAC=$(ip -n "$NS" -br link show "$PEER" | awk '{ print $3 }')
sh -c "echo \$\$ > $CG/cgroup.procs && exec $ATTACK raw-flood --ifname $NIC --dst-mac $PEER_MAC \
  --src-ip $IP --dst-ip $REMOTE --dst-port 9 --size 1400 --seconds 30" >/dev/null 2>&1 &
CLIENT=$!
sleep 2
check_rate "AF_PACKET flood" at-most
stop_traffic
drops=$(bpftool -j map dump pinned "$PIN_DIR/netqos_cgst_v2" | python3 -c '
import json, sys
want = int(sys.argv[1])
for e in json.load(sys.stdin):
    f = e.get("formatted", e)
    if int(f["key"]) == want:
        print(sum(v["value"]["drops"] for v in f["values"]))
        break
else:
    print(0)' "$ID") || fail "reading the container's counters"
# One socket's flood is held back by fq's per-flow limit (100 packets) and the socket's send
# buffer long before its queue reaches the 2 s horizon (the BPF test run proves the horizon).
fq_drops=$(tc -s qdisc show dev "$NIC" | awk '/^qdisc fq / { q = 1; next } q && /dropped/ { gsub(/,/, ""); s += $7; q = 0 } END { print s + 0 }')
echo "  dropped: $drops beyond the horizon (the container's counters), $fq_drops by fq's own limits"

echo "== a pod behind a CNI (its own netns, routed out of $NIC): classified by its address"
pod_up || fail "pod netns"
# Its sender runs in no container's cgroup: only the pod address map can name it.
start_tcp "$CGROOT/$ROOT_NAME" pod
check_rate "CNI pod"
stop_traffic

echo "== the CNI pod receives: held by the IFB to its ingress cap (classified by its address)"
PRIO=$(priority_of "$CG")
[[ -n $PRIO ]] || fail "no class map entry for cgroup id $ID"
LEAF=$(printf '10:%x' $((PRIO & 0xffff)))
IFB=nqifb$(<"/sys/class/net/$NIC/ifindex")
tc class show dev "$IFB" classid "$LEAF" | grep -q "rate ${CAP}Mbit ceil ${CAP}Mbit" ||
  fail "leaf $LEAF on $IFB is not $CAP Mbit/s: $(tc class show dev "$IFB" classid "$LEAF")"
start_server "$POD_NS" "$POD_IP" "$PORT_POD"
nsenter --net="/run/netns/$NS" iperf3 -c "$POD_IP" -p "$PORT_POD" -t 120 >/dev/null 2>&1 &
CLIENT=$!
sleep 2
check_wire "CNI pod, received" htb "$IFB" "class $LEAF" 5
stop_traffic

echo "== a pod capped by kubernetes.io/egress-bandwidth alone (${CAP_V}M, no allocation)"
mkdir -p "$CG_V" || fail "mkdir $CG_V"
RATE_V=
for _ in $(seq 100); do RATE_V=$(edt_rate_of "$CG_V"); [[ -n $RATE_V ]] && break; sleep 0.1; done
[[ $RATE_V == $((CAP_V * 125000)) ]] ||
  { log_tail; fail "netqos_edt_v1 for the annotated pod's leaf is '$RATE_V', want $((CAP_V * 125000))"; }
echo "  pod leaf $(printf '10:%x' $(($(priority_of "$CG_V") & 0xffff))) -> netqos_edt_v1 rate $RATE_V bytes/s"
start_tcp "$CG_V"
CAP=$CAP_V check_rate "annotated pod"
stop_traffic

echo "== a tenant's annotations with netqosd's default flags lift nothing, both ways"
ctl allocate --pod-uid "$UID_E" --pod-namespace lab --pod-name greedy --container app \
  --qos shared_cores --mbps "$CAP_E" >/dev/null || { log_tail; fail "Allocate $UID_E"; }
ctl allocate --pod-uid "$UID_I" --pod-namespace lab --pod-name implicit --container app \
  --qos shared_cores --mbps "$CAP_E" \
  --annotation qrm.katalyst.kubewharf.io/quantity-from-qrm-declaration=true >/dev/null ||
  { log_tail; fail "Allocate $UID_I"; }
mkdir -p "$CG_E" "$CG_I" "$CG_Q" "$CG_S" || fail "mkdir the tenants' cgroups"
wait_edt_rate "$CG_E" "$CAP_E" "greedy (container-ceil: level, 10G annotations, allocation $CAP_E)"
wait_edt_rate "$CG_I" "$CAP_E" "implicit ($CAP_E Mbit/s declared)"
wait_edt_rate "$CG_Q" "$CAP_Q" "bogus (an invalid QoS level, ${CAP_Q}M annotations)"
level=
for _ in $(seq 100); do
  level=$(bpftool map dump pinned "$PIN_DIR/netqos_cls_v1" 2>/dev/null |
    grep -A5 "\"key\": $(stat -c %i "$CG_S")," | sed -n 's/.*"qos_level": \([0-9]*\).*/\1/p')
  [[ -n $level ]] && break
  sleep 0.1
done
# 2: shared_cores, the unclassified level (0 would be system_cores).
[[ $level == 2 ]] || { log_tail; fail "sys (system_cores, no allocation): class entry level '$level', want 2"; }
echo "  paced: greedy $CAP_E, implicit $CAP_E, bogus $CAP_Q Mbit/s; sys at level $level (shared_cores)"
LEAF_E=$(ifb_leaf_of "$CG_E")
burst=$(tc class show dev "$IFB" classid "$LEAF_E" | sed -n 's/.* burst \([0-9]*\)b.*/\1/p')
# The default bucket at $CAP_E Mbit/s: 1 ms of it + one packet, far from 1 GiB.
if [[ -z $burst ]] || ((burst > 16384)); then
  fail "greedy's IFB leaf $LEAF_E has burst '$burst' bytes: $(tc class show dev "$IFB" classid "$LEAF_E")"
fi
echo "  greedy's IFB leaf $LEAF_E: burst $burst bytes (1Gi asked)"
# DSCP on the peer's ingress: EF (46, dsfield 0xb8) and the level's 8 (0x20), counted.
{ peer_clsact &&
  tc -n "$NS" filter add dev "$PEER" ingress pref 40 protocol ip u32 match ip dsfield 0xb8 0xfc action pass &&
  tc -n "$NS" filter add dev "$PEER" ingress pref 41 protocol ip u32 match ip dsfield 0x20 0xfc action pass; } ||
  fail "DSCP counting filters on $PEER"
# greedy sends with IP_TOS EF (iperf3 -S 0xb8): its packets must leave with the level's 8.
CAP=$CAP_E
start_tcp "$CG_E" "" -S 184
check_rate "greedy, out"
stop_traffic
ef=$(peer_packets 40) eight=$(peer_packets 41)
echo "  greedy asked for EF and set IP_TOS EF: the peer got $ef packets marked EF, $eight marked 8"
((ef == 0 && eight > 100)) || fail "greedy's DSCP: $ef packets EF, $eight marked 8 (want 0 and its traffic)"
# A process of no container with IP_TOS EF: CS0 (--dscp-default auto, since a level is marked).
tc -n "$NS" filter add dev "$PEER" ingress pref 42 protocol ip u32 match ip protocol 17 0xff \
  match ip dport 9 0xffff action pass || fail "a UDP counting filter on $PEER"
sh -c "echo \$\$ > $CGROOT/$ROOT_NAME/cgroup.procs && exec python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 0xb8)
for _ in range(50): s.sendto(b\"x\" * 100, (\"$REMOTE\", 9))'" || fail "a node process sending with IP_TOS EF"
sleep 0.5
ef=$(peer_packets 40) udp=$(peer_packets 42)
echo "  a node process set IP_TOS EF on 50 datagrams: the peer got $udp of them, $ef packets marked EF"
((ef == 0 && udp >= 50)) || fail "a node process's IP_TOS EF: $ef packets EF at the peer, $udp of its 50 datagrams seen"
start_tcp "$CG_E" "" -R
check_wire "greedy, in" htb "$IFB" "class $LEAF_E" 5
stop_traffic
start_tcp "$CG_I" ""
check_rate "implicit, out"
stop_traffic
start_tcp "$CG_I" "" -R
check_wire "implicit, in" htb "$IFB" "class $(ifb_leaf_of "$CG_I")" 5
stop_traffic
CAP=$CAP_Q
start_tcp "$CG_Q" ""
check_rate "bogus, out"
stop_traffic
start_tcp "$CG_Q" "" -R
check_wire "bogus, in" htb "$IFB" "class $(ifb_leaf_of "$CG_Q")" 5
stop_traffic
CAP=$CAP_ALL
for pref in 40 41 42; do
  tc -n "$NS" filter del dev "$PEER" ingress pref "$pref" || fail "removing counting filter $pref"
done

echo "== three pods of namespace agg, no caps of their own, its aggregate $CAP Mbit/s: held together"
AGG_CGS=()
for i in 0 1 2; do
  AGG_CGS+=("$CGROOT/$ROOT_NAME/podagg-$i/${AGG_CIDS[$i]}")
  mkdir -p "${AGG_CGS[$i]}" || fail "mkdir ${AGG_CGS[$i]}"
done
members=
for _ in $(seq 100); do
  members=$(bpftool -j map dump pinned "$PIN_DIR/netqos_agg_v1" 2>/dev/null |
    python3 -c 'import json,sys; print(len(json.load(sys.stdin)))' 2>/dev/null)
  [[ $members == 3 ]] && break
  sleep 0.1
done
[[ $members == 3 ]] || { log_tail; fail "netqos_agg_v1 holds '$members' leaves, want the 3 pods'"; }
AGG=$(bpftool -j map dump pinned "$PIN_DIR/netqos_agg_v1" | python3 -c '
import json, sys
aggregates = {e.get("formatted", e)["value"] for e in json.load(sys.stdin)}
print(aggregates.pop() if len(aggregates) == 1 else "")')
[[ -n $AGG ]] || fail "the 3 leaves do not name one aggregate in netqos_agg_v1"
AGG_RATE=$(bpftool map dump pinned "$PIN_DIR/netqos_edt_v1" | grep -A3 "\"key\": $AGG," |
  sed -n 's/.*"rate": \([0-9]*\).*/\1/p')
[[ $AGG_RATE == $((CAP * 125000)) ]] ||
  { log_tail; fail "netqos_edt_v1 for the aggregate $AGG is '$AGG_RATE', want $((CAP * 125000))"; }
echo "  3 leaves -> aggregate $(printf '10:%x' $((AGG & 0xffff))) paced at $AGG_RATE bytes/s"
agg_tcp
check_rate "three pods of one aggregate"
stop_traffic
# Receiving, the aggregate is an HTB class on the IFB above the three leaves, as in HTB mode.
AGG_IN=$(tc class show dev "$IFB" classid "$(ifb_leaf_of "${AGG_CGS[0]}")" |
  sed -n 's/.* parent \(10:[0-9a-f]*\).*/\1/p')
[[ -n $AGG_IN && $AGG_IN != 10:30 ]] || fail "agg-0's IFB leaf is not under an aggregate: parent '$AGG_IN'"
for i in 1 2; do
  parent=$(tc class show dev "$IFB" classid "$(ifb_leaf_of "${AGG_CGS[$i]}")" |
    sed -n 's/.* parent \(10:[0-9a-f]*\).*/\1/p')
  [[ $parent == "$AGG_IN" ]] || fail "agg-$i's IFB leaf is under '$parent', not the aggregate $AGG_IN"
done
agg_tcp -R
check_wire "three pods of one aggregate, received" htb "$IFB" "class $AGG_IN" 5
stop_traffic

echo "== SO_PRIORITY forged from below another capped container ($CAP_A Mbit/s)"
ctl allocate --pod-uid "$UID_A" --pod-namespace lab --pod-name evil --container app \
  --qos shared_cores --mbps "$CAP_A" >/dev/null || { log_tail; fail "Allocate $UID_A"; }
mkdir -p "$CG_A/nested" || fail "mkdir $CG_A/nested"
RATE_A=
for _ in $(seq 100); do RATE_A=$(edt_rate_of "$CG_A"); [[ -n $RATE_A ]] && break; sleep 0.1; done
[[ $RATE_A == $((CAP_A * 125000)) ]] || { log_tail; fail "netqos_edt_v1 for $CG_A is '$RATE_A', want $((CAP_A * 125000))"; }
# What the NIC sends in all (its mq classes: exact wire bytes, GSO segments included) and, at the
# peer's ingress, what the attacker's destination got (a filter's counter; its packets are not
# GSO, so exact too): the victim sent the difference. The attacker's packets are dropped there
# once counted (no ICMP replies, no receiver to feed on the TCG guest's CPU).
modprobe act_gact 2>/dev/null
{ ip -n "$NS" addr add "$REMOTE2/24" dev "$PEER" && peer_clsact &&
  tc -n "$NS" filter add dev "$PEER" ingress pref 20 protocol ip u32 match ip dst "$REMOTE2/32" action drop; } ||
  fail "a counting filter on $PEER"
# The forged values: the victim's class (what HTB would take for its leaf) and priorities that
# pick each fq band on kernels with bands (prio2band: 6 -> band 0, 0 -> 1, 1 and 2 -> 2).
FORGED="$PRIO 6 0 1 2"
start_tcp "$CG"
# Each flood offers 80 % of the attacker's cap (4x in all); their default send buffers block them
# before fq's per-flow limit (100 packets) would drop what the pacing let through.
for prio in $FORGED; do
  sh -c "echo \$\$ > $CG_A/nested/cgroup.procs && exec $ATTACK udp-flood --dst $REMOTE2:9 --size 1400 \
    --priority $prio --mbps $((4 * CAP_A / 5)) --seconds 120" >/dev/null 2>&1 &
  FLOODS+=" $!"
done
sleep 1
# shellcheck disable=SC2086  # one value each
echo "  victim: bulk TCP from $CG (cap $CAP); attacker: 5 UDP floods of $((4 * CAP_A / 5)) Mbit/s" \
  "from $CG_A/nested with SO_PRIORITY $(printf '0x%x ' $FORGED)(cap $CAP_A)"
# A window passes when the victim is within its cap +-2 % and the attacker at most its cap + 2 %
# (and flooding: above half its cap); either one provably above its cap + 2 % fails at once.
for attempt in $ATTACK_WINDOWS; do
  out=$(python3 tests/kernels/tc_rate.py "$NIC" "class 1:1,1:2,1:3,1:4" 5 -n "$NS" "$PEER" "ingress 20") ||
    fail "measuring $NIC and $PEER"
  { read -r rt et; read -r ra ea; } <<<"$out"
  read -r rv verdict < <(awk -v rt="$rt" -v et="$et" -v ra="$ra" -v ea="$ea" -v c="$CAP" -v ca="$CAP_A" -v t="$TOL" 'BEGIN {
    rv = rt - ra; v_lo = rt * (1 - et / 100) - ra * (1 + ea / 100); v_hi = rt * (1 + et / 100) - ra * (1 - ea / 100)
    if (v_lo > c * (1 + t) || ra * (1 - ea / 100) > ca * (1 + t)) v = "above"
    else v = (v_lo >= c * (1 - t) && v_hi <= c * (1 + t) && ra * (1 + ea / 100) <= ca * (1 + t) && ra > ca / 2) ? "ok" : "again"
    printf "%.2f %s\n", rv, v }')
  echo "  forged SO_PRIORITY: $NIC sent $rt Mbit/s (+-$et %): victim $rv (cap $CAP), attacker $ra (+-$ea %; cap $CAP_A) (window $attempt)"
  case $verdict in
    ok) break ;;
    above) fail "forged SO_PRIORITY: victim $rv (cap $CAP) or attacker $ra (cap $CAP_A) above its cap + 2 %" ;;
  esac
  ((attempt < 5)) || fail "forged SO_PRIORITY: victim $rv (cap $CAP), attacker $ra (cap $CAP_A) not within bounds in 5 windows"
done
stop_traffic

echo "== UDP datagrams larger than the MTU (3000 bytes: fragments) to a socket the container holds"
sh -c "echo \$\$ > $CG/cgroup.procs && exec $ATTACK udp-sink --bind $IP:$PORT_FRAG --seconds 120" \
  >"$WORK/sink.out" 2>&1 &
SERVER=$!
for _ in $(seq 50); do grep -q listening "$WORK/sink.out" && break; sleep 0.1; done
grep -q listening "$WORK/sink.out" || fail "udp-sink: $(cat "$WORK/sink.out")"
# What the peer sends to the node (a filter on its egress) against what netqos's act_mirred rule
# on the NIC's ingress hands to the IFB (its action's counter): a fragment the ingress program
# could not place would pass straight on, around the IFB and its cap.
MIRRED_PREF=49375
tc filter show dev "$NIC" ingress pref "$MIRRED_PREF" | grep -q "Redirect to device $IFB" ||
  fail "no act_mirred rule to $IFB at pref $MIRRED_PREF on $NIC: $(tc filter show dev "$NIC" ingress)"
tc -n "$NS" filter add dev "$PEER" egress pref 30 protocol ip u32 match ip dst "$IP/32" action pass ||
  fail "a counting filter on $PEER egress"
nsenter --net="/run/netns/$NS" "$ATTACK" udp-flood --dst "$IP:$PORT_FRAG" --size 3000 --seconds 120 \
  >/dev/null 2>&1 &
CLIENT=$!
sleep 2
# A window passes when the container's IFB leaf sent at most its cap + 2 % (and something), the
# peer offered more than the cap, and at most 2 % of it did not go to the IFB.
for attempt in $ATTACK_WINDOWS; do
  out=$(python3 tests/kernels/tc_rate.py "$IFB" "class $LEAF" 5 "$NIC" "ingress $MIRRED_PREF" \
    -n "$NS" "$PEER" "egress 30") || fail "measuring $LEAF on $IFB"
  { read -r r e; read -r rm em; read -r ro eo; } <<<"$out"
  read -r bypass verdict < <(awk -v r="$r" -v e="$e" -v c="$CAP" -v t="$TOL" -v rm="$rm" -v ro="$ro" 'BEGIN {
    bypass = ro > 0 ? 100 * (ro - rm) / ro : 0
    if (r * (1 - e / 100) > c * (1 + t)) v = "above"
    else v = (r * (1 + e / 100) <= c * (1 + t) && r > 0 && ro > c * 1.1 && bypass <= 2) ? "ok" : "again"
    printf "%.2f %s\n", bypass, v }')
  echo "  fragmented UDP: the peer sent $ro Mbit/s (+-$eo %), $rm (+-$em %) went to $IFB ($bypass % around it);" \
    "leaf $LEAF on $IFB sent $r Mbit/s (+-$e %; cap $CAP) (window $attempt)"
  case $verdict in
    ok) break ;;
    above) fail "fragmented UDP: leaf $LEAF on $IFB sent $r Mbit/s, above the cap of $CAP Mbit/s + 2 %" ;;
  esac
  ((attempt < 5)) || fail "fragmented UDP: leaf $r Mbit/s, offered $ro, $bypass % around the IFB: not within bounds in 5 windows"
done
stop_traffic

echo "== kill -9 netqosd: the pinned state keeps the cap"
kill -KILL "$DAEMON"; wait "$DAEMON" 2>/dev/null; DAEMON=
start_tcp "$CG"
check_rate "no daemon"
stop_traffic

echo "== restart: netqosd adopts (no qdisc re-created)"
: >"$LOG"
lab_netqosd_start --tenant-policy-file="$WORK/tenant-policy.json" "$DSCP_FLAG"
sleep 2
grep -qE 'edt_root_created=true|edt_queues_replaced=[1-9]|qdisc_created=true|fq under tx queues' "$LOG" &&
  { log_tail; fail "the restart re-created qdiscs on $NIC"; }
start_tcp "$CG"
check_rate "restarted"
stop_traffic

echo "== netqosd --uninstall: the NIC gets its fq_codel queues back"
kill -TERM "$DAEMON"; wait "$DAEMON" 2>/dev/null; DAEMON=
"$NETQOSD" --uninstall --bpf-pin-dir="$PIN_DIR" --qrm-state-dir="$STATE" >>"$LOG" 2>&1 ||
  { log_tail; fail "--uninstall exited non-zero"; }
[[ -e $PIN_DIR ]] && fail "pins left in $PIN_DIR: $(ls "$PIN_DIR")"
qdiscs=$(tc qdisc show dev "$NIC")
grep -q '^qdisc mq 1: root' <<<"$qdiscs" || fail "mq root gone after --uninstall: $qdiscs"
[[ $(queue_kinds) == "4 fq_codel" ]] || fail "after --uninstall the queues have '$(queue_kinds)', want 4 fq_codel"
grep -q clsact <<<"$qdiscs" && fail "clsact left on $NIC: $qdiscs"
links=$(ip -o link show)
grep -q nqifb <<<"$links" && fail "an IFB left behind: $(grep nqifb <<<"$links")"
echo "== flags only htb does: auto picks htb and names them; an explicit edt reports them inactive"
# shaped_as FLAGS...: netqosd with FLAGS added, its NIC row of `netqosctl status` and the NIC's
# inactive_features from --json; stopped and uninstalled after (the NIC's queues back each time).
shaped_as() {
  : >"$LOG"
  lab_netqosd_start "$@"
  local row=
  for _ in $(seq 50); do
    row=$(ctl status | grep -E "^ *$NIC " || true)
    [[ $row == *"("* ]] && break
    sleep 0.2
  done
  INACTIVE=$(ctl status --json | python3 -c 'import json,sys; d=json.load(sys.stdin)
print(",".join(f for n in d["daemon"]["nics"] for f in n.get("inactive_features", [])))') ||
    fail "netqosctl status --json"
  ROW=$row
  kill -TERM "$DAEMON"; wait "$DAEMON" 2>/dev/null; DAEMON=
  "$NETQOSD" --uninstall --bpf-pin-dir="$PIN_DIR" --qrm-state-dir="$STATE" >>"$LOG" 2>&1 ||
    { log_tail; fail "--uninstall exited non-zero"; }
  [[ $(queue_kinds) == "4 fq_codel" ]] || fail "after --uninstall the queues have '$(queue_kinds)'"
}
shaped_as --container-ceil=level --replace-root-qdisc
[[ $ROW == *"htb (auto: 4 TX queues and fq, but htb for --container-ceil=level)"* ]] ||
  { log_tail; fail "auto with --container-ceil=level: status row '$ROW'"; }
[[ -z $INACTIVE ]] || fail "htb NIC reports inactive features '$INACTIVE'"
echo "  auto + --container-ceil=level: $NIC in htb, reason names the flag"
shaped_as --shaping-mode=edt --qos-level-burst=shared_cores=64Ki
[[ $ROW == *"edt (--shaping-mode=edt (4 TX queues)); inactive: --qos-level-burst"* ]] ||
  { log_tail; fail "edt with --qos-level-burst: status row '$ROW'"; }
[[ $INACTIVE == --qos-level-burst ]] || fail "status --json inactive_features '$INACTIVE'"
grep -q 'requested but inactive on edt NICs.*features=--qos-level-burst' "$LOG" ||
  { log_tail; fail "no start-up warning naming --qos-level-burst"; }
echo "  edt + --qos-level-burst: $NIC in edt, --qos-level-burst reported inactive (status, --json, log)"

if [[ -n $NO_TRAFFIC ]]; then
  echo "PASS: auto chose edt on mq (htb for a flag only htb does, inactive ones reported under edt), every case ran (rates not measured: LAB_NO_TRAFFIC), killed, adopted, fq_codel queues back after --uninstall"
else
  echo "PASS: auto chose edt on mq (htb for a flag only htb does, inactive ones reported under edt), cap held within 2 % (container, nested cgroup, AF_PACKET at most, CNI pod both ways, tenants' annotations both ways, three pods of one aggregate both ways, forged SO_PRIORITY, fragments at most, killed, adopted), fq_codel queues back after --uninstall"
fi
