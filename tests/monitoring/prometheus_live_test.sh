#!/usr/bin/env bash
# The shipped dashboard and alert rules against the real thing: the demo's lab (two NICs from veth
# pairs, five containers, bulk TCP from each container's cgroup; scripts/lib/demo-*.sh), a real
# netqosd with its metrics listener on 127.0.0.1, and a real Prometheus (Debian's) scraping it
# over loopback every second as a node-local agent would, with deploy/monitoring/netqos-rules.yaml
# loaded at 20 times the clock (prometheus_live_check.py rules: every `for:` and range divided by
# 20, so 2 minutes are 6 s). Checks, in order:
#  1. every recording rule and every dashboard panel's query returns series, and a level's class
#     counters agree with its containers' (db is the only dedicated_cores container);
#  2. the alerts that must fire do, and no other: the demo's oversized request refused
#     (NetqosAllocationsRefused) and a pod whose QoS level cannot be resolved
#     (NetqosClassificationProblems), checked with the healthy rest of the node;
#  3. a NIC set down: NetqosNicUnhealthy for that NIC;
#  4. netqosd killed with SIGKILL: NetqosDown.
# Everything it creates (namespaces, links, cgroups, pins, mounts, netqosd, Prometheus, iperf3) is
# removed on exit, also on failure and Ctrl-C, and the test fails if anything is left.
#
# Usage: tests/monitoring/prometheus_live_test.sh BUILD_DIR   (root; CTest runs it)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD_DIR=${1:-build}
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
NETQOSD=$BUILD_DIR/bin/netqosd
NETQOSCTL=$BUILD_DIR/bin/netqosctl
skip_or_fail() {  # a missing privilege or tool: CTest's skip locally, a failure under CI
  echo "$*" >&2
  [[ ${CI:-} == true ]] && exit 1
  exit 77
}
[[ $(id -u) == 0 ]] || skip_or_fail "NOT RUN: needs root (network namespaces, cgroups, BPF)"
for tool in prometheus promtool iperf3 bpftool ip tc nsenter mountpoint python3; do
  command -v "$tool" >/dev/null ||
    skip_or_fail "NOT RUN: $tool is missing (scripts/install-deps.sh installs it)"
done
for tool in "$NETQOSD" "$NETQOSCTL"; do
  [[ -x $tool ]] || { echo "missing $tool: build first" >&2; exit 2; }
done

fail() { echo "FAIL: $*" >&2; exit 1; }
step() { printf '\n== %s (%d s)\n' "$*" "$SECONDS"; }
show() { :; }  # the demo prints the commands it runs; this test does not
CHECK=(python3 "$ROOT/tests/monitoring/prometheus_live_check.py")

TAG=nqp$(($$ % 100000))
WORK=$(mktemp -d /tmp/netqos-prom.XXXXXX)
PROM_LOG=$WORK/prometheus.log
NODE=node-$TAG
DAEMON_PID=
source scripts/lib/demo-lab.sh
source scripts/lib/demo-traffic.sh
ctl() { "$NETQOSCTL" --socket "$SOCK" "$@"; }

finish() {
  local rc=$?
  trap - EXIT INT TERM
  flows_stop 2>/dev/null
  if ((rc != 0)); then
    [[ -s $LOG ]] && { echo "--- netqosd log (last 20 lines) ---"; tail -n 20 "$LOG"; } >&2
    [[ -s $PROM_LOG ]] && { echo "--- prometheus log (last 10 lines) ---"; tail -n 10 "$PROM_LOG"; } >&2
  fi
  lab_down_checked || exit 1  # kills every process in PIDS (Prometheus included) and removes $WORK
  ((rc == 0)) && echo "prometheus live test passed in ${SECONDS}s; nothing left behind"
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

# A sixth pod, not allocated, whose QoS level annotation matches no level: netqosd cannot
# classify it and reports the problem (NetqosClassificationProblems).
ODD_CG=$DEMO_CG/pododd-1/c0ffee0f
POD_LIST_EXTRA='{"metadata": {"uid": "odd-1", "namespace": "demo", "name": "odd", "annotations":
  {"katalyst.kubewharf.io/qos_level": "gold_cores"}}, "status": {"qosClass": "Burstable",
  "containerStatuses": [{"name": "app", "containerID": "containerd://c0ffee0f"}]}}'
DAEMON_FLAGS=(--metrics-bind-address=127.0.0.1:0)
source scripts/lib/demo-pods.sh

step "the demo's lab and netqosd, its metrics on 127.0.0.1"
lab_up
write_pod_list
start_daemon
METRICS=$(sed -n 's/.*metrics serving address=\([0-9.:]*\).*/\1/p' "$LOG" | head -n 1)
[[ -n $METRICS ]] || fail "netqosd logged no metrics address"
echo "netqosd metrics on $METRICS"
step "Prometheus scraping $METRICS every second, the shipped rules at 20 times the clock"
mkdir -p "$WORK/prometheus"
"${CHECK[@]}" rules --repo "$ROOT" --speedup 20 --out "$WORK/prometheus/rules.yaml"
PROM_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
PROM=http://127.0.0.1:$PROM_PORT
cat >"$WORK/prometheus/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: [rules.yaml]
scrape_configs:
  - job_name: netqos
    static_configs:
      - targets: ['$METRICS']
        labels: {node: '$NODE'}
EOF
promtool check config "$WORK/prometheus/prometheus.yml" >/dev/null
prometheus --config.file="$WORK/prometheus/prometheus.yml" \
  --storage.tsdb.path="$WORK/prometheus/data" --web.listen-address="127.0.0.1:$PROM_PORT" \
  >"$PROM_LOG" 2>&1 &
PIDS+=($!)
# Scraped once before anything is allocated: a counter's first increase is seen only from a
# scrape that had it at its earlier value.
"${CHECK[@]}" ready --url "$PROM" --scraped 'up{job="netqos"} == 1' --timeout 30

step "the kubelet registers the plugin, allocates five containers and refuses one; all send"
ctl plugin-info >/dev/null && ctl notify-registered >/dev/null  # the kubelet registers the plugin
allocate_all >/dev/null
# The request NIC B cannot hold, refused as in the demo: a RESOURCE_EXHAUSTED the alerts see.
if ctl allocate --pod-uid ml-1 --pod-namespace demo --pod-name ml --container trainer \
  --qos shared_cores --mbps 400 --annotation "$ENH={\"namespace_type\":\"anti_host_ns\"}" \
  >/dev/null 2>&1; then
  fail "400 Mbps on NIC B (250 free) was granted"
fi
mkdir -p "$ODD_CG"
start_containers
servers_start
flows_start 300

# NetqosAllocationsRefused fires at once and holds for 10 (here 0.5) minutes after the refusal:
# checked first, so that a slow machine cannot outlast it.
step "the refused request fires NetqosAllocationsRefused"
"${CHECK[@]}" fires --url "$PROM" --alert NetqosAllocationsRefused --label method=Allocate \
  --label "node=$NODE" --timeout 60

step "every recording rule and every dashboard panel returns series"
"${CHECK[@]}" series --url "$PROM" --repo "$ROOT" --node "$NODE" --namespace demo --timeout 90
"${CHECK[@]}" firing --url "$PROM" --must '' \
  --may NetqosAllocationsRefused,NetqosClassificationProblems --timeout 1
# Two views of one level agree: db alone is dedicated_cores, on NIC A; its level class there
# counts frames (link-layer header included), its socket counter IP bytes (a few % less).
"${CHECK[@]}" value --url "$PROM" --min 0.9 --max 1.2 \
  --what "dedicated_cores on NIC A: the level class's rate over its container's" \
  --expr "netqos:qos_level_class_bytes_per_second:rate1m{nic=\"$NIC_A\", qos_level=\"dedicated_cores\", direction=\"egress\"} / ignoring (nic) netqos:qos_level_bytes_per_second:rate1m{qos_level=\"dedicated_cores\", direction=\"egress\"}"

# The unclassifiable pod's problem fires after 10 (here 0.5) minutes of it.
step "the unclassifiable pod fires NetqosClassificationProblems, and nothing else fires"
"${CHECK[@]}" fires --url "$PROM" --alert NetqosClassificationProblems --label "node=$NODE" \
  --timeout 90
"${CHECK[@]}" firing --url "$PROM" --must NetqosClassificationProblems \
  --may NetqosAllocationsRefused --timeout 30

step "NIC A set down: NetqosNicUnhealthy for $NIC_A"
ip link set "$NIC_A" down
"${CHECK[@]}" fires --url "$PROM" --alert NetqosNicUnhealthy --label "nic=$NIC_A" \
  --label "node=$NODE" --timeout 60
ip link set "$NIC_A" up
"${CHECK[@]}" firing --url "$PROM" --must NetqosClassificationProblems \
  --may NetqosAllocationsRefused --timeout 60  # NetqosNicUnhealthy resolves

step "netqosd killed with SIGKILL: NetqosDown"
kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null || true
DAEMON_PID=
"${CHECK[@]}" fires --url "$PROM" --alert NetqosDown --label "node=$NODE" --label job=netqos \
  --timeout 60
