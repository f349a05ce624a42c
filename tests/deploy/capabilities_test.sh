#!/usr/bin/env bash
# netqosd runs with exactly the capabilities the DaemonSet gives it (deploy/base/30-daemonset.yaml:
# securityContext.capabilities, read from the manifest, not repeated here): root whose bounding set
# is cut to that list, as a container runtime does (capsh --drop of every other capability, so the
# exec'd netqosd's permitted and effective sets are the list). With it, the enforcement smoke: a
# veth into a private netns, a private bpffs, a container cgroup, Allocate, and the container's
# class map entry and HTB leaf on the NIC. Then, for each capability of the list in turn, netqosd
# without it must refuse to start enforcement with a reason naming it (not an errno from libbpf).
#
#   tests/deploy/capabilities_test.sh NETQOSD NETQOSCTL MANIFEST   (root; exit 77: not run)
set -uo pipefail
NETQOSD=$1 NETQOSCTL=$2 MANIFEST=$3
here=$(cd "$(dirname "$0")/../.." && pwd)
not_run() {
  if [[ ${CI:-} == true ]]; then echo "FAIL: $* (CI=true: a missing privilege fails)"; exit 1; fi
  echo "SKIP: $*"; exit 77
}
fail() { echo "FAIL: $*" >&2; exit 1; }
((EUID == 0)) || not_run "needs root (network namespaces, a bpffs, cgroups)"
command -v capsh >/dev/null || not_run "capsh is missing (Debian: libcap2-bin; scripts/install-deps.sh)"
command -v bpftool >/dev/null || not_run "bpftool is missing"
for t in "$NETQOSD" "$NETQOSCTL"; do [[ -x $t ]] || fail "missing $t"; done

# The manifest's list, upper case without CAP_ (as Kubernetes writes it); drop must be ALL.
mapfile -t CAPS < <(python3 - "$MANIFEST" <<'EOF'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
ds = next(d for d in docs if d.get("kind") == "DaemonSet")
c = next(c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == "netqosd")
caps = c["securityContext"]["capabilities"]
assert caps.get("drop") == ["ALL"], f"capabilities.drop is {caps.get('drop')}, not [ALL]"
print("\n".join(str(x).upper().removeprefix("CAP_") for x in caps["add"]))
EOF
)
((${#CAPS[@]})) || fail "no capabilities.add for netqosd in $MANIFEST"
echo "== the manifest's capabilities: ${CAPS[*]}"

TAG=nqc$(($$ % 10000))
NS=$TAG-r NIC=${TAG}a PEER=${TAG}p
WORK=$(mktemp -d /tmp/netqos-caps.XXXXXX)
PIN_DIR=$WORK/bpf/netqos STATE=$WORK/state SOCK_DIR=$WORK/sock LOG=$WORK/netqosd.log
SOCK=$SOCK_DIR/qrm_network_plugin_static.sock
ROOT_NAME=netqos-caps-$TAG UID_=caps-1 CID=c0ffee02 CGROOT="" CG=""
DAEMON=""
cleanup() {
  [[ -n $DAEMON ]] && kill -KILL "$DAEMON" 2>/dev/null && wait "$DAEMON" 2>/dev/null
  [[ -e $PIN_DIR ]] && "$NETQOSD" --uninstall --bpf-pin-dir="$PIN_DIR" --qrm-state-dir="$STATE" >/dev/null 2>&1
  ip link del "$NIC" 2>/dev/null
  ip netns del "$NS" 2>/dev/null
  # shellcheck source=scripts/lib/lab-work.sh
  . "$here/scripts/lib/lab-work.sh"
  [[ -n $CGROOT ]] && lab_work_down "$CGROOT/$ROOT_NAME" "$WORK"
}
trap cleanup EXIT
CGROOT=$("$NETQOSCTL" cgroup-mount) || not_run "no cgroup v2 mount"
CG=$CGROOT/$ROOT_NAME/pod$UID_/$CID

# An address: netqosd offers only NICs that have one.
{ ip netns add "$NS" && ip link add "$NIC" type veth peer name "$PEER" netns "$NS" &&
  ip addr add 10.250.3.1/24 dev "$NIC" && ip link set "$NIC" up &&
  ip -n "$NS" link set "$PEER" up; } || fail "veth into $NS"
# The host's bpffs, which the container sees through its HostToContainer mount: netqosd mounts
# none itself.
{ mkdir -p "$WORK/bpf" "$SOCK_DIR" "$STATE" "$CGROOT/$ROOT_NAME" && mount -t bpf bpf "$WORK/bpf"; } ||
  fail "bpffs"
cat >"$WORK/pods.json" <<EOF
{"kind": "PodList", "items": [{"metadata": {"uid": "$UID_", "namespace": "caps", "name": "web",
  "annotations": {"katalyst.kubewharf.io/qos_level": "shared_cores"}},
  "status": {"qosClass": "Burstable", "containerStatuses": [{"name": "app", "containerID": "containerd://$CID"}]}}]}
EOF

# Every capability this kernel knows that is not in the list given (capsh --drop cuts the bounding
# set; root's exec'd netqosd then holds the list and nothing more).
drop_list() {
  local keep=" ${*,,} " out="" c
  for c in $(capsh --print | sed -n 's/^Bounding set =//p' | tr ',' ' '); do
    [[ $keep == *" ${c#cap_} "* ]] || out+=${out:+,}$c
  done
  echo "$out"
}

# netqosd with capabilities $@ only, enforcing $NIC alone; its log in $LOG.
start() {
  local deny='' l
  for l in /sys/class/net/*; do [[ ${l##*/} == "$NIC" ]] || deny+=${deny:+,}${l##*/}; done
  : >"$LOG"
  # shellcheck disable=SC2016  # the shell capsh runs expands them
  capsh --drop="$(drop_list "$@")" -- -c 'exec "$0" "$@"' "$NETQOSD" --enforcement=bpf \
    --nic-allow="$NIC" --nic-deny="$deny" --nic-speed-override="$NIC=1000" --enforce-nics="$NIC" \
    --pod-source=kubelet --kubelet-pods-url="file://$WORK/pods.json" \
    --addition-cgroup-paths="/$ROOT_NAME" --bpf-pin-dir="$PIN_DIR" --qrm-socket-dirs="$SOCK_DIR" \
    --qrm-state-dir="$STATE" --enforcement-resync-period=2 --shaping-mode=htb >>"$LOG" 2>&1 &
  DAEMON=$!
}
ctl() { "$NETQOSCTL" --socket "$SOCK" "$@"; }

echo "== netqosd with ${CAPS[*]} only: enforcement on $NIC, Allocate, a container cgroup"
start "${CAPS[@]}"
for _ in $(seq 300); do
  ctl plugin-info >/dev/null 2>&1 && break
  kill -0 "$DAEMON" 2>/dev/null || { cat "$LOG"; fail "netqosd exited with the manifest's capabilities"; }
  sleep 0.1
done
grep -q "^CapEff:" "/proc/$DAEMON/status" && echo "  CapEff $(awk '/^CapEff:/ {print $2}' "/proc/$DAEMON/status")"
ctl allocate --pod-uid "$UID_" --pod-namespace caps --pod-name web --container app \
  --qos shared_cores --mbps 100 >/dev/null || { tail -20 "$LOG"; fail "Allocate"; }
mkdir -p "$CG" || fail "mkdir $CG"
PRIO=
for _ in $(seq 100); do
  PRIO=$(bpftool map dump pinned "$PIN_DIR/netqos_cls_v1" 2>/dev/null |
    grep -A3 "\"key\": $(stat -c %i "$CG")," | sed -n 's/.*"priority": \([0-9]*\).*/\1/p')
  [[ -n $PRIO ]] && break
  sleep 0.1
done
[[ -n $PRIO ]] || { tail -20 "$LOG"; fail "no class map entry for the container's cgroup after 10 s"; }
LEAF=$(printf '10:%x' $((PRIO & 0xffff)))
for _ in $(seq 50); do
  tc class show dev "$NIC" classid "$LEAF" | grep -q "rate 100Mbit" && break
  sleep 0.1
done
tc class show dev "$NIC" classid "$LEAF" | grep -q "rate 100Mbit" ||
  { tail -20 "$LOG"; fail "no 100 Mbit/s HTB leaf $LEAF on $NIC"; }
echo "  classified (skb->priority $PRIO) and shaped (HTB leaf $LEAF at 100 Mbit/s on $NIC)"
kill -TERM "$DAEMON"; wait "$DAEMON" 2>/dev/null; DAEMON=
"$NETQOSD" --uninstall --bpf-pin-dir="$PIN_DIR" --qrm-state-dir="$STATE" >/dev/null 2>&1 ||
  fail "--uninstall"

# Without one, enforcement must not start and say which capability it lacks. netqosd keeps
# serving allocations (docs/troubleshooting.md: a daemon that exited would fail every admission
# on the node); /readyz and `netqosctl status` carry the same reason.
for missing in "${CAPS[@]}"; do
  rest=()
  for c in "${CAPS[@]}"; do [[ $c == "$missing" ]] || rest+=("$c"); done
  echo "== without $missing (${rest[*]}): enforcement refused, naming CAP_$missing"
  start "${rest[@]}"
  line=""
  for _ in $(seq 100); do
    line=$(grep -m1 "enforcement disabled" "$LOG") && break
    kill -0 "$DAEMON" 2>/dev/null || break
    sleep 0.1
  done
  [[ -n $line ]] || { tail -20 "$LOG"; fail "no 'enforcement disabled' within 10 s without CAP_$missing"; }
  [[ $line == *"CAP_$missing ("* ]] || fail "without CAP_$missing, the reason does not name it: $line"
  grep -q "enforcement started" "$LOG" && fail "enforcement started without CAP_$missing"
  [[ -n $(ls -A "$PIN_DIR" 2>/dev/null) ]] && fail "something was pinned without CAP_$missing: $(ls "$PIN_DIR")"
  echo "  ${line#*level=error }" | cut -c1-200
  kill -TERM "$DAEMON"; wait "$DAEMON" 2>/dev/null; DAEMON=
done
echo "PASS: netqosd enforces with the manifest's ${CAPS[*]} alone and names each one it misses"
