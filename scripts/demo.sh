#!/usr/bin/env bash
# The netqos demo: installs what is missing, builds, starts netqosd on a sample topology and plays
# the kubelet with netqosctl: plugin-watcher registration, hints, allocations of different QoS
# levels (one refused), a SIGKILL and restart that loses nothing, and a pod removal. Part 2
# (scripts/enforcement-demo.sh) enforces real allocations on this kernel: two cgroups held to
# 100 and 300 Mbit/s on a veth, through a kill -9 and a restart.
# Everything lives in a temp dir that is removed on exit, also on Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD_DIR=${BUILD_DIR:-build}

bold() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

scripts/install-deps.sh
if [[ ! -x $BUILD_DIR/bin/netqosd || ! -x $BUILD_DIR/bin/netqosctl ]]; then
  bold "building netqos"
  cmake -S . -B "$BUILD_DIR" -G Ninja >/dev/null
  cmake --build "$BUILD_DIR" -j "$(nproc)" --target netqosd netqosctl
fi
NETQOSD=$ROOT/$BUILD_DIR/bin/netqosd
NETQOSCTL=$ROOT/$BUILD_DIR/bin/netqosctl

WORK=$(mktemp -d /tmp/netqos-demo.XXXXXX)
DAEMON_PID=
cleanup() {
  if [[ -n $DAEMON_PID ]] && kill -0 "$DAEMON_PID" 2>/dev/null; then
    kill -TERM "$DAEMON_PID" 2>/dev/null || true
    wait "$DAEMON_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

SOCK_DIR=$WORK/plugins_registry
STATE_DIR=$WORK/qrm_advisor
SOCK=$SOCK_DIR/qrm_network_plugin_static.sock
cp deploy/examples/topology.json "$WORK/topology.json"
ctl() { "$NETQOSCTL" --socket "$SOCK" "$@"; }

start_daemon() {
  "$NETQOSD" --topology-file="$WORK/topology.json" --qrm-socket-dirs="$SOCK_DIR" \
    --qrm-state-dir="$STATE_DIR" --enforcement=none \
    --network-resource-plugin-reserved-bandwidth=4000 \
    --network-resource-plugin-class-id-shared-cores=20 \
    --network-resource-plugin-class-id-reclaimed-cores=10 \
    --network-resource-plugin-class-id-dedicated-cores=30 \
    --network-resource-plugin-class-id-system-cores=70 >>"$WORK/netqosd.log" 2>&1 &
  DAEMON_PID=$!
  for _ in $(seq 100); do
    ctl plugin-info >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "netqosd did not start; its log:" >&2
  cat "$WORK/netqosd.log" >&2
  exit 1
}

bold "the sample node: 4 NUMA nodes on 2 sockets, eth0/eth1 (25G) in the host, eth2 (10G) in netns ns2"
cat "$WORK/topology.json"

bold "start netqosd (reservation 4000 Mbps on the first NIC, capacity = speed x 0.94 / 0.9)"
start_daemon
echo "pid $DAEMON_PID, socket $SOCK"

bold "the kubelet's plugin watcher finds the socket and registers the plugin"
run ctl plugin-info
run ctl notify-registered
run ctl options

bold "what the kubelet sees as allocatable per NIC (and what netqos holds)"
run ctl capacity

bold "topology hints for three containers"
run ctl hints --pod-uid web-1 --pod-name web --container app --qos shared_cores --mbps 2000 \
  --annotation 'katalyst.kubewharf.io/network_enhancement={"namespace_type":"host_ns_preferred"}'
run ctl hints --pod-uid db-1 --pod-name db --container db --qos dedicated_cores --mbps 8000 \
  --annotation 'katalyst.kubewharf.io/network_enhancement={"namespace_type":"host_ns","topology_affinity_restricted":"true"}'
run ctl hints --pod-uid web-1 --pod-name web --container init --container-type INIT --qos shared_cores --mbps 2000

bold "allocations: shared, dedicated (host namespace only), reclaimed (outside the host namespace)"
run ctl allocate --pod-uid web-1 --pod-name web --container app --qos shared_cores --mbps 2000 --hint 0,1 --preferred
run ctl allocate --pod-uid db-1 --pod-name db --container db --qos dedicated_cores --mbps 8000 \
  --annotation 'katalyst.kubewharf.io/network_enhancement={"namespace_type":"host_ns"}'
run ctl allocate --pod-uid batch-1 --pod-name batch --container worker --qos reclaimed_cores --mbps 3000 \
  --annotation 'katalyst.kubewharf.io/network_enhancement={"namespace_type":"anti_host_ns"}'

bold "a request no NIC can satisfy is refused, and nothing already allocated is lost"
echo '$ ctl allocate --pod-uid huge-1 --pod-name huge --container app --qos shared_cores --mbps 40000'
if ctl allocate --pod-uid huge-1 --pod-name huge --container app --qos shared_cores --mbps 40000; then
  echo "unexpected: 40000 Mbps was granted" >&2
  exit 1
fi
run ctl allocations

bold "kill -9 the daemon and start it again: every acknowledged allocation is back"
kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null || true
start_daemon
run ctl allocations
run ctl capacity

bold "the kubelet removes a pod"
run ctl remove --pod-uid batch-1
run ctl allocations

bold "netqosd log excerpt"
grep -E "allocat|restored|serving" "$WORK/netqosd.log" | tail -n 12 || true
kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null || true; DAEMON_PID=

bold "part 2: enforcement on this machine's kernel (veth, cgroups, eBPF, HTB)"
scripts/enforcement-demo.sh "$BUILD_DIR"
