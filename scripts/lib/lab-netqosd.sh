# shellcheck shell=bash
# What the kernel lab's netqosd scripts share (tests/kernels/*_test.sh, bench/lab/*.sh), sourced
# after the caller set its globals: NETQOSD, NETQOSCTL, NIC, WORK, ROOT_NAME, PIN_DIR, SOCK_DIR,
# STATE, LOG, SOCK (and, for the rate checks, CAP, TOL, HTB_FLOOR, NO_TRAFFIC).
#   fail MESSAGE...            print "FAIL: ..." and exit 1
#   ctl ARGS...                netqosctl on the daemon's socket
#   log_tail                   the last 20 lines of the daemon's log, on stderr
#   lab_netqosd_start [FLAG...]  netqosd enforcing $NIC alone (speed $NIC_SPEED, default 1000
#                              Mbit/s), pods from $WORK/pods.json, containers under /$ROOT_NAME,
#                              a resync every 2 s, extra flags appended; sets DAEMON and returns
#                              once it serves (fails showing its log otherwise)
#   check_wire WHAT BOUND DEV SPEC WINDOWS  tests/kernels/tc_rate.py's rate of DEV's SPEC (e.g.
#                              "class 1:1,1:2") within $CAP: BOUND "exact" +-$TOL, "htb" -$HTB_FLOOR
#                              /+$TOL, "at-most" only the upper bound; a window provably above
#                              fails at once, one below or too uncertain is measured again, at
#                              most WINDOWS windows of 5 s; with NO_TRAFFIC nothing is measured

fail() { echo "FAIL: $*" >&2; exit 1; }
ctl() { "$NETQOSCTL" --socket "$SOCK" "$@"; }
log_tail() { echo "--- netqosd log (last 20 lines) ---" >&2; tail -n 20 "$LOG" >&2; }

lab_netqosd_start() {
  local deny='' l
  for l in /sys/class/net/*; do [[ ${l##*/} == "$NIC" ]] || deny+=${deny:+,}${l##*/}; done
  "$NETQOSD" --enforcement=bpf --nic-allow="$NIC" --nic-deny="$deny" \
    --nic-speed-override="$NIC=${NIC_SPEED:-1000}" --enforce-nics="$NIC" --pod-source=kubelet \
    --kubelet-pods-url="file://$WORK/pods.json" --addition-cgroup-paths="/$ROOT_NAME" \
    --bpf-pin-dir="$PIN_DIR" --qrm-socket-dirs="$SOCK_DIR" --qrm-state-dir="$STATE" \
    --enforcement-resync-period=2 "$@" >>"$LOG" 2>&1 &
  DAEMON=$!
  for _ in $(seq 300); do
    ctl plugin-info >/dev/null 2>&1 && return 0
    kill -0 "$DAEMON" 2>/dev/null || break
    sleep 0.1
  done
  log_tail
  fail "netqosd did not start"
}

check_wire() {
  local what=$1 bound=$2 dev=$3 spec=$4 windows=$5 out r e verdict attempt floor=$TOL range="+-2 %"
  if [[ $bound == htb ]]; then floor=$HTB_FLOOR range="-5/+2 %"; fi
  if [[ -n $NO_TRAFFIC ]]; then echo "  $what: $dev ${spec#class } not measured (LAB_NO_TRAFFIC)"; return 0; fi
  for ((attempt = 1; attempt <= windows; attempt++)); do
    out=$(python3 tests/kernels/tc_rate.py "$dev" "$spec" 5) || fail "$what: measuring $dev"
    read -r r e <<<"$out"
    verdict=$(awk -v r="$r" -v e="$e" -v c="$CAP" -v t="$TOL" -v f="$floor" -v b="$bound" 'BEGIN {
      lo = r * (1 - e / 100); hi = r * (1 + e / 100)
      if (lo > c * (1 + t)) { print "above"; exit }
      print (hi <= c * (1 + t) && (b == "at-most" || lo >= c * (1 - f))) ? "ok" : "again" }')
    echo "  $what: $dev ${spec#class } sent $r Mbit/s on the wire (+-$e % timing; cap $CAP $range; window $attempt)"
    case $verdict in
      ok) return 0 ;;
      above) fail "$what: $r Mbit/s is above the cap of $CAP Mbit/s + 2 %" ;;
    esac
  done
  fail "$what: $r Mbit/s (+-$e %) not shown within $CAP Mbit/s $range in $windows windows"
}
