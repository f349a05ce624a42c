#!/usr/bin/env bash
# Installs the Debian 12 packages netqos needs to build, test and demo, skipping what is present.
# Everything comes from Debian's own repositories.
set -euo pipefail

PACKAGES=(
  # toolchain
  g++ cmake ninja-build pkg-config
  # gRPC, protobuf and the libraries the daemon and CLI link
  protobuf-compiler protobuf-compiler-grpc libgrpc++-dev libprotobuf-dev
  libspdlog-dev libfmt-dev nlohmann-json3-dev libcli11-dev
  # kernel topology: netlink (links, addresses, live notifications)
  libnl-3-dev libnl-route-3-dev
  # cgroup2 mount table and tree walks
  libcgroup-dev
  # eBPF dataplane: BPF compiler, skeleton generator, loader library
  libbpf-dev bpftool clang llvm
  # kubelet /pods client (http and https)
  libcpp-httplib-dev libssl-dev
  # tests (clang-format and clang-tidy: tests/check_format.sh, tests/check_tidy.sh)
  catch2 iproute2 procps iperf3 clang-format clang-tidy
  # the Go reference for Katalyst's checkpoint checksum (tests/tools/katalyst_checksum), built
  # offline in GOPATH mode against Debian's go-spew
  golang-go golang-github-davecgh-go-spew-dev
  # the checkpoint durability test traces netqosd's renames and fsyncs (tests/e2e/restart_test.cc)
  strace
  # the CRI pod source against a private containerd (tests/cri_integration): the runtime, runc,
  # the CNI bridge and host-local plugins; its test image is busybox-static (below)
  containerd runc containernetworking-plugins
  # deploy manifest checks (tests/deploy/test_manifests.py; its kustomize renderer, Debian's
  # kubernetes-client, is fetched below, not installed); capsh for tests/deploy/capabilities_test.sh
  python3 python3-yaml libcap2-bin
  # the alert rules and dashboard (tests/monitoring): promtool, and a real Prometheus for the
  # privileged test; rsvg-convert renders the demo's rate plot to check it (scripts/lib/plot_rates.py)
  prometheus librsvg2-bin
  # libFuzzer for clang 14 (fuzz/, scripts/fuzz.sh); clang only recommends it
  libclang-rt-14-dev
  # the kernel lab (scripts/kernel-lab.sh): qemu, the guest's static busybox, depmod for the
  # downloaded kernels' modules, the decompressors of their vmlinuz and modules
  qemu-system-x86 qemu-utils busybox-static kmod xz-utils zstd
  # the lab benchmark's RTT figures (bench/lab/edt_vs_htb.sh, scripts/bench.sh --only lab)
  iputils-ping
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then
    echo "install-deps: need root to apt-get install: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
  # The prometheus package starts a system Prometheus on :9090 where init allows it; the tests
  # start their own (tests/monitoring), so one installed here is stopped and left disabled.
  if [[ " ${missing[*]} " == *" prometheus "* ]] && command -v systemctl >/dev/null &&
    systemctl is-enabled prometheus >/dev/null 2>&1; then
    systemctl disable --now prometheus >/dev/null 2>&1 || true
  fi
else
  echo "install-deps: all ${#PACKAGES[@]} packages present"
fi

# kubectl 1.20 from Debian's kubernetes-client renders the kustomizations in tests/deploy: unpacked
# into ~/.cache/netqos (apt-get download, dpkg-deb -x), never installed, since a kubectl of
# another origin may own /usr/bin/kubectl. The test fetches it itself when missing; here it is
# fetched ahead, so that a CI run needs no package download of its own.
if ! apt-cache show kubernetes-client >/dev/null 2>&1 && [[ $(id -u) -eq 0 ]]; then
  apt-get update -q
fi
python3 "$(dirname "$0")/../tests/deploy/test_manifests.py" --fetch-renderer >/dev/null
echo "install-deps: kustomize renderer (kubernetes-client's kubectl) in ~/.cache/netqos"
