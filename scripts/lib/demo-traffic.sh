# shellcheck shell=bash
# The demo's traffic and measurements, sourced by scripts/demo-run.sh. Containers are indexed
# 0..N-1 in the C_* arrays the caller fills: C_LABEL (pod/container), C_QOS, C_MBPS (allocated),
# C_EXPECT (what its leaf holds it to), C_BORROWS (1: at least C_EXPECT), C_CAP (text),
# C_CG (cgroup dir), C_NIC (NIC name), C_NETNS (its namespace name, "" = host), C_NETNS_PATH
# (what the allocation's netns_path annotation says), C_REMOTE (where to send), C_PORT.
# Rates are measured on the wire: bytes sent by the container's HTB leaf on its NIC.
# Expects: fail(), PIN_DIR, PIDS from the caller.

TOLERANCE_MBPS=2

# tc in a NIC's namespace ("" = host).
tc_in() {
  local ns=$1; shift
  if [[ -z $ns ]]; then tc "$@"; else tc -n "$ns" "$@"; fi
}

# skb->priority the class map holds for a cgroup (an HTB class handle); empty when none.
priority_of() {
  local dump
  dump=$(bpftool map dump pinned "$PIN_DIR/netqos_cls_v1")
  { grep -A3 "\"key\": $(stat -c %i "$1")," <<<"$dump" || true; } |
    sed -n 's/.*"priority": \([0-9]*\).*/\1/p'
}
leaf_of_priority() { printf '10:%x' $(($1 & 0xffff)); }

# "bytes drops" of container i's leaf.
leaf_stat() {
  local out
  out=$(tc_in "${C_NETNS[$1]}" -s class show dev "${C_NIC[$1]}" classid "${C_LEAF[$1]}")
  [[ -n $out ]] || fail "no HTB leaf ${C_LEAF[$1]} on ${C_NIC[$1]} for ${C_LABEL[$1]}"
  sed -n 's/.*Sent \([0-9]*\) bytes.*dropped \([0-9]*\).*/\1 \2/p' <<<"$out"
}

# One iperf3 server per container, in the remote namespace of its NIC.
servers_start() {
  local i remote_ns
  for i in "${!C_LABEL[@]}"; do
    remote_ns=$NS_RA
    [[ -n ${C_NETNS[$i]} ]] && remote_ns=$NS_RB
    nsenter --net="/var/run/netns/$remote_ns" iperf3 -s -B "${C_REMOTE[$i]}" -p "${C_PORT[$i]}" \
      >/dev/null 2>&1 &
    PIDS+=($!)
  done
  # Each server listens before a client connects: on a slow machine (the kernel lab's TCG
  # guests) starting iperf3 takes seconds, not the 0.3 s that used to be waited here.
  for i in "${!C_LABEL[@]}"; do
    remote_ns=$NS_RA
    [[ -n ${C_NETNS[$i]} ]] && remote_ns=$NS_RB
    for _ in $(seq 150); do
      [[ -n $(ss -N "$remote_ns" -Hltn "src ${C_REMOTE[$i]}:${C_PORT[$i]}" 2>/dev/null) ]] && continue 2
      sleep 0.1
    done
    fail "iperf3 server for ${C_LABEL[$i]} not listening on ${C_REMOTE[$i]}:${C_PORT[$i]} after 15 s"
  done
}

# Bulk TCP from inside each container's cgroup, for at most $1 seconds: the shell joins the
# cgroup, enters the allocated NIC's namespace when it is not the host's (what a runtime does with
# the allocation's netns_path), then becomes iperf3.
FLOW_PIDS=()
flows_start() {
  local i enter
  FLOW_PIDS=()
  for i in "${!C_LABEL[@]}"; do
    enter=
    [[ -n ${C_NETNS[$i]} ]] && enter="nsenter --net=${C_NETNS_PATH[$i]}"
    sh -c "echo \$\$ > ${C_CG[$i]}/cgroup.procs && exec $enter iperf3 -c ${C_REMOTE[$i]} \
      -p ${C_PORT[$i]} -t $1" >/dev/null 2>&1 &
    FLOW_PIDS+=($!)
    PIDS+=($!)
  done
}
flows_stop() {
  local p
  for p in "${FLOW_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${FLOW_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  FLOW_PIDS=()
}

# Wire rate of every leaf over a window of $1 seconds, in Mbit/s (C_RATE), and its drop counter
# (C_DROPS). Each leaf has its own timestamps, so the time tc takes does not skew the rates.
C_RATE=() C_DROPS=()
measure() {
  local i b0=() t0=() stat b1 t1
  for i in "${!C_LABEL[@]}"; do
    stat=$(leaf_stat "$i"); b0[i]=${stat% *}; t0[i]=$(date +%s.%N)
  done
  sleep "$1"
  for i in "${!C_LABEL[@]}"; do
    stat=$(leaf_stat "$i"); b1=${stat% *}; t1=$(date +%s.%N)
    C_DROPS[i]=${stat#* }
    C_RATE[i]=$(awk -v d=$((b1 - b0[i])) -v t0="${t0[$i]}" -v t1="$t1" \
      'BEGIN { printf "%.1f", d * 8 / (t1 - t0) / 1e6 }')
  done
}

# -1 below the allocation's tolerance band, 0 within, 1 above.
band() {
  awk -v r="$1" -v c="$2" -v t="$TOLERANCE_MBPS" \
    'BEGIN { print (r < c - t) ? -1 : (r > c + t) ? 1 : 0 }'
}

# Every container within +-TOLERANCE_MBPS of its cap (a borrowing one: at least its allocation).
# A rate above it fails at once: the cap did not hold. A rate below it means the sender did not
# keep its queue full (this 2-core machine was busy), so the window is measured again, at most
# twice more.
check_rates() {
  local label=$1 attempt i b below
  for attempt in 1 2 3; do
    measure 3
    below=
    for i in "${!C_LABEL[@]}"; do
      b=$(band "${C_RATE[$i]}" "${C_EXPECT[$i]}")
      ((C_BORROWS[i] && b > 0)) && b=0
      ((b > 0)) && fail "${C_LABEL[$i]}$label: ${C_RATE[$i]} Mbit/s on the wire, above its" \
        "cap of ${C_EXPECT[$i]} (+-$TOLERANCE_MBPS)"
      ((b < 0)) && below+=" ${C_LABEL[$i]}=${C_RATE[$i]}"
    done
    [[ -z $below ]] && return 0
    ((attempt < 3)) && echo "below the allocation:$below Mbit/s (senders starved of CPU); measuring again"
  done
  fail "below the cap (+-$TOLERANCE_MBPS) after 3 windows:$below Mbit/s"
}

# The DSCP each container's packets leave with: what its class-map entry tells the NIC program to
# write (NETQOS_CLASS_F_SET_DSCP), read from the pinned map (the daemon may be down); "-" when
# unmarked.
C_DSCP=()
read_dscp() {
  local i dump
  dump=$(bpftool -j map dump pinned "$PIN_DIR/netqos_cls_v1")
  for i in "${!C_LABEL[@]}"; do
    C_DSCP[i]=$(python3 -c '
import json, sys
for e in json.load(sys.stdin):
    f = e.get("formatted", e)
    if f["key"] == int(sys.argv[1]):
        v = f["value"]
        print(v["dscp"] if v["flags"] & 2 else "-")
        break
else:
    print("?")
' "$(stat -c %i "${C_CG[$i]}")" <<<"$dump")
  done
}

# The table: one row per container, both NICs together.
print_table() {
  local i nic
  read_dscp
  printf '%-13s %-16s %-21s %-6s %-16s %9s %5s %6s\n' CONTAINER QOS NIC LEAF CAP-Mbps \
    WIRE-Mbps DSCP DROPS
  for i in "${!C_LABEL[@]}"; do
    nic=${C_NIC[$i]}
    [[ -n ${C_NETNS[$i]} ]] && nic=${C_NETNS[$i]}-$nic  # netqos's (Katalyst's) NIC identifier
    printf '%-13s %-16s %-21s %-6s %-16s %9s %5s %6s\n' "${C_LABEL[$i]}" "${C_QOS[$i]}" "$nic" \
      "${C_LEAF[$i]}" "${C_CAP[$i]}" "${C_RATE[$i]}" "${C_DSCP[$i]}" "${C_DROPS[$i]}"
  done
}

# Each container's rate over time, for the demo's plot (scripts/lib/plot_rates.py): netqosctl
# top's frames every 0.5 s, read from the pinned counters, so they go on while netqosd is down;
# and the moments to mark on it. Expects: NETQOSCTL, SOCK, WORK from the caller.
RATES_PID=
rates_record_start() {
  : >"$WORK/events.tsv"
  "$NETQOSCTL" --socket "$SOCK" --json top --interval 0.5 --no-clear --bpf-pin-dir "$PIN_DIR" \
    >"$WORK/top.jsonl" 2>"$WORK/top.err" &
  RATES_PID=$!
  PIDS+=($!)
}
rates_mark() { printf '%s\t%s\n' "$(date +%s.%N)" "$1" >>"$WORK/events.tsv"; }
# Stops the recording and draws every container's send rate against its cap into $1, a PNG
# rendered by rsvg-convert from the SVG that plot_rates.py writes beside it (same name, .svg).
rates_plot() {
  local i cap svg="${1%.png}.svg"
  kill -TERM "$RATES_PID" 2>/dev/null || true
  wait "$RATES_PID" 2>/dev/null || true
  RATES_PID=
  for i in "${!C_LABEL[@]}"; do
    cap="${C_EXPECT[$i]} Mbit/s"
    ((C_MBPS[i] == 0)) && cap+=" (annotation)"
    printf '%s\t%s\t%s\t%s\t%s\n' "${C_LABEL[$i]}" "$(stat -c %i "${C_CG[$i]}")" \
      "${C_EXPECT[$i]}" "${C_BORROWS[$i]}" "$cap"
  done >"$WORK/containers.tsv"
  python3 scripts/lib/plot_rates.py --frames "$WORK/top.jsonl" --containers "$WORK/containers.tsv" \
    --events "$WORK/events.tsv" --out "$svg" ||
    fail "no plot of the rates (netqosctl top: $(head -c 300 "$WORK/top.err"))"
  command -v rsvg-convert >/dev/null ||
    fail "rsvg-convert not found (Debian package librsvg2-bin): the plot is left as $svg"
  rsvg-convert "$svg" -o "$1" || fail "rsvg-convert could not render $svg"
}
