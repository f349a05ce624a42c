#!/usr/bin/env bash
# Caps on every path a pod's packets take, in EDT mode on a production-shaped NIC, for the kernel
# lab (scripts/kernel-lab.sh --kernel 6.12): a 4-queue veth with an mq root and fq_codel under each
# queue, netqosd with the default --shaping-mode=auto (which picks edt there). A pod behind a CNI
# (its own netns and veth, routed by the node) is allocated the cap, and each shape the node gives
# its traffic must hold it, what it sends (paced by departure times under the NIC's mq: the
# NIC's queues together within 2 % of the cap) and what it receives (its IFB leaf, HTB in both
# modes, -5/+2 %):
#   plain routed; masquerade (iptables MASQUERADE); NodePort DNAT (what it receives, and what it
#   serves back); a VXLAN overlay, an IPIP tunnel and a Geneve overlay carried by the NIC; IPv6
#   masquerade; and a host-network pod receiving raw IP (no ports: placed by the owner its socket
#   taught).
# The same shapes in HTB mode on this host: tests/integration/every_path_test.cc.
#
#   tests/kernels/every_path_test.sh [BUILD_DIR]   (root, a kernel with sch_fq, ipip, vxlan, nat)
#   LAB_CAP_MBPS  the pod's allocation (default 50)
#   LAB_NO_TRAFFIC=1  every step and check but the rates
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
CAP=${LAB_CAP_MBPS:-50}
TOL=0.02
HTB_FLOOR=0.05  # an HTB leaf on a TCG guest: -5/+2 % (see edt_test.sh)
NO_TRAFFIC=${LAB_NO_TRAFFIC:-}
((EUID == 0)) || fail "needs root"
for t in "$NETQOSD" "$NETQOSCTL" "$ATTACK"; do [[ -x $t ]] || fail "missing $t"; done

TAG=nqp$(($$ % 10000))
NS=$TAG-r NIC=${TAG}a PEER=${TAG}ap IP=10.247.1.1 REMOTE=10.247.1.2
IP6=fd4e:1::1 REMOTE6=fd4e:1::2
POD_NS=$TAG-pod POD_HOST=${TAG}ph POD_IF=eth0 POD_GW=10.246.1.1 POD_IP=10.246.1.2
POD_GW6=fd4e:2::1 POD_IP6=fd4e:2::2
VX=${TAG}vx VX_IP=10.245.1.1 VX_REMOTE=10.245.1.2
TUN=${TAG}ip TUN_IP=10.244.1.1 TUN_REMOTE=10.244.1.2
GNV=${TAG}gn GNV_IP=10.243.1.1 GNV_REMOTE=10.243.1.2
PORT=15801
FORWARD_BEFORE=$(cat /proc/sys/net/ipv4/ip_forward)
FORWARD6_BEFORE=$(cat /proc/sys/net/ipv6/conf/all/forwarding)
WORK=$(mktemp -d /tmp/netqos-paths.XXXXXX)
PIN_DIR=$WORK/bpf/netqos STATE=$WORK/state SOCK_DIR=$WORK/sock LOG=$WORK/netqosd.log
SOCK=$SOCK_DIR/qrm_network_plugin_static.sock
CGROOT=$("$NETQOSCTL" cgroup-mount) || fail "no cgroup2 mount"
ROOT_NAME=netqos-paths-$TAG
UID_=paths-1 CID=c0ffee20 UID_H=paths-2 CID_H=c0ffee21
CG=$CGROOT/$ROOT_NAME/pod$UID_/$CID
CG_H=$CGROOT/$ROOT_NAME/pod$UID_H/$CID_H
DAEMON="" SERVER="" CLIENT=""
NAT_RULES=()
export MQ_NIC_LEAF=fq_codel

stop_traffic() {
  local p
  for p in $CLIENT $SERVER; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  CLIENT="" SERVER=""
}
# What a failed run leaves to look at: the daemon's last words, the pod's veth and IFB as tc sees
# them, the class map.
diagnose() {
  log_tail
  echo "--- tc on $POD_HOST and ${IFB:-the IFB} ---" >&2
  tc -s filter show dev "$POD_HOST" ingress >&2
  tc -s filter show dev "$POD_HOST" egress >&2
  [[ -z ${IFB:-} ]] || tc -s class show dev "$IFB" >&2
  echo "--- the class map ---" >&2
  bpftool map dump pinned "$PIN_DIR/netqos_cls_v1" >&2
  echo "--- the pod's sockets ---" >&2
  ss -N "$POD_NS" -tin >&2
}
cleanup() {
  local r rc=$?
  ((rc == 0)) || diagnose 2>&1 | tail -n 120 >&2
  stop_traffic
  [[ -z $DAEMON ]] || { kill -KILL "$DAEMON" 2>/dev/null; wait "$DAEMON" 2>/dev/null; }
  [[ -e $PIN_DIR ]] && "$NETQOSD" --uninstall --bpf-pin-dir="$PIN_DIR" --qrm-state-dir="$STATE" >/dev/null 2>&1
  for r in "${NAT_RULES[@]}"; do eval "${r/ -A / -D }" 2>/dev/null; done
  ip link del "$VX" 2>/dev/null
  ip link del "$TUN" 2>/dev/null
  ip link del "$GNV" 2>/dev/null
  ip link del "$POD_HOST" 2>/dev/null
  ip netns del "$POD_NS" 2>/dev/null
  mq_nic_down "$NIC" "$NS" >/dev/null 2>&1
  echo "$FORWARD_BEFORE" >/proc/sys/net/ipv4/ip_forward
  echo "$FORWARD6_BEFORE" >/proc/sys/net/ipv6/conf/all/forwarding
  lab_work_down "$CGROOT/$ROOT_NAME" "$WORK"
}
trap cleanup EXIT

nat() { NAT_RULES+=("$*"); "$@" || fail "$*"; }

egress() { check_wire "$1, pod sending" exact "$NIC" "class 1:1,1:2,1:3,1:4" 5; }
# What the pod receives: its IFB leaf and what reached its eth0 (a counting filter there). A window
# passes when both are at most the cap + 2 %, the leaf carried at least 95 % of what the pod got
# (nothing went around the cap) and the pod got at least half the cap (traffic flowed): a TCG
# guest's receive path, two veths and an IFB deep, runs below the cap when the host is busy
# (33-45 Mbit/s at a load of 3.5-4), which an HTB floor would take for an error.
ingress() {
  local what="$1, pod receiving" out r e rp ep verdict attempt
  if [[ -n $NO_TRAFFIC ]]; then echo "  $what: $IFB $LEAF not measured (LAB_NO_TRAFFIC)"; return 0; fi
  for ((attempt = 1; attempt <= 5; attempt++)); do
    out=$(python3 tests/kernels/tc_rate.py "$IFB" "class $LEAF" 5 -n "$POD_NS" "$POD_IF" "ingress 30") ||
      fail "$what: measuring $IFB and the pod's $POD_IF"
    { read -r r e; read -r rp ep; } <<<"$out"
    verdict=$(awk -v r="$r" -v e="$e" -v rp="$rp" -v ep="$ep" -v c="$CAP" -v t="$TOL" 'BEGIN {
      if (r * (1 - e / 100) > c * (1 + t) || rp * (1 - ep / 100) > c * (1 + t)) { print "above"; exit }
      ok = r * (1 + e / 100) <= c * (1 + t) && rp * (1 + ep / 100) <= c * (1 + t) &&
           r * (1 + e / 100) >= 0.95 * rp * (1 - ep / 100) && rp >= 0.5 * c
      print ok ? "ok" : "again" }')
    echo "  $what: leaf $LEAF on $IFB sent $r Mbit/s (+-$e %), the pod's $POD_IF received $rp (+-$ep %; cap $CAP) (window $attempt)"
    case $verdict in
      ok) return 0 ;;
      above) fail "$what: above the cap of $CAP Mbit/s + 2 % (leaf $r, pod $rp)" ;;
    esac
  done
  fail "$what: leaf $r Mbit/s, the pod received $rp (cap $CAP): not within bounds in 5 windows"
}

# The class map entry of cgroup $1 as "priority flags slot", "" when none.
class_of() {
  bpftool -j map dump pinned "$PIN_DIR/netqos_cls_v1" 2>/dev/null | python3 -c '
import json, sys
want = int(sys.argv[1])
for e in json.load(sys.stdin):
    f = e.get("formatted", e)
    if int(f["key"]) == want:
        v = f["value"]
        print(v["priority"], v["flags"], v["slot"])' "$(stat -c %i "$1")"
}

# An iperf3 server in netns $1 (in cgroup $4 when given) on $2:$3.
start_server() {
  local cg=${4:-}
  if [[ -n $cg ]]; then
    sh -c "echo \$\$ > $cg/cgroup.procs && exec nsenter --net=/run/netns/$1 iperf3 -s -B $2 -p $3" >/dev/null 2>&1 &
  else
    nsenter --net="/run/netns/$1" iperf3 -s -B "$2" -p "$3" >/dev/null 2>&1 &
  fi
  SERVER=$!
  for _ in $(seq 150); do
    [[ -n $(ss -N "$1" -Hltn "sport = :$3" 2>/dev/null) ]] && break
    sleep 0.1
  done
}
# iperf3 -c $2 -p $3 [-R] from the pod (in its container's cgroup) or from netns $1 = the remote;
# for longer than any check's windows take on a slow TCG guest (stop_traffic ends it).
start_client() {
  local where=$1 to=$2 port=$3 rev=${4:-}
  if [[ $where == pod ]]; then
    sh -c "echo \$\$ > $CG/cgroup.procs && exec nsenter --net=/run/netns/$POD_NS iperf3 -c $to -p $port -t 600 $rev" >/dev/null 2>&1 &
  else
    nsenter --net="/run/netns/$where" iperf3 -c "$to" -p "$port" -t 600 $rev >/dev/null 2>&1 &
  fi
  CLIENT=$!
  sleep 2
}
# Both directions of a flow the pod opens to the remote's $1 (on port $2 and $2+1).
pod_flows() {
  local what=$1 to=$2 port=$3
  start_server "$NS" "$to" "$port"; start_client pod "$to" "$port"; egress "$what"; stop_traffic
  start_server "$NS" "$to" $((port + 1)); start_client pod "$to" $((port + 1)) -R; ingress "$what"; stop_traffic
}

echo "== $(uname -r): a 4-queue veth (mq, fq_codel), a CNI pod behind its own veth, a private bpffs"
for m in ipip vxlan geneve nf_nat iptable_nat ip6table_nat nft_chain_nat nft_masq nf_tables; do modprobe "$m" 2>/dev/null; done
mq_nic_up "$NIC" "$NS" "$IP/24" "$REMOTE/24" 4 || fail "mq_nic_up"
ip addr add "$IP6/64" dev "$NIC" nodad && ip -n "$NS" addr add "$REMOTE6/64" dev "$PEER" nodad || fail "IPv6 on the NIC"
{ ip netns add "$POD_NS" &&
  ip link add "$POD_HOST" type veth peer name "$POD_IF" netns "$POD_NS" &&
  ip addr add "$POD_GW/24" dev "$POD_HOST" && ip addr add "$POD_GW6/64" dev "$POD_HOST" nodad &&
  ip link set "$POD_HOST" up && ip -n "$POD_NS" link set lo up &&
  ip -n "$POD_NS" addr add "$POD_IP/24" dev "$POD_IF" &&
  ip -n "$POD_NS" addr add "$POD_IP6/64" dev "$POD_IF" nodad &&
  ip -n "$POD_NS" link set "$POD_IF" mtu 1450 up &&
  ip -n "$POD_NS" route add default via "$POD_GW" &&
  ip -n "$POD_NS" -6 route add default via "$POD_GW6"; } || fail "the pod's namespace and veth"
echo 1 >/proc/sys/net/ipv4/ip_forward
echo 1 >/proc/sys/net/ipv6/conf/all/forwarding
# What the pod receives, counted where it arrives (ingress()).
{ tc -n "$POD_NS" qdisc add dev "$POD_IF" clsact &&
  tc -n "$POD_NS" filter add dev "$POD_IF" ingress pref 30 protocol all u32 match u32 0 0 action pass; } ||
  fail "a counting filter on the pod's $POD_IF"
{ mkdir -p "$WORK/bpf" "$SOCK_DIR" "$STATE" "$CGROOT/$ROOT_NAME" && mount -t bpf bpf "$WORK/bpf"; } || fail "bpffs"
cat >"$WORK/pods.json" <<JSON
{"kind": "PodList", "items": [{"metadata": {"uid": "$UID_", "namespace": "lab", "name": "web",
  "annotations": {"katalyst.kubewharf.io/qos_level": "shared_cores"}},
  "spec": {"hostNetwork": false},
  "status": {"qosClass": "Burstable", "phase": "Running",
    "podIPs": [{"ip": "$POD_IP"}, {"ip": "$POD_IP6"}],
    "containerStatuses": [{"name": "app", "containerID": "containerd://$CID"}]}},
  {"metadata": {"uid": "$UID_H", "namespace": "lab", "name": "hostnet",
  "annotations": {"katalyst.kubewharf.io/qos_level": "shared_cores"}},
  "spec": {"hostNetwork": true},
  "status": {"qosClass": "Burstable", "phase": "Running", "podIPs": [{"ip": "$IP"}],
    "containerStatuses": [{"name": "app", "containerID": "containerd://$CID_H"}]}}]}
JSON
mkdir -p "$CG" "$CG_H" || fail "container cgroups"

echo "== netqosd (auto: edt on this NIC) enforcing $NIC; Allocate $CAP Mbit/s to the CNI pod"
lab_netqosd_start
for u in "$UID_:web" "$UID_H:hostnet"; do
  ctl allocate --pod-uid "${u%%:*}" --pod-namespace lab --pod-name "${u#*:}" --container app \
    --qos shared_cores --mbps "$CAP" >/dev/null || { log_tail; fail "Allocate ${u#*:}"; }
done
cls=""
for _ in $(seq 100); do
  cls=$(class_of "$CG")
  read -r prio flags slot <<<"$cls"
  [[ -n $cls ]] && (((flags & 4) != 0 && slot != 0)) && break
  sleep 0.1
done
read -r PRIO FLAGS SLOT <<<"$cls"
[[ -n $cls ]] && (((FLAGS & 4) != 0 && SLOT != 0)) ||
  { log_tail; fail "the pod's class entry is not classified at its veth: '$cls'"; }
LEAF=$(printf '10:%x' $((PRIO & 0xffff)))
IFB=nqifb$(<"/sys/class/net/$NIC/ifindex")
ctl status | grep -E "^ *$NIC .*edt \(auto" >/dev/null || { ctl status >&2; fail "$NIC is not in edt mode"; }
tc filter show dev "$POD_HOST" ingress | grep -q netqos_pod_tx || fail "no netqos_pod_tx on $POD_HOST"
tc filter show dev "$POD_HOST" egress | grep -q "Redirect to device $IFB" || fail "no redirect to $IFB on $POD_HOST"
echo "  the pod's entry: leaf $LEAF, flags $FLAGS, carrier slot $SLOT; $POD_HOST carries the veth programs"

echo "== plain routed"
ip -n "$NS" route add "${POD_IP%.*}.0/24" via "$IP" || fail "route"
pod_flows "routed" "$REMOTE" "$PORT"
ip -n "$NS" route del "${POD_IP%.*}.0/24" via "$IP"

echo "== masquerade (the remote has no route to the pod)"
nat iptables -w -t nat -A POSTROUTING -s "${POD_IP%.*}.0/24" -o "$NIC" -j MASQUERADE
pod_flows "masquerade" "$REMOTE" $((PORT + 2))

echo "== NodePort: the node DNATs $IP:30802 to the pod; what it receives and what it serves back"
nat iptables -w -t nat -A PREROUTING -i "$NIC" -p tcp --dport 30802 -j DNAT --to-destination "$POD_IP:$((PORT + 4))"
nat iptables -w -t nat -A PREROUTING -i "$NIC" -p tcp --dport 30803 -j DNAT --to-destination "$POD_IP:$((PORT + 5))"
start_server "$POD_NS" "$POD_IP" $((PORT + 4)); start_client "$NS" "$IP" 30802; ingress "NodePort"; stop_traffic
start_server "$POD_NS" "$POD_IP" $((PORT + 5)); start_client "$NS" "$IP" 30803 -R; egress "NodePort"; stop_traffic

echo "== a VXLAN overlay over $NIC"
{ ip link add "$VX" type vxlan id 42 dstport 4789 local "$IP" remote "$REMOTE" dev "$NIC" &&
  ip -n "$NS" link add nqvx type vxlan id 42 dstport 4789 local "$REMOTE" remote "$IP" dev "$PEER" &&
  ip addr add "$VX_IP/24" dev "$VX" && ip link set "$VX" up &&
  ip -n "$NS" addr add "$VX_REMOTE/24" dev nqvx && ip -n "$NS" link set nqvx up &&
  ip -n "$NS" route add "${POD_IP%.*}.0/24" via "$VX_IP"; } || fail "VXLAN"
pod_flows "VXLAN" "$VX_REMOTE" $((PORT + 6))
ip -n "$NS" route del "${POD_IP%.*}.0/24" via "$VX_IP"

echo "== an IPIP tunnel over $NIC"
{ ip link add "$TUN" type ipip local "$IP" remote "$REMOTE" dev "$NIC" &&
  ip -n "$NS" link add nqip type ipip local "$REMOTE" remote "$IP" dev "$PEER" &&
  ip addr add "$TUN_IP/24" dev "$TUN" && ip link set "$TUN" mtu 1450 up &&
  ip -n "$NS" addr add "$TUN_REMOTE/24" dev nqip && ip -n "$NS" link set nqip mtu 1450 up &&
  ip -n "$NS" route add "${POD_IP%.*}.0/24" via "$TUN_IP"; } || fail "IPIP"
pod_flows "IPIP" "$TUN_REMOTE" $((PORT + 8))
ip -n "$NS" route del "${POD_IP%.*}.0/24" via "$TUN_IP"

echo "== a Geneve overlay over $NIC"
{ ip link add "$GNV" type geneve id 43 remote "$REMOTE" &&
  ip -n "$NS" link add nqgnv type geneve id 43 remote "$IP" &&
  ip addr add "$GNV_IP/24" dev "$GNV" && ip link set "$GNV" up &&
  ip -n "$NS" addr add "$GNV_REMOTE/24" dev nqgnv && ip -n "$NS" link set nqgnv up &&
  ip -n "$NS" route add "${POD_IP%.*}.0/24" via "$GNV_IP"; } || fail "Geneve"
pod_flows "Geneve" "$GNV_REMOTE" $((PORT + 12))
ip -n "$NS" route del "${POD_IP%.*}.0/24" via "$GNV_IP"

echo "== IPv6: ip6tables masquerade"
nat ip6tables -w -t nat -A POSTROUTING -s "$POD_IP6/128" -o "$NIC" -j MASQUERADE
pod_flows "IPv6 masquerade" "$REMOTE6" $((PORT + 10))

echo "== a host-network pod receiving raw IP (protocol 253: no ports to find its socket by)"
HPRIO=$(class_of "$CG_H" | awk '{ print $1 }')
[[ -n $HPRIO ]] || fail "no class entry for the host-network pod"
HLEAF=$(printf '10:%x' $((HPRIO & 0xffff)))
sh -c "echo \$\$ > $CG_H/cgroup.procs && exec $ATTACK ip-sink --bind $IP --proto 253 --seconds 600" >/dev/null 2>&1 &
SERVER=$!
sleep 1
# What the peer offers (a counting filter on its egress): a TCG guest may not flood past the cap,
# and the leaf must then carry all of it.
tc -n "$NS" qdisc add dev "$PEER" clsact 2>/dev/null
tc -n "$NS" filter add dev "$PEER" egress pref 30 protocol ip u32 match ip protocol 253 0xff action pass ||
  fail "a counting filter on $PEER egress"
nsenter --net="/run/netns/$NS" "$ATTACK" ip-flood --dst "$IP" --proto 253 --size 1400 --mbps $((3 * CAP)) --seconds 600 >/dev/null 2>&1 &
CLIENT=$!
sleep 2
# A window passes when the leaf sent at most the cap + 2 % and at least 95 % of what the peer
# offered up to the cap (what did not go through the leaf went around the cap).
for attempt in 1 2 3 4 5; do
  [[ -z $NO_TRAFFIC ]] || { echo "  raw IP: $IFB $HLEAF not measured (LAB_NO_TRAFFIC)"; break; }
  out=$(python3 tests/kernels/tc_rate.py "$IFB" "class $HLEAF" 5 -n "$NS" "$PEER" "egress 30") ||
    fail "measuring $HLEAF on $IFB"
  { read -r r e; read -r ro eo; } <<<"$out"
  verdict=$(awk -v r="$r" -v e="$e" -v ro="$ro" -v c="$CAP" -v t="$TOL" -v f="$HTB_FLOOR" 'BEGIN {
    want = ro < c ? ro : c
    if (r * (1 - e / 100) > c * (1 + t)) { print "above"; exit }
    print (r * (1 + e / 100) <= c * (1 + t) && r >= want * (1 - f) && ro > 0) ? "ok" : "again" }')
  echo "  raw IP: the peer offered $ro Mbit/s (+-$eo %), leaf $HLEAF on $IFB sent $r (+-$e %; cap $CAP) (window $attempt)"
  case $verdict in
    ok) break ;;
    above) fail "raw IP: leaf $HLEAF sent $r Mbit/s, above the cap of $CAP Mbit/s + 2 %" ;;
  esac
  ((attempt < 5)) || fail "raw IP: leaf $r Mbit/s of $ro offered (cap $CAP) not within bounds in 5 windows"
done
stop_traffic

echo "== netqosd --uninstall: no program left on the pod's veth"
kill -TERM "$DAEMON"; wait "$DAEMON" 2>/dev/null; DAEMON=
"$NETQOSD" --uninstall --bpf-pin-dir="$PIN_DIR" --qrm-state-dir="$STATE" >>"$LOG" 2>&1 ||
  { log_tail; fail "--uninstall exited non-zero"; }
tc filter show dev "$POD_HOST" ingress | grep -q netqos && fail "a netqos filter left on $POD_HOST ingress"
tc filter show dev "$POD_HOST" egress | grep -q . && fail "a filter left on $POD_HOST egress: $(tc filter show dev "$POD_HOST" egress)"
[[ -e $PIN_DIR ]] && fail "pins left in $PIN_DIR"
if [[ -n $NO_TRAFFIC ]]; then
  echo "PASS: every shape set up and classified at the pod's veth in edt mode (rates not measured: LAB_NO_TRAFFIC)"
else
  echo "PASS: edt mode, the pod held both ways when routed, masqueraded, DNATed, in VXLAN, IPIP and Geneve, IPv6 masqueraded; raw IP to a host-network pod held"
fi
