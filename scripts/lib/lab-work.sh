# shellcheck shell=bash
# The end of a kernel-lab test's or benchmark's run (tests/kernels/*_test.sh, bench/lab/*.sh),
# sourced: lab_work_down CGROUP_TREE WORK removes the run's cgroup tree, retrying for a second
# while the processes it held finish exiting (rmdir fails on a cgroup with members), unmounts the
# private bpffs at WORK/bpf and removes WORK.
lab_work_down() {
  local tree=$1 work=$2 _
  for _ in 1 2 3 4 5; do
    find "$tree" -depth -type d -exec rmdir {} + 2>/dev/null
    [[ -d $tree ]] || break
    sleep 0.2
  done
  mountpoint -q "$work/bpf" && umount "$work/bpf"
  rm -rf "$work"
}
