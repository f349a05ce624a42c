#!/usr/bin/env bash
# The netqos demo, one command on a fresh Debian 12 machine, as root: installs what is missing
# (scripts/install-deps.sh), builds netqosd and netqosctl (into build/, or $BUILD_DIR), then runs
# scripts/demo-run.sh: two NICs (one in its own network namespace), four containers of three QoS
# levels allocated through the plugin's gRPC socket (one oversized request refused) and a fifth
# capped by the kubernetes.io bandwidth annotations alone, real traffic from each container's
# cgroup held to its cap on the wire (one borrowing beyond its allocation), DSCP marks,
# netqosctl top, kill -9 and a restart under traffic, RemovePod, --uninstall; and a plot of each
# container's rate over that time against its cap (BUILD_DIR/demo-rates.png, or DEMO_PLOT).
# Everything it creates is removed on exit, also on Ctrl-C. Usage: [BUILD_DIR=build] scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}

if [[ $(id -u) != 0 ]]; then
  echo "scripts/demo.sh must run as root: it installs packages and creates network namespaces," \
    "cgroups and BPF programs (try: sudo $0)" >&2
  [[ ${CI:-} == true ]] && exit 1  # CI runs as root: a missing privilege is a failure there
  exit 77
fi

scripts/install-deps.sh
if [[ ! -f $BUILD_DIR/build.ninja ]]; then
  echo "demo: configuring $BUILD_DIR"
  cmake -S . -B "$BUILD_DIR" -G Ninja >/dev/null
fi
echo "demo: building netqosd and netqosctl in $BUILD_DIR"
cmake --build "$BUILD_DIR" --target netqosd netqosctl  # parallel; CMAKE_BUILD_PARALLEL_LEVEL caps it
exec scripts/demo-run.sh "$BUILD_DIR"
