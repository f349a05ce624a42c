#!/usr/bin/env bash
# The test command: installs what is missing, configures and builds netqos from scratch and runs
# every test through CTest (stage main), the privileged smoke subset inside Debian's 6.1 kernel
# under qemu (stage kernels, 5.10 and 6.12 in the full matrix: scripts/kernel-lab.sh runs
# tests/kernels/smoke.sh on the main build directory's binaries), then the same unit and e2e
# tests under ASan + UBSan (stage asan), the concurrency tests under ThreadSanitizer (stage tsan),
# a short libFuzzer run of every fuzz target (stage fuzz, made by the ASan build) and
# clang-tidy's CTest case (stage lint, left out of main). Fails if any stage fails; prints a
# summary with each stage's build and run times, how busy the CPU was and how much of it the
# hypervisor gave to other guests meanwhile.
#
# The machine is mostly waiting while the main stage's tests and the kernel guests run (sockets,
# rate windows, a guest's sleeps): the asan, tsan and fuzz builds and clang-tidy run meanwhile in
# the background at idle CPU priority (SCHED_IDLE: they get only what nothing else wants, so the
# rate measurements do not feel them), and each of those stages waits for its own part.
#
#   scripts/test.sh [--keep-build] [--stages=LIST] [--skip=LIST] [--fuzz-seconds=N] [ctest args...]
#     --keep-build       reuse existing build directories (faster local iterations)
#     --stages=LIST      run only these stages, comma-separated: main,kernels,asan,tsan,fuzz,lint
#                        (default all, in that order), and releases (never by default: it builds
#                        an earlier release's netqosd, see tests/release/across_releases.sh)
#     --skip=LIST        run all stages but these
#     --fuzz-seconds=N   time per fuzz target (default 20; see scripts/fuzz.sh)
#     ctest args         passed to the main stage's ctest (e.g. -L unit, -R restart)
#   BUILD_DIR=...        main build directory (default: build); the other stages use
#                        $BUILD_DIR-asan (asan and fuzz) and $BUILD_DIR-tsan
#   NETQOS_JOBS=N        build parallelism (default: nproc)
#   NETQOS_TSAN_TESTS=RE ctest -R regex of the tsan stage (default: the concurrency tests of
#                        the daemon and the checkpoint, and the metrics listener's tests)
#   NETQOS_ASAN_OPT, NETQOS_TSAN_OPT  optimisation of those builds (default -O0 for both)
#   NETQOS_RELEASE_REF   the earlier release of the releases stage (default: the newest v* tag
#                        before HEAD)
#   NETQOS_LAB_KERNELS   kernels of the kernels stage (default "6.1", Debian 12's; the full matrix
#                        is "5.10 6.1 6.12": run it when a change touches the BPF programs or
#                        their loading); downloads are cached in NETQOS_KERNEL_CACHE (see
#                        scripts/kernel-lab.sh)
#   NETQOS_LAB_TRAFFIC_KERNELS  those of them whose smoke also measures rates (default "6.1",
#                        Debian 12's; the others run every check but the rate windows). The full
#                        matrix: NETQOS_LAB_KERNELS="5.10 6.1 6.12" NETQOS_LAB_TRAFFIC_KERNELS="5.10 6.1 6.12"
#   NETQOS_CONTAINERD_CACHE  where the main stage's NRI tests keep Debian 13's containerd 1.7
#                        and unstable's 2.1 (Debian 12's 1.6 has no NRI), each fetched once by
#                        scripts/lib/fetch-containerd.sh; under CI=true a failed fetch fails it
set -euo pipefail
cd "$(dirname "$0")/.."

keep=0
stages=main,kernels,asan,tsan,fuzz,lint
skip=
fuzz_seconds=20
while (($#)); do
  case $1 in
    --keep-build) keep=1; shift ;;
    --stages=*) stages=${1#*=}; shift ;;
    --skip=*) skip=${1#*=}; shift ;;
    --fuzz-seconds=*) fuzz_seconds=${1#*=}; shift ;;
    *) break ;;  # the rest goes to the main stage's ctest
  esac
done
BUILD_DIR=${BUILD_DIR:-build}
export NETQOS_JOBS=${NETQOS_JOBS:-$(nproc)}

selected=()
IFS=, read -ra wanted <<<"$stages"
IFS=, read -ra skipped <<<"$skip"
for s in "${wanted[@]}"; do
  case $s in main|kernels|lint|asan|tsan|fuzz|releases) ;; *) echo "test.sh: unknown stage '$s'" >&2; exit 2 ;; esac
  for k in "${skipped[@]}"; do [[ $s == "$k" ]] && continue 2; done
  selected+=("$s")
done
((${#selected[@]})) || { echo "test.sh: no stage selected" >&2; exit 2; }

scripts/install-deps.sh

# Debug type (assertions on), -g1: line tables are all the sanitizers' stack traces need. The
# ASan build is the big one (every unit test executable): -O0 compiles it in about half the time
# of -O1 and the tests, mostly waiting on processes and sockets, run only ~25 s longer. The TSan
# build (the whole product) too: -O0 took 460 s of CPU against -O1's 804, and its 12 tests ran
# 18 s against 19 (docs/testing.md). Both with clang, which compiles the instrumented
# test code in half GCC's CPU time (its -O0 binaries run the tests slower: docs/testing.md has
# both); the product and the main stage stay with GCC.
sanitizer_flags() {
  local opt="$1 -g1"
  printf '%s\n' -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=$opt" "-DCMAKE_C_FLAGS_DEBUG=$opt" \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DNETQOS_WERROR=ON -DNETQOS_BUILD_BENCH=OFF
}
tsan_tests=${NETQOS_TSAN_TESTS:-'[Cc]oncurren|[0-9]+ clients|^sanitizers: |metrics listener: '}
# What the unit and e2e tests need, and nothing else (no integration tests, no benchmarks): the
# binaries, and every netqos_*_tests executable of the configured build but the integration one.
unit_e2e_targets() {
  printf "%s\n" netqos_sanitizer_selftest netqosd netqosctl
  ninja -C "$1" -t targets all | sed -n 's/^\(netqos_[a-z0-9_]*_tests\): phony$/\1/p' |
    grep -v -e '^netqos_integration_tests$' -e '^netqos_cri_integration_tests$'
}

fresh() { if ((!keep)); then rm -rf "$1"; fi; }
now() { date +%s; }
# Stages run in a subshell; each records when its build ended here, for the timings.
built_marker=$(mktemp)
built() { now >"$built_marker"; }

# The main build directory configured, if it is not: -g1 (line tables, what a failure's
# backtrace needs) in place of the build type's -g, which makes the userspace libraries compile
# about a fifth faster.
# The two benchmarks no test runs are left out of its `all` and built with the lint stage.
configure_main() {
  [[ -f $BUILD_DIR/build.ninja ]] ||
    cmake -S . -B "$BUILD_DIR" -G Ninja -DNETQOS_WERROR=ON -DNETQOS_BENCH_UNRUN_IN_ALL=OFF \
      '-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG'
}

stage_main() {
  fresh "$BUILD_DIR"
  configure_main
  cmake --build "$BUILD_DIR" -j "$NETQOS_JOBS"
  built
  start_background_builds
  local s lint=()
  for s in "${selected[@]}"; do [[ $s != lint ]] || lint=(-LE lint); done
  (cd "$BUILD_DIR" && ctest --output-on-failure --timeout 600 "${lint[@]}" "$@")
}

# clang-tidy over the main build's compile commands (the CTest case labelled lint): minutes of
# CPU, so in the background with the builds; and the benchmarks no test runs, so that they
# compile.
build_lint() {
  configure_main
  cmake --build "$BUILD_DIR" -j "$NETQOS_JOBS"  # the generated headers; nothing after stage main
  if ninja -C "$BUILD_DIR" -t targets all | grep -q '^netqos_bench_enforcement:'; then
    cmake --build "$BUILD_DIR" -j "$NETQOS_JOBS" --target netqos_bench_enforcement netqos_bench_reaction \
      netqos_bench_cgroup_watcher netqos_bench_pass_result
  fi
  tests/check_tidy.sh "$BUILD_DIR"
}

stage_lint() {
  wait_for_build lint
  built
  tail -n 1 "$bg_dir/lint.log" 2>/dev/null || true
}

# The ASan build also makes the fuzz targets: its product code (proto/, userspace/) carries
# libFuzzer's coverage (NETQOS_FUZZ, cmake/Sanitizers.cmake), so the fuzz stage needs no build
# of its own, only its six executables. They fuzz at the ASan build's -O0, a fifth to a ninth of
# the executions of scripts/fuzz.sh's -O1 build in the same time: CI's 20 s per target replays
# the seed corpus and looks around it; exploring is a campaign's job, in scripts/fuzz.sh's build
# (docs/testing.md).
configure_asan() {
  local dir=$BUILD_DIR-asan
  [[ -f $dir/build.ninja ]] && return 0
  mapfile -t flags < <(sanitizer_flags "${NETQOS_ASAN_OPT:--O0}")
  cmake -S . -B "$dir" -G Ninja "${flags[@]}" "-DNETQOS_SANITIZE=address;undefined" -DNETQOS_FUZZ=ON
}

build_asan() {
  configure_asan
  mapfile -t targets < <(unit_e2e_targets "$BUILD_DIR-asan")
  cmake --build "$BUILD_DIR-asan" -j "$NETQOS_JOBS" --target "${targets[@]}"
}

stage_asan() {
  wait_for_build asan
  built
  # Not the deploy checks: they compare the binaries' shared libraries with the runtime image's
  # package list (a sanitized binary links libasan/libubsan, which the image rightly does not
  # ship) and the manifests with netqosd's flags, which it prints the same sanitized or not (the
  # flag parsing itself is in the unit tests): 80 s of sanitized start-ups that find nothing
  # the main stage does not. The crash storm kills and restarts the daemon 40 times, not 100:
  # each restart's recovery runs under the sanitizers all the same, and the main stage's 100
  # explore the kill points.
  (cd "$BUILD_DIR-asan" && NETQOS_CRASH_CYCLES=40 ctest --output-on-failure --timeout 600 \
    -L 'unit|e2e' -E '^deploy: ')
}

build_tsan() {
  local dir=$BUILD_DIR-tsan
  fresh "$dir"
  mapfile -t flags < <(sanitizer_flags "${NETQOS_TSAN_OPT:--O0}")
  cmake -S . -B "$dir" -G Ninja "${flags[@]}" -DNETQOS_SANITIZE=thread
  cmake --build "$dir" -j "$NETQOS_JOBS" --target netqos_sanitizer_selftest netqosd netqosctl \
    netqos_e2e_concurrency_tests netqos_metrics_tests netqos_checkpoint_tests
}

stage_tsan() {
  wait_for_build tsan
  built
  # The daemon under many concurrent kubelet clients (tests/e2e/concurrency_test.cc; its test
  # names say "concurrent" or "N clients"), the checkpoint's writers against its group commit and
  # its snapshot (tests/unit/checkpoint/: "concurrent", "concurrently"), and the metrics
  # listener's connection thread and answer threads under hostile clients
  # (tests/unit/metrics/http_server_hostile_clients_test.cc).
  # --no-tests=error: a rename must not silently empty this stage.
  (cd "$BUILD_DIR-tsan" && ctest --output-on-failure --timeout 900 -R "$tsan_tests" --no-tests=error)
}

build_fuzz() {
  configure_asan
  cmake --build "$BUILD_DIR-asan" -j "$NETQOS_JOBS" --target netqos_fuzzers
}

stage_fuzz() {
  wait_for_build fuzz
  built
  FUZZ_BUILD_DIR=$BUILD_DIR-asan scripts/fuzz.sh --seconds "$fuzz_seconds" --no-build
}

# The background builds: one process, at idle priority, builds the selected sanitizer and fuzz
# stages one after the other. It holds a lock per stage from the start and lets go of each when
# that build is done; a stage takes the lock to wait, then reads the build's exit code. A build
# that fails is the stage's failure, with the end of its log.
bg_dir=$(mktemp -d)
# The stages run in subshells: the background group's id, and the cgroup it runs in, are kept in
# files. The cgroup (cgroup v2, where this shell may make one) holds every process of the builds,
# so that they can be frozen and ended whole (scripts/lib/background-pause.sh); ninja puts each of
# its jobs in a process group of its own, out of reach of a signal to the builds' group.
cleanup() {
  rm -f "$built_marker"
  if [[ -s $bg_dir/pgid ]]; then  # thawed: a paused group acts on the TERM only when it runs
    kill -- "-$(cat "$bg_dir/pgid")" 2>/dev/null || true
    scripts/lib/background-pause.sh "$bg_dir" off
  fi
  if [[ -s $bg_dir/cgroup ]]; then
    local cg p
    cg=$(cat "$bg_dir/cgroup")
    for p in $(cat "$cg/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
    for _ in $(seq 100); do rmdir "$cg" 2>/dev/null && break; sleep 0.05; done
  fi
  rm -rf "$bg_dir"
}
trap cleanup EXIT
start_background_builds() {
  local s todo=()
  for s in "${selected[@]}"; do
    case $s in lint|asan|tsan|fuzz) [[ -e $bg_dir/$s.lock ]] || todo+=("$s") ;; esac
  done
  ((${#todo[@]})) || return 0
  for s in "${todo[@]}"; do : >"$bg_dir/$s.lock"; done
  # setsid: its own process group. The children inherit the idle priority (nice 19 where
  # SCHED_IDLE is not allowed), and the cgroup, which the builds' shell joins before it starts
  # anything.
  local prio=(chrt --idle 0) cg2
  chrt --idle 0 true 2>/dev/null || prio=(nice -n 19)
  cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
  if [[ -n $cg2 && ! -e $bg_dir/cgroup ]] && mkdir "$cg2/netqos-test-builds.$$" 2>/dev/null; then
    if [[ -e $cg2/netqos-test-builds.$$/cgroup.freeze ]]; then
      echo "$cg2/netqos-test-builds.$$" >"$bg_dir/cgroup"
    else
      rmdir "$cg2/netqos-test-builds.$$"  # a kernel before 5.2: no freezer in cgroup v2
    fi
  fi
  export -f configure_main configure_asan build_lint build_asan build_tsan build_fuzz sanitizer_flags \
    unit_e2e_targets fresh
  export BUILD_DIR keep fuzz_seconds
  setsid "${prio[@]}" bash -c '
    set -u
    cg_file="'"$bg_dir"'/cgroup"
    if [[ -s $cg_file ]] && ! echo $$ >"$(cat "$cg_file")/cgroup.procs"; then
      rmdir "$(cat "$cg_file")" && rm -f "$cg_file"  # paused by signals instead
    fi
    for s in "$@"; do exec {fd}<"'"$bg_dir"'/$s.lock"; flock "$fd"; eval "lock_$s=$fd"; done
    cpu_usec() { [[ -s $cg_file ]] && awk '"'"'$1 == "usage_usec" { print $2 }'"'"' "$(cat "$cg_file")/cpu.stat"; }
    for s in "$@"; do
      start=$(date +%s) cpu0=$(cpu_usec)
      (set -e; "build_$s") >"'"$bg_dir"'/$s.log" 2>&1
      rc=$? cpu1=$(cpu_usec)
      echo "$rc $(( $(date +%s) - start )) ${cpu0:+$(( (cpu1 - cpu0) / 1000000 ))}" >"'"$bg_dir"'/$s.rc"
      eval "flock -u \$lock_$s"
    done' background-builds "${todo[@]}" </dev/null &
  echo "$!" >"$bg_dir/pgid"
  # On once it holds every lock.
  for s in "${todo[@]}"; do
    while flock -n "$bg_dir/$s.lock" true; do
      kill -0 "$!" 2>/dev/null || { echo "the background builds did not start" >&2; return 1; }
      sleep 0.05
    done
  done
  echo "== background builds of ${todo[*]} started (idle priority; logs in $bg_dir)"
}

wait_for_build() {
  local s=$1 rc secs
  if [[ ! -e $bg_dir/$s.lock ]]; then  # nothing ran before this stage to overlap with
    "build_$s"
    return
  fi
  flock "$bg_dir/$s.lock" true
  read -r rc secs cpu <"$bg_dir/$s.rc" || { echo "no result from the background build of $s" >&2; return 1; }
  echo "== the background build of $s took ${secs}s${cpu:+ (${cpu}s of CPU)} and exited $rc"
  if ((rc != 0)); then
    tail -n 80 "$bg_dir/$s.log" >&2
    return "$rc"
  fi
}

# The smoke subset in each kernel's guest, one guest at a time (TCG: ready in 3-11 s, the subset 2.5-6
# min). What a kernel cannot do is an exclusion in tests/kernels/smoke.sh, printed with its reason.
# The rate windows (two thirds of a guest's time) run on one kernel: what differs between kernels
# is whether a step works at all, which every guest checks; the full matrix is one variable away.
stage_kernels() {
  configure_main
  cmake --build "$BUILD_DIR" -j "$NETQOS_JOBS" --target netqosd netqosctl netqos_integration_tests
  built
  start_background_builds
  local k t rc=0 mode
  for k in ${NETQOS_LAB_KERNELS:-6.1}; do
    mode=--no-traffic
    for t in ${NETQOS_LAB_TRAFFIC_KERNELS-6.1}; do [[ $t == "$k" ]] && mode=""; done
    echo "== kernel $k${mode:+ (no rate windows)}"
    # A guest that measures rates has the machine to itself: even at idle priority the builds
    # slow its emulated receive path by several percent (the IFB leaf of a 100 Mbit/s pod fell
    # to 92-93 while they ran), so they are frozen for it, compilers included
    # (scripts/lib/background-pause.sh). Not for its rate windows alone: tried, the 6.1 guest
    # took 60 % longer and passed its 900 s (docs/testing.md).
    [[ -n $mode ]] || scripts/lib/background-pause.sh "$bg_dir" on
    # shellcheck disable=SC2086  # mode is one word or none
    scripts/kernel-lab.sh --kernel "$k" --timeout 900 -- tests/kernels/smoke.sh "$BUILD_DIR" $mode || rc=1
    scripts/lib/background-pause.sh "$bg_dir" off
  done
  return "$rc"
}

# Rollback to an earlier release and the upgrade back, each after a kill -9, with that release's
# netqosd built from its tag.
stage_releases() {
  configure_main
  cmake --build "$BUILD_DIR" -j "$NETQOS_JOBS" --target netqosd netqosctl
  built
  tests/release/across_releases.sh "$BUILD_DIR" "${NETQOS_RELEASE_REF:-}"
}

# The whole machine's CPU time as "busy steal total" (USER_HZ ticks, every core): each stage's
# summary line says how busy the machine was, which tells a stage that waits from one that
# computes, and how much of its time the hypervisor gave to other guests (steal): on a shared
# host the same stage takes longer when that is high.
cpu_ticks() {
  awk '$1 == "cpu" { b = $2 + $3 + $4 + $7 + $8; print b, $9, b + $5 + $6 + $9; exit }' /proc/stat
}
busy_since() {
  local b0=$1 s0=$2 t0=$3 b1 s1 t1
  read -r b1 s1 t1 < <(cpu_ticks)
  ((t1 > t0)) || t1=$((t0 + 1))
  echo "CPU $((100 * (b1 - b0) / (t1 - t0)))% busy, $((100 * (s1 - s0) / (t1 - t0)))% stolen"
}

# The ASan and fuzz stages share one build directory (build_asan, build_fuzz): made fresh once.
for s in "${selected[@]}"; do
  [[ $s == asan || $s == fuzz ]] && { fresh "$BUILD_DIR-asan"; break; }
done

declare -A result=()
failed=0
total_start=$(now)
for s in "${selected[@]}"; do
  echo
  echo "================================================================================"
  echo "== stage $s"
  echo "================================================================================"
  start=$(now)
  read -r busy0 steal0 ticks0 < <(cpu_ticks)
  echo "$start" >"$built_marker"
  set +e
  ( set -e; "stage_$s" "$@" )
  code=$?
  set -e
  end=$(now)
  build_end=$(cat "$built_marker")
  times="build $((build_end - start))s, run $((end - build_end))s; $(busy_since "$busy0" "$steal0" "$ticks0")"
  if ((code == 0)); then
    result[$s]="passed ($times)"
  else
    result[$s]="FAILED, exit $code ($times)"
    failed=1
  fi
  echo "== stage $s: ${result[$s]}"
done

echo
echo "================================================================================"
echo "== summary ($(( $(now) - total_start ))s in all)"
for s in "${selected[@]}"; do echo "==   $s: ${result[$s]}"; done
echo "================================================================================"
exit "$failed"
