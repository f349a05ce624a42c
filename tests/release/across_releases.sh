#!/usr/bin/env bash
# Rollback and upgrade against a real earlier release: builds netqosd of REF (a tag, by default
# the newest release tag before HEAD) in a git worktree of its own, then hands one node's state
# back and forth between that netqosd and this build's, the way `kubectl rollout undo` and the
# following upgrade do, each time after a kill -9 (journal segments left as a crash leaves them):
#   this build writes -> REF takes over -> this build takes over again -> this build's --uninstall;
#   then this build writes -> REF takes over -> REF's --uninstall (a rollback, then the removal
#   with the release rolled back to: it must leave nothing pinned, not even what it does not know).
# At each hand-over the netqosd that starts must either adopt what it finds (the same
# allocations, one copy of each cgroup program, at most one HTB root on the NIC) or refuse to start,
# naming the release that wrote the state and the way back, and change nothing. Anything else
# (a start that drops allocations, a second attach, a crash) fails.
#
#   tests/release/across_releases.sh BUILD_DIR [REF]
#     BUILD_DIR  this build (bin/netqosd, bin/netqosctl)
#     REF        what to build the earlier netqosd from (default: newest v* tag before HEAD)
#   NETQOS_RELEASE_CACHE  where each earlier netqosd is kept, by commit (default
#                         ~/.cache/netqos/releases): built once, not at every run
# Root: a private bpffs, a veth pair, the cgroup v2 root's program list. Everything it makes goes
# on exit. Run by `scripts/test.sh --stages=releases` (not a default stage: it builds netqosd a
# second time, about 10 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/../.."

BUILD_DIR=$(realpath "${1:?usage: across_releases.sh BUILD_DIR [REF]}")
REF=${2:-}
if [[ -z $REF ]]; then
  REF=$(git describe --tags --abbrev=0 --match 'v[0-9]*' HEAD^ 2>/dev/null) ||
    { echo "FAIL: no release tag (v*) before HEAD; give the earlier release as REF" >&2; exit 1; }
fi
NEW_D=$BUILD_DIR/bin/netqosd
NETQOSCTL=$BUILD_DIR/bin/netqosctl
[[ -x $NEW_D && -x $NETQOSCTL ]] || { echo "FAIL: build netqosd and netqosctl in $BUILD_DIR first" >&2; exit 1; }
((EUID == 0)) || { echo "FAIL: root needed (bpffs, veth, cgroup programs)" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/netqos-releases.XXXXXX")
TAG=nqr$$
NIC=${TAG}a
PIN_DIR=$WORK/bpf/netqos
SOCK_DIR=$WORK/sock
SOCK=$SOCK_DIR/qrm_network_plugin_static.sock
STATE=$WORK/state
LOG=$WORK/netqosd.log
DAEMON=
cleanup() {
  set +e  # every step, whatever the one before it returned
  [[ -n $DAEMON ]] && kill -KILL "$DAEMON" 2>/dev/null && wait "$DAEMON" 2>/dev/null
  # Whatever a failed step left attached or pinned goes with this build's --uninstall.
  [[ -d $PIN_DIR ]] && "$NEW_D" --uninstall --bpf-pin-dir="$PIN_DIR" --qrm-state-dir="$STATE" \
    --enforce-nics="$NIC" >>"$LOG" 2>&1
  ip link del "$NIC" 2>/dev/null
  mountpoint -q "$WORK/bpf" && umount "$WORK/bpf"
  git worktree remove --force "$WORK/src" 2>/dev/null
  rm -rf "$WORK"
  return 0
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; echo "--- netqosd log (last 30 lines) ---" >&2; tail -n 30 "$LOG" >&2; exit 1; }
ctl() { "$NETQOSCTL" --socket "$SOCK" "$@"; }

# The earlier netqosd is built once per commit and kept (NETQOS_RELEASE_CACHE).
COMMIT=$(git rev-parse "$REF^{commit}")
CACHE=${NETQOS_RELEASE_CACHE:-$HOME/.cache/netqos/releases}/$COMMIT
OLD_D=$CACHE/netqosd
if [[ ! -x $OLD_D ]]; then
  echo "== building netqosd of $REF (${COMMIT:0:12}) in a worktree"
  git worktree add --detach "$WORK/src" "$COMMIT" >/dev/null
  cmake -S "$WORK/src" -B "$WORK/build-old" -G Ninja -DNETQOS_BUILD_TESTS=OFF \
    -DNETQOS_BUILD_BENCH=OFF -DNETQOS_WERROR=OFF '-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g0 -DNDEBUG' \
    >"$WORK/build-old.log" 2>&1 || { tail -n 30 "$WORK/build-old.log"; echo "FAIL: configure $REF" >&2; exit 1; }
  ninja -C "$WORK/build-old" -j "${NETQOS_JOBS:-$(nproc)}" netqosd >>"$WORK/build-old.log" 2>&1 ||
    { tail -n 30 "$WORK/build-old.log"; echo "FAIL: build netqosd of $REF" >&2; exit 1; }
  mkdir -p "$CACHE"
  cp "$WORK/build-old/bin/netqosd" "$OLD_D.tmp" && mv "$OLD_D.tmp" "$OLD_D"
else
  echo "== netqosd of $REF (${COMMIT:0:12}) from $CACHE"
fi
echo "  earlier: $("$OLD_D" --version | head -n 1)"
echo "  this:    $("$NEW_D" --version | head -n 1)"

ip link add "$NIC" type veth peer name "${TAG}b"
# A NIC netqosd manages has an address (one of the benchmarking range, on this veth only).
ip addr add "198.18.$((RANDOM % 250)).1/30" dev "$NIC"
ip link set "$NIC" up
ip link set "${TAG}b" up
mkdir -p "$WORK/bpf" "$SOCK_DIR" "$STATE"
mount -t bpf bpf "$WORK/bpf"
echo '{"items":[]}' >"$WORK/pods.json"
CGROOT=$("$NETQOSCTL" cgroup-mount)

# start BINARY: netqosd enforcing the veth; 0 once it serves, 1 if it exited (its log says why).
start() {
  local deny='' l
  for l in /sys/class/net/*; do [[ ${l##*/} == "$NIC" ]] || deny+=${deny:+,}${l##*/}; done
  : >"$LOG"
  "$1" --enforcement=bpf --nic-allow="$NIC" --nic-deny="$deny" --nic-speed-override="$NIC=1000" \
    --enforce-nics="$NIC" --shaping-mode=htb --pod-source=kubelet \
    --kubelet-pods-url="file://$WORK/pods.json" --bpf-pin-dir="$PIN_DIR" \
    --qrm-socket-dirs="$SOCK_DIR" --qrm-state-dir="$STATE" --enforcement-resync-period=2 \
    >>"$LOG" 2>&1 &
  DAEMON=$!
  for _ in $(seq 300); do
    ctl plugin-info >/dev/null 2>&1 && return 0
    kill -0 "$DAEMON" 2>/dev/null || { wait "$DAEMON" 2>/dev/null; DAEMON=; return 1; }
    sleep 0.1
  done
  fail "netqosd did not serve within 30 s"
}
crash() { kill -KILL "$DAEMON"; wait "$DAEMON" 2>/dev/null || true; DAEMON=; }
allocations() { ctl --json allocations | python3 -c 'import json, sys
d = json.load(sys.stdin)
rows = d if isinstance(d, list) else next(v for v in d.values() if isinstance(v, list))
print(json.dumps(sorted(rows, key=lambda r: json.dumps(r, sort_keys=True)), sort_keys=True))'; }
allocate() {
  ctl allocate --pod-uid "$1" --pod-namespace rel --pod-name "$1" --container app \
    --qos shared_cores --mbps "$2" >/dev/null || fail "Allocate $1"
}
# The cgroup programs on the cgroup v2 root named netqos_*, one line each.
programs() { bpftool cgroup show "$CGROOT" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^netqos_/) print $i }' | sort; }
htb_roots() { tc qdisc show dev "$NIC" | grep -c '^qdisc htb .* root' || true; }
snapshot() { (cd "$STATE" && find . -type f -print0 | sort -z | xargs -0 sha256sum); ls "$PIN_DIR"; }

# handover FROM TO: the state FROM left after a kill -9, taken over by TO.
handover() {
  local want_alloc want_progs before from=$REF to="this build"
  [[ $1 == NEW_D ]] && from="this build" to=$REF
  want_alloc=$(allocations) || fail "allocations under $from"
  want_progs=$(programs)
  crash
  before=$(snapshot)
  echo "== $to starts on what $from left after kill -9"
  if ! start "${!2}"; then
    if ! grep -q -- '--uninstall' "$LOG" || ! grep -qi 'written by netqosd' "$LOG"; then
      fail "$to exited without the rollback guard's message"
    fi
    [[ $(snapshot) == "$before" ]] || fail "$to refused, but changed the state or the pins"
    echo "  refused, naming the release and the way back; nothing changed:"
    grep -i 'written by netqosd' "$LOG" | head -n 2 | sed 's/^/    /'
    return 1
  fi
  sleep 3  # a resync or two: a duplicate attach or tree would be there by now
  [[ $(allocations) == "$want_alloc" ]] || fail "$to does not hold what $from allocated"
  [[ $(programs) == "$want_progs" ]] ||
    fail "cgroup programs changed: $(programs | tr '\n' ' ') (were $(tr '\n' ' ' <<<"$want_progs"))"
  # One HTB root at most, never a second tree. The releases differ on an idle NIC: v0.1.0 puts
  # its root on every enforced NIC; this build leaves (or gives back) the NIC's own root while
  # nothing there is capped, as here (the kubelet lists none of the allocated pods).
  local want_roots=0
  [[ $1 == NEW_D ]] && want_roots=1
  [[ $(htb_roots) == "$want_roots" ]] ||
    fail "$(htb_roots) HTB roots on $NIC under $to (want $want_roots)"
  echo "  adopted: $(wc -l <<<"$want_progs") cgroup programs, $want_roots HTB root(s), the same allocations"
  return 0
}

echo "== this build allocates two containers"
start "$NEW_D" || fail "this build's netqosd did not start"
allocate pod-a 100
allocate pod-b 200
[[ $(programs | wc -l) -ge 2 ]] || fail "no netqos programs on $CGROOT"
if handover NEW_D OLD_D; then
  allocate pod-c 50  # written by the earlier release
  handover OLD_D NEW_D || fail "this build refused what $REF wrote"
else
  start "$NEW_D" || fail "this build did not start again after $REF refused"
fi
echo "== this build's --uninstall"
crash
"$NEW_D" --uninstall --bpf-pin-dir="$PIN_DIR" --qrm-state-dir="$STATE" --enforce-nics="$NIC" \
  >>"$LOG" 2>&1 || fail "--uninstall"
[[ -e $PIN_DIR ]] && fail "pins left: $(ls "$PIN_DIR")"
[[ -n $(programs) ]] && fail "programs left on $CGROOT: $(programs | tr '\n' ' ')"
[[ $(htb_roots) == 0 ]] || fail "an HTB root left on $NIC"

echo "== this build allocates again, $REF takes over and uninstalls"
start "$NEW_D" || fail "this build did not start after its --uninstall"
allocate pod-d 100
if handover NEW_D OLD_D; then
  crash
  "$OLD_D" --uninstall --bpf-pin-dir="$PIN_DIR" --qrm-state-dir="$STATE" --enforce-nics="$NIC" \
    >>"$LOG" 2>&1 || fail "$REF's --uninstall of what this build left"
  [[ -e $PIN_DIR ]] && fail "$REF's --uninstall left pins: $(ls "$PIN_DIR")"
  [[ -n $(programs) ]] && fail "$REF's --uninstall left programs on $CGROOT: $(programs | tr '\n' ' ')"
  [[ $(htb_roots) == 0 ]] || fail "$REF's --uninstall left an HTB root on $NIC"
  echo "  $REF's --uninstall removed everything, the pin directory too"
fi
echo "PASS: state handed from this build to $REF and back after kill -9, never duplicated"
