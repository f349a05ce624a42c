#!/usr/bin/env bash
# Pauses or resumes every process of scripts/test.sh's background builds, compilers included:
#
#   scripts/lib/background-pause.sh BG_DIR on|off
#
# BG_DIR is test.sh's directory for them: BG_DIR/cgroup names the cgroup v2 directory they run
# in, when test.sh could make one, and BG_DIR/pgid the process group of their leader.
#
# With the cgroup, "on" freezes it (cgroup.freeze) and returns once the kernel says it is frozen
# (at most 2 s); "off" thaws it. Without one, the leader's process tree is stopped (SIGSTOP,
# parents first, so that none starts a new child meanwhile) and continued. A signal to the process
# group alone is not enough: ninja starts each job in a process group of its own, so it would
# stop ninja and bash but leave the running compilers running.
set -uo pipefail
dir=${1:?usage: background-pause.sh BG_DIR on|off}
state=${2:?usage: background-pause.sh BG_DIR on|off}
case $state in on|off) ;; *) echo "background-pause.sh: on or off, not '$state'" >&2; exit 2 ;; esac

if [[ -s $dir/cgroup ]]; then
  cg=$(cat "$dir/cgroup")
  if [[ $state == off ]]; then
    echo 0 >"$cg/cgroup.freeze" 2>/dev/null
    exit 0
  fi
  echo 1 >"$cg/cgroup.freeze" 2>/dev/null || exit 0
  for _ in $(seq 200); do
    grep -qx 'frozen 1' "$cg/cgroup.events" 2>/dev/null && exit 0
    sleep 0.01
  done
  echo "background-pause.sh: $cg not frozen after 2 s" >&2
  exit 0
fi

[[ -s $dir/pgid ]] || exit 0
# The process and its descendants, parents first (/proc/PID/task/TID/children).
tree() {
  local p=$1 c
  echo "$p"
  # shellcheck disable=SC2013  # the file is one line of pids
  for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do tree "$c"; done
}
leader=$(cat "$dir/pgid")
if [[ $state == on ]]; then
  # Twice: a child started between the walk and its parent's stop is caught by the second.
  for _ in 1 2; do
    for p in $(tree "$leader"); do kill -STOP "$p" 2>/dev/null; done
  done
else
  for p in $(tree "$leader"); do kill -CONT "$p" 2>/dev/null; done
fi
exit 0
