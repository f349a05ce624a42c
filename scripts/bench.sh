#!/usr/bin/env bash
# Builds the benchmarks (Release, in their own build dir), runs them all and writes
# docs/benchmarks.md: every figure with the baseline measured in the same run, the ratios, the
# issue's targets marked met or not met, the machine, the date and the commit.
#
# Usage: scripts/bench.sh [--quick] [--only NAME[,NAME...]] [--out FILE] [--note TEXT]
#                         [--build-dir DIR] [--no-build]
#   --quick      small sizes and short windows (a smoke check, about a minute); the report goes to
#                <build dir>/benchmarks-quick.md unless --out is given
#   --only       control_plane, datapath, enforcement, reaction, lab (default: all five; lab runs
#                bench/lab/edt_vs_htb.sh in the kernel lab: EDT next to HTB on a 4-queue NIC)
#   --note       a sentence for the report's header (e.g. what else ran on the machine)
#   BENCH_JOBS   ninja -j for the build (default: nproc)
#   NETQOS_BENCH_LAB_KERNEL  the lab part's kernel series (default 6.1; see scripts/kernel-lab.sh)
#
# Root is needed for everything but the control plane (BPF, network namespaces, cgroups); without
# it those parts are reported as not run. Every namespace, veth, cgroup, bpffs mount, pinned
# object and process a benchmark creates is removed when it ends, and swept again here on exit
# (also after Ctrl-C or a crash).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

QUICK=0
ONLY=control_plane,datapath,enforcement,reaction,lab
OUT=
NOTE=
BUILD_DIR=build-bench
BUILD=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) QUICK=1 ;;
    --only) ONLY=$2; shift ;;
    --only=*) ONLY=${1#--only=} ;;
    --out) OUT=$2; shift ;;
    --out=*) OUT=${1#--out=} ;;
    --note) NOTE=$2; shift ;;
    --note=*) NOTE=${1#--note=} ;;
    --build-dir) BUILD_DIR=$2; shift ;;
    --build-dir=*) BUILD_DIR=${1#--build-dir=} ;;
    --no-build) BUILD=0 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
if [[ -z $OUT ]]; then
  if [[ $QUICK == 1 ]]; then OUT=$BUILD_DIR/benchmarks-quick.md; else OUT=$ROOT/docs/benchmarks.md; fi
fi
IFS=, read -r -a BENCHES <<<"$ONLY"
for b in "${BENCHES[@]}"; do
  case $b in control_plane|datapath|enforcement|reaction|lab) ;; *) echo "unknown benchmark $b" >&2; exit 2 ;; esac
done

if [[ $BUILD == 1 ]]; then
  echo "== build ($BUILD_DIR, Release)"
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNETQOS_BUILD_BENCH=ON \
    >/dev/null
  targets=(netqosd netqosctl)
  for b in "${BENCHES[@]}"; do [[ $b == lab ]] || targets+=("netqos_bench_$b"); done
  ninja -C "$BUILD_DIR" -j "${BENCH_JOBS:-$(nproc)}" "${targets[@]}"
fi
NETQOSD=$BUILD_DIR/bin/netqosd

# --- everything the benchmarks create carries TAG or lives under WORK; swept on exit ---------
TAG=nqb$(( $$ % 1000 ))
WORK=$(mktemp -d /tmp/netqos-bench.XXXXXX)
OUT_DIR=$WORK/out
mkdir -p "$OUT_DIR"
CGROOT=$("$BUILD_DIR/bin/netqosctl" cgroup-mount 2>/dev/null || true)
kill_cgroup_tree() {  # every process of a cgroup tree, then the tree itself, deepest first
  local dir=$1
  [[ -d $dir ]] || return 0
  [[ -e $dir/cgroup.kill ]] && echo 1 >"$dir/cgroup.kill" 2>/dev/null
  find "$dir" -name cgroup.procs -exec cat {} + 2>/dev/null |
    while read -r pid; do kill -KILL "$pid" 2>/dev/null; done
  sleep 0.2
  find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null
  return 0
}
sweep() {
  set +e
  # netqosd (and anything else) started with a path under WORK
  for p in /proc/[0-9]*; do
    cmd=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline")
    [[ $cmd == *"$WORK/"* ]] && kill -KILL "${p#/proc/}" 2>/dev/null
  done
  # what each enforcing daemon installed (HTB, IFB, ingress filter, pins); --uninstall also puts
  # back the ip_forward_update_priority value that daemon found (a global sysctl: other tools
  # may change it meanwhile, so it is never restored from a value read here)
  for env_dir in "$WORK"/*-env.*; do
    [[ -d $env_dir/state ]] || continue
    "$NETQOSD" --uninstall --bpf-pin-dir="$env_dir/bpf/netqos" --qrm-state-dir="$env_dir/state" \
      >/dev/null 2>&1
  done
  awk -v w="$WORK/" 'index($2, w) == 1 { print $2 }' /proc/self/mounts | sort -r |
    while read -r m; do umount -l "$m"; done
  for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }'); do
    if [[ $ns == "$TAG"* ]]; then
      ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
      ip netns del "$ns"
    fi
  done
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{ print $2 }' | cut -d@ -f1); do
    [[ $link == "$TAG"* ]] && ip link del "$link" 2>/dev/null
  done
  if [[ -n $CGROOT ]]; then
    for cg in "$CGROOT/$TAG"*; do [[ -d $cg ]] && kill_cgroup_tree "$cg"; done
  fi
  rm -rf /dev/shm/"$TAG"-* "$WORK"
}
trap sweep EXIT
trap 'exit 130' INT TERM

# --- run ---------------------------------------------------------------------------------------
# The lab part runs in a qemu guest whose writes stay in the guest: its report comes back on
# stdout as "LABMD: " (the section) and "LABTARGET: " (summary rows) lines.
run_lab() {
  ((EUID == 0)) || return 77
  local quick=() rc
  [[ $QUICK == 1 ]] && quick=(--quick)
  scripts/kernel-lab.sh --kernel "${NETQOS_BENCH_LAB_KERNEL:-6.1}" --cpus 2 --mem 3G --timeout 2400 \
    -- bench/lab/edt_vs_htb.sh "${quick[@]}" "$BUILD_DIR" | tee "$OUT_DIR/lab.raw"
  rc=${PIPESTATUS[0]}
  sed -n 's/^LABMD: \{0,1\}//p' "$OUT_DIR/lab.raw" >"$OUT_DIR/lab.md"
  sed -n 's/^LABTARGET: //p' "$OUT_DIR/lab.raw" >"$OUT_DIR/lab.targets.md"
  return "$rc"
}
declare -A STATUS SECONDS_TAKEN
START=$(date +%s)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
FAILED=0
for b in "${BENCHES[@]}"; do
  echo
  echo "== $b"
  args=(--out-dir="$OUT_DIR" --work-dir="$WORK" --tag="$TAG")
  [[ $QUICK == 1 ]] && args+=(--quick)
  t0=$(date +%s)
  set +e
  if [[ $b == lab ]]; then
    run_lab > >(tee "$OUT_DIR/$b.log") 2>&1
  else
    "$BUILD_DIR/bin/netqos_bench_$b" "${args[@]}" > >(tee "$OUT_DIR/$b.log") 2>&1
  fi
  rc=$?
  set -e
  SECONDS_TAKEN[$b]=$(( $(date +%s) - t0 ))
  case ${rc:-0} in
    0) STATUS[$b]=ok ;;
    77) STATUS[$b]="not run: needs root" ;;
    130) STATUS[$b]="interrupted"; exit 130 ;;
    *) STATUS[$b]="FAILED (exit $rc, see the log below)"; FAILED=1 ;;
  esac
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
TOTAL=$(( $(date +%s) - START ))

# --- the report ----------------------------------------------------------------------------------
commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n $(git -C "$ROOT" status --porcelain 2>/dev/null) ]]; then
  commit="$commit (with uncommitted changes)"
fi
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
mem=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
virt=$(systemd-detect-virt 2>/dev/null || true)
grep -qw hypervisor /proc/cpuinfo && virt="virtual machine${virt:+ (systemd-detect-virt: $virt)}"
rootfs=$(findmnt -n -o FSTYPE,SOURCE / 2>/dev/null | tr -s ' ' || echo unknown)
iperf=$(iperf3 --version 2>/dev/null | head -n 1 | cut -d' ' -f1-2 || echo "iperf3 missing")
mode="a full run"
[[ $QUICK == 1 ]] && mode="--quick: small sizes, short windows, not for citing"
rerun="scripts/bench.sh"
[[ $QUICK == 1 ]] && rerun="scripts/bench.sh --quick"

{
  echo "# Benchmarks"
  echo
  echo "Generated by \`scripts/bench.sh\` ($mode) on $(date -u '+%Y-%m-%d %H:%M UTC') at commit"
  echo "$commit, in $(( TOTAL / 60 )) min $(( TOTAL % 60 )) s. Every figure is printed next to a"
  echo "baseline measured in the same run, with the ratio; nothing here is asserted by the test suite."
  echo
  echo "**Machine.** $(nproc) CPUs ($cpu), $mem RAM, ${virt:-bare metal}, kernel $(uname -r),"
  echo "root filesystem $rootfs, $iperf. Load average before / after the run: $LOAD_BEFORE / $LOAD_AFTER."
  [[ -n $NOTE ]] && { echo; echo "**Note.** $NOTE"; }
  echo
  echo "**Rerun.** As root on a Debian 12 machine with the packages of \`scripts/install-deps.sh\`:"
  echo "\`$rerun\` (builds \`build-bench/\` in Release and rewrites this page; \`--quick\` is a"
  echo "one-minute smoke check that writes \`build-bench/benchmarks-quick.md\`; \`--only datapath\`"
  echo "runs one part). Each part is also a binary: \`build-bench/bin/netqos_bench_<part> [--quick]\`."
  echo
  echo "## Summary"
  echo
  echo "Targets, and the headline figure of each part that has none."
  echo
  echo "| target or figure | measured | verdict | note |"
  echo "|---|---|---|---|"
  for b in "${BENCHES[@]}"; do
    if [[ -s $OUT_DIR/$b.targets.md ]]; then
      cat "$OUT_DIR/$b.targets.md"
    elif [[ ${STATUS[$b]} != ok ]]; then
      echo "| $b | - | ${STATUS[$b]} | |"
    fi
  done
  echo
  for b in "${BENCHES[@]}"; do
    if [[ ${STATUS[$b]} == ok && -s $OUT_DIR/$b.md ]]; then
      cat "$OUT_DIR/$b.md"
      echo "_(${SECONDS_TAKEN[$b]} s)_"
      echo
    else
      echo "## $b: ${STATUS[$b]}"
      echo
      [[ -s $OUT_DIR/$b.md ]] && { cat "$OUT_DIR/$b.md"; echo; }
      echo '```'
      tail -n 30 "$OUT_DIR/$b.log" 2>/dev/null
      echo '```'
      echo
    fi
  done
} >"$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo
echo "== report written to $OUT"
exit $FAILED
