#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang + ASan + UBSan) and runs each one for a bounded
# time, starting from the seed corpus in fuzz/corpus/<name>/ (which libFuzzer replays first, so
# every regression input in it is re-checked on each run).
#
#   scripts/fuzz.sh [--seconds N] [--runs N] [--max-len BYTES] [--no-build | --build-only] [NAME...]
#                   [-- LIBFUZZER-FLAG...]
#     --seconds N   run time per target (default 20: the CI budget; try 600 or more locally)
#     --runs N      executions per target instead (a campaign: --runs 10000000); with --seconds
#                   too, whichever ends first
#     --jobs J      J fuzzing processes per target sharing one corpus (default 1); with --runs
#                   the executions are split between them, so the total stays N
#     --max-len B   largest input libFuzzer makes (default 8192; a campaign wants more, e.g.
#                   1048576, to reach inputs such as deeply nested JSON)
#     --no-build    use the existing build
#     --build-only  build, do not run
#     NAME          annotations, checkpoint, resource_request, topology_file, tenant_policy,
#                   nri_wire (default: all)
#     -- FLAGS      passed to every target as they are, after fuzz.sh's own (a later flag wins),
#                   e.g. -- -len_control=0 so a campaign grows inputs to --max-len at once
#   FUZZ_BUILD_DIR  build directory (default: build-fuzz)
#
# Exits non-zero when a target crashes, leaks, trips a sanitizer or violates an invariant. The
# input that did it is kept in <build>/fuzz-crashes/<name>/ and the log in <build>/fuzz-logs/;
# once fixed, copy the input into fuzz/corpus/<name>/ as its regression test. Inputs found
# along the way accumulate in <build>/fuzz-corpus/<name>/ (not committed).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=20
seconds_given=0
runs=""
max_len=8192
jobs=1
build=1
run=1
names=()
extra=()
while (($#)); do
  case $1 in
    --seconds) seconds=$2; seconds_given=1; shift 2 ;;
    --seconds=*) seconds=${1#*=}; seconds_given=1; shift ;;
    --runs) runs=$2; shift 2 ;;
    --runs=*) runs=${1#*=}; shift ;;
    --jobs) jobs=$2; shift 2 ;;
    --jobs=*) jobs=${1#*=}; shift ;;
    --max-len) max_len=$2; shift 2 ;;
    --max-len=*) max_len=${1#*=}; shift ;;
    --no-build) build=0; shift ;;
    --build-only) run=0; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
  esac
done
for v in "$seconds" "${runs:-1}" "$max_len" "$jobs"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: '$v' is not a positive whole number" >&2; exit 2; }
done
# --runs alone: no time limit (libFuzzer's -max_total_time=0), only the execution count.
limits=(-max_total_time="$seconds")
if [[ -n $runs ]]; then
  budget="$runs runs"
  if ((seconds_given)); then budget+=" or ${seconds}s"; else limits=(-max_total_time=0); fi
  limits+=(-runs="$runs")
else
  budget="${seconds}s"
fi
all=(annotations checkpoint resource_request topology_file tenant_policy nri_wire)
((${#names[@]})) || names=("${all[@]}")
for f in "${extra[@]}"; do
  [[ $f == -[a-z]* ]] || { echo "fuzz.sh: '$f' after -- is not a libFuzzer flag (-name=value)" >&2; exit 2; }
done
for n in "${names[@]}"; do
  [[ -d fuzz/corpus/$n ]] || { echo "fuzz.sh: no target named $n (known: ${all[*]})" >&2; exit 2; }
done

BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
if ((build)); then
  mkdir -p "$BUILD_DIR"
  # Only the fuzz targets and the libraries they link are built, with clang at -O1.
  cmake -S . -B "$BUILD_DIR" -G Ninja \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" \
    -DCMAKE_C_FLAGS_DEBUG="-O1 -gline-tables-only" \
    -DNETQOS_FUZZ=ON -DNETQOS_SANITIZE="address;undefined" -DNETQOS_WERROR=OFF \
    -DNETQOS_BUILD_TESTS=OFF -DNETQOS_BUILD_BENCH=OFF >"$BUILD_DIR/netqos-configure.log" 2>&1 ||
    { cat "$BUILD_DIR/netqos-configure.log"; exit 1; }
  cmake --build "$BUILD_DIR" --target "${names[@]/#/fuzz_}" -j "${NETQOS_JOBS:-$(nproc)}"
fi
((run)) || exit 0

# Seeds as libFuzzer reads them: the request seeds are kept as text protos (readable, and
# reviewable in a diff) and encoded to the wire format here; everything else is used as is.
seeds_for() {
  local name=$1 out=$BUILD_DIR/fuzz-seeds/$1
  rm -rf "$out"
  mkdir -p "$out"
  local f base msg
  for f in fuzz/corpus/"$name"/*; do
    base=${f##*/}
    if [[ $base == *.txtpb ]]; then
      msg=ResourceRequest
      [[ $base == pod_* ]] && msg=PodResourceRequest
      protoc --proto_path=proto --encode="resourceplugin.v1alpha1.$msg" \
        resourceplugin/v1alpha1/api.proto <"$f" >"$out/${base%.txtpb}.bin"
    else
      cp "$f" "$out/$base"
    fi
  done
  echo "$out"
}

failed=()
declare -A summary=()
for name in "${names[@]}"; do
  bin=$BUILD_DIR/bin/fuzz_$name
  [[ -x $bin ]] || { echo "fuzz.sh: $bin not built" >&2; exit 1; }
  seeds=$(seeds_for "$name")
  corpus=$BUILD_DIR/fuzz-corpus/$name
  crashes=$BUILD_DIR/fuzz-crashes/$name
  log=$BUILD_DIR/fuzz-logs/$name.log
  mkdir -p "$corpus" "$crashes" "${log%/*}"
  dict=()
  [[ -f fuzz/dict/$name.dict ]] && dict=(-dict="fuzz/dict/$name.dict")
  rm -f "${log%.log}".[0-9]*.log
  echo "fuzz: $name for $budget$( ((jobs == 1)) || echo " in $jobs jobs"), inputs up to $max_len bytes (seeds $(find "$seeds" -type f | wc -l))${extra[*]:+, flags ${extra[*]}}"
  # New inputs go to the first corpus directory; the seeds are only read. With --jobs each
  # process re-reads that directory every second (libFuzzer's -reload), so they share finds.
  pids=()
  logs=()
  for ((j = 0; j < jobs; j++)); do
    job_limits=("${limits[@]}")
    if [[ -n $runs ]]; then  # split N: the first (N mod J) jobs take one more
      job_limits[-1]=-runs=$((runs / jobs + (j < runs % jobs ? 1 : 0)))
    fi
    job_log=$log
    ((jobs == 1)) || job_log=${log%.log}.$j.log
    "$bin" "${dict[@]}" "${job_limits[@]}" -timeout=10 -rss_limit_mb=2048 -max_len="$max_len" \
      -print_final_stats=1 -artifact_prefix="$crashes/" "${extra[@]}" "$corpus" "$seeds" \
      >"$job_log" 2>&1 &
    pids+=($!)
    logs+=("$job_log")
  done
  # The first failure is the result: the other jobs are stopped rather than left to run on.
  code=0
  for j in "${!pids[@]}"; do
    c=0
    wait "${pids[$j]}" || c=$?
    if ((c != 0 && code == 0)); then
      code=$c
      log=${logs[$j]}
      kill "${pids[@]}" 2>/dev/null || true
    fi
  done
  # A target's scratch files (fuzz_checkpoint's directory on /dev/shm) are named after its pid;
  # libFuzzer exits without running destructors, so they are removed here.
  for pid in "${pids[@]}"; do
    rm -rf "/dev/shm/netqos-fuzz-$name.$pid" "${TMPDIR:-/tmp}/netqos-fuzz-$name.$pid"
  done
  # Totals over the jobs (each prints its own final stats).
  stats=$(cat "${logs[@]}" | awk -F': ' '/^stat::number_of_executed_units/ {e += $2}
            /^stat::new_units_added/ {n += $2}
            END {if (e) printf "number_of_executed_units: %d, new_units_added: %d", e, n}')
  if ((code != 0)); then
    failed+=("$name")
    summary[$name]="FAILED (exit $code)"
    echo "fuzz: $name FAILED (exit $code); log $log"
    tail -n 60 "$log"
    shopt -s nullglob
    for c in "$crashes"/*; do echo "fuzz: crashing input kept: $c"; done
    shopt -u nullglob
  else
    summary[$name]="ok: $stats"
  fi
done

echo "fuzz summary ($budget per target):"
for name in "${names[@]}"; do echo "  $name: ${summary[$name]}"; done
if ((${#failed[@]})); then
  echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}" >&2
  exit 1
fi
