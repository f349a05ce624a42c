# shellcheck shell=bash
# The demo's lab, sourced by scripts/demo-run.sh and tests/monitoring/prometheus_live_test.sh:
# two "NICs" built from veth pairs, the container cgroups, a private bpffs, and the teardown that
# removes all of it (and proves it did).
#
#   host netns:  NIC A  $NIC_A 10.252.1.1  <->  $NS_RA/$NIC_A_PEER 10.252.1.2   (the remote of A)
#   $NS_B:       NIC B  $NIC_B 10.252.2.1  <->  $NS_RB/$NIC_B_PEER 10.252.2.2   (the remote of B)
#
# NIC B lives in a namespace of its own, as in Katalyst's multi-namespace mode: netqosd finds it
# through --machine-net-ns-dir=$NS_DIR, a private directory holding a bind mount of $NS_B only
# (the remotes, and whatever else is under /var/run/netns, stay invisible to the daemon).
# Expects: TAG, WORK, NETQOSCTL (built) and fail() from the caller. netqosd's socket, state and
# log go under WORK too.

SOCK_DIR=$WORK/plugins_registry
STATE_DIR=$WORK/qrm_advisor
SOCK=$SOCK_DIR/qrm_network_plugin_static.sock
LOG=$WORK/netqosd.log
NS_RA=${TAG}-ra NS_B=${TAG}-b NS_RB=${TAG}-rb
NIC_A=${TAG}a NIC_A_PEER=${TAG}ar NIC_B=${TAG}b NIC_B_PEER=${TAG}br
IP_A=10.252.1.1 REMOTE_A=10.252.1.2 IP_B=10.252.2.1 REMOTE_B=10.252.2.2
NS_DIR=$WORK/netns
BPF_MNT=$WORK/bpf
PIN_DIR=$BPF_MNT/netqos
CGROOT=$("$NETQOSCTL" cgroup-mount) || fail "no cgroup2 mount"
CG_ROOT_NAME=netqos-demo-$TAG      # an extra kubepods root (--addition-cgroup-paths)
DEMO_CG=$CGROOT/$CG_ROOT_NAME
PIDS=()                            # every process the demo starts, killed by id on exit
IFB_A=

lab_up() {
  ip netns add "$NS_RA"
  ip netns add "$NS_B"
  ip netns add "$NS_RB"
  ip link add "$NIC_A" type veth peer name "$NIC_A_PEER" netns "$NS_RA"
  ip addr add "$IP_A/24" dev "$NIC_A"
  ip link set "$NIC_A" up
  IFB_A=nqifb$(<"/sys/class/net/$NIC_A/ifindex")  # netqos's IFB for NIC A's ingress
  ip -n "$NS_RA" addr add "$REMOTE_A/24" dev "$NIC_A_PEER"
  ip -n "$NS_RA" link set "$NIC_A_PEER" up
  ip -n "$NS_B" link add "$NIC_B" type veth peer name "$NIC_B_PEER" netns "$NS_RB"
  ip -n "$NS_B" addr add "$IP_B/24" dev "$NIC_B"
  ip -n "$NS_B" link set "$NIC_B" up
  ip -n "$NS_RB" addr add "$REMOTE_B/24" dev "$NIC_B_PEER"
  ip -n "$NS_RB" link set "$NIC_B_PEER" up
  for ns in "$NS_RA" "$NS_B" "$NS_RB"; do ip -n "$ns" link set lo up; done
  mkdir -p "$NS_DIR" && touch "$NS_DIR/$NS_B"
  mount --bind "/var/run/netns/$NS_B" "$NS_DIR/$NS_B"
  mkdir -p "$BPF_MNT" && mount -t bpf bpf "$BPF_MNT"
  mkdir -p "$DEMO_CG"
}

# Kills every process of a cgroup tree, then removes it, deepest first.
kill_cgroup() {
  local dir=$1
  [[ -d $dir ]] || return 0
  # shellcheck disable=SC2038  # xargs reads pids (cgroup.procs contents), not file names
  find "$dir" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -KILL 2>/dev/null
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null
    [[ -d $dir ]] || return 0
    sleep 0.1
  done
}

# Best effort, every step independent: runs on success, failure and Ctrl-C alike.
lab_down() {
  set +e
  [[ -n ${DAEMON_PID:-} ]] && kill -KILL "$DAEMON_PID" 2>/dev/null
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  if [[ -d $PIN_DIR || -e $STATE_DIR/netqos-enforced-links.json ]]; then
    "$NETQOSD" --uninstall --bpf-pin-dir="$PIN_DIR" --qrm-state-dir="$STATE_DIR" \
      --enforce-nics="$NIC_A,$NS_B/$NIC_B" >/dev/null 2>&1
  fi
  kill_cgroup "$DEMO_CG"
  for ns in "$NS_RA" "$NS_B" "$NS_RB"; do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
  done
  mountpoint -q "$NS_DIR/$NS_B" 2>/dev/null && umount "$NS_DIR/$NS_B"
  for ns in "$NS_RA" "$NS_B" "$NS_RB"; do ip netns del "$ns" 2>/dev/null; done
  ip link del "$NIC_A" 2>/dev/null
  mountpoint -q "$BPF_MNT" 2>/dev/null && umount "$BPF_MNT"
  rm -rf "$WORK"
  set -e
}

# What the teardown missed, one line each; nothing when the machine is as it was.
lab_leftovers() {
  local ns p procs=
  for ns in "$NS_RA" "$NS_B" "$NS_RB"; do
    [[ -e /var/run/netns/$ns ]] && echo "namespace left: $ns"
  done
  [[ -e /sys/class/net/$NIC_A ]] && echo "link left: $NIC_A"
  [[ -n ${IFB_A:-} && -e /sys/class/net/$IFB_A ]] && echo "IFB left: $IFB_A"
  [[ -d $DEMO_CG ]] && echo "cgroup left: $DEMO_CG"
  [[ -e $WORK ]] && echo "work dir left: $WORK"
  p=$(awk -v w="$WORK" 'index($2, w) == 1 { printf " %s", $2 }' /proc/self/mounts)
  [[ -n $p ]] && echo "mounts left:$p"
  for p in ${DAEMON_PID:-} "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && procs+=" $p"; done
  [[ -n $procs ]] && echo "processes left:$procs"
  return 0
}

# lab_down, then the proof: says what was left behind and fails if anything was.
lab_down_checked() {
  local left
  lab_down
  left=$(lab_leftovers)
  [[ -z $left ]] && return 0
  echo "FAIL: cleanup left objects behind:" >&2
  echo "$left" >&2
  return 1
}
