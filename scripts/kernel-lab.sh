#!/usr/bin/env bash
# The kernel lab: runs COMMAND as root inside a qemu guest booted on Debian's kernel of one LTS
# series, in the same working directory, streaming its stdout and stderr, and exits with its exit
# status.
#
#   scripts/kernel-lab.sh --kernel 5.10|6.1|6.12 [--cpus N] [--mem SIZE] [--timeout SECONDS] \
#       -- COMMAND [ARGS...]
#     --kernel    the series: 5.10 (bullseye), 6.1 (bookworm), 6.12 (trixie); the generic -amd64
#                 flavour, the newest build of the series Debian has (cloud lacks 9p)
#     --cpus      guest vCPUs (default 2)
#     --mem       guest memory, qemu's -m syntax (default 2G); the guest's writes live in it
#     --timeout   seconds before the guest is killed (default 600); the lab then exits 124
#
# The guest sees the host's whole file tree read-only through 9p, under an overlay whose upper
# layer is tmpfs: every host binary runs unchanged, and nothing the guest writes reaches the host.
# Inside: unified cgroup v2 at /sys/fs/cgroup (no v1), bpffs at /sys/fs/bpf, tmpfs /tmp and /run,
# the kernel's own modules at /lib/modules/$(uname -r) with sch_fq, sch_fq_codel, sch_htb, ifb,
# cls_bpf, cls_u32, act_mirred and veth loaded, loopback up. See
# scripts/lib/kernel-lab/{init,stage2}.
#
# Exit status: COMMAND's; 124 on timeout; 125 when the lab itself failed (download, boot, guest
# setup); 130/143 when interrupted. On any exit nothing stays behind on the host: qemu is killed
# (also if this script is killed: it dies with its parent), the run's temp directory removed; the
# lab mounts nothing on the host.
#
# Environment:
#   NETQOS_KERNEL_CACHE   downloads and extracted kernels (default
#                         ${XDG_CACHE_HOME:-$HOME/.cache}/netqos/kernels); reused across runs
#   NETQOS_KERNEL_REFRESH=1  look for a newer build of the series in Debian's archive
#   NETQOS_DEBIAN_MIRROR  an archive's base URL (…/debian and …/debian-security) in place of
#                         this machine's own apt sources, which are the default: their entries
#                         for this machine's release, with the lab's suite (scripts/lib/apt_sources_for.py)
#   NETQOS_LAB_ACCEL      tcg, kvm or auto (default): kvm only where /dev/kvm exists and a short
#                         probe boot, made once per host boot and remembered, came up (a KVM
#                         guest hangs where nested virtualisation is broken)
#   NETQOS_LAB_VERBOSE=1  the guest's kernel console on stderr, live
#   NETQOS_LAB_CONSOLE=F  keep the guest's kernel console in file F
#   NETQOS_LAB_QUIET=1    no "kernel-lab:" lines on stderr (errors still are)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
prog="kernel-lab"

usage() {
  sed -n '6,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
die() { echo "$prog: $*" >&2; exit 125; }
note() { [[ -n ${NETQOS_LAB_QUIET:-} ]] || echo "$prog: $*" >&2; }

kernel="" cpus=2 mem=2G timeout=600
while (($#)); do
  case $1 in
    --kernel) kernel=${2-}; shift 2 || usage ;;
    --kernel=*) kernel=${1#*=}; shift ;;
    --cpus) cpus=${2-}; shift 2 || usage ;;
    --cpus=*) cpus=${1#*=}; shift ;;
    --mem) mem=${2-}; shift 2 || usage ;;
    --mem=*) mem=${1#*=}; shift ;;
    --timeout) timeout=${2-}; shift 2 || usage ;;
    --timeout=*) timeout=${1#*=}; shift ;;
    --) shift; break ;;
    -h|--help) usage ;;
    *) echo "$prog: unexpected '$1' (COMMAND goes after --)" >&2; usage ;;
  esac
done
(($#)) || usage
case $kernel in
  5.10) suite=bullseye ;;
  6.1) suite=bookworm ;;
  6.12) suite=trixie ;;
  *) echo "$prog: --kernel must be 5.10, 6.1 or 6.12" >&2; usage ;;
esac
[[ $cpus =~ ^[1-9][0-9]*$ ]] || { echo "$prog: --cpus takes a number" >&2; usage; }
[[ $timeout =~ ^[1-9][0-9]*$ ]] || { echo "$prog: --timeout takes seconds" >&2; usage; }
[[ $mem =~ ^[1-9][0-9]*[MGmg]?$ ]] || { echo "$prog: --mem takes e.g. 2G or 1536M" >&2; usage; }
((EUID == 0)) || die "must run as root (the guest's command runs as root, and 9p passthrough needs it)"

# The working directory must be one the guest sees: its /run, /proc, /sys and /dev are its own.
# Its /tmp is a fresh tmpfs too, but a working directory under /tmp (a CI clone there) is kept:
# the top directory below /tmp that holds it is carried over (overlay semantics: the host's files,
# the guest's writes).
keep_tmp=""
case $(cd "$PWD" && pwd -P)/ in
  /run/*|/var/run/*|/proc/*|/sys/*|/dev/*)
    die "the working directory $PWD is under a directory the guest mounts its own (/run, /proc, /sys, /dev)" ;;
  /tmp/*)
    keep_tmp=$(cd "$PWD" && pwd -P)
    keep_tmp=/tmp/$(cut -d/ -f3 <<<"$keep_tmp") ;;
esac

for tool in qemu-system-x86_64 busybox apt-get dpkg-deb depmod xz zstd setpriv timeout readelf gzip od; do
  command -v "$tool" >/dev/null || die "$tool missing: run scripts/install-deps.sh"
done
if readelf -l "$(command -v busybox)" | grep -q INTERP; then
  die "$(command -v busybox) is not static: install busybox-static (scripts/install-deps.sh)"
fi

CACHE=${NETQOS_KERNEL_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/netqos/kernels}
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd -P)
case $CACHE/ in "$(cd "$repo" && pwd -P)"/*) die "NETQOS_KERNEL_CACHE ($CACHE) must be outside the checkout" ;; esac
case $CACHE/ in /tmp/*|/run/*|/proc/*|/sys/*|/dev/*) die "NETQOS_KERNEL_CACHE ($CACHE) must not be under /tmp, /run, /proc, /sys or /dev (the guest reads the modules from it)" ;; esac

# --------------------------------------------------------------------------------------------
# The kernel: Debian's linux-image-<abi>-amd64 that the series' linux-image-amd64 depends on,
# from an apt configuration of our own under the cache (the machine's sources stay untouched).
# $CACHE/$kernel/ holds vmlinuz, config, release, package and lib/modules/<release> (with the
# modules.dep that depmod makes: the package leaves that to its postinst).

apt_opts() {  # apt_opts SUITE
  local a=$CACHE/apt/$1
  printf '%s\n' -q -o "Dir::Etc::sourcelist=$a/sources.list" -o Dir::Etc::sourceparts=- \
    -o "Dir::State::Lists=$a/lists" -o "Dir::Cache=$a/cache" -o "Dir::State::status=$a/status" \
    -o "Dir::Etc::preferencesparts=$a/preferences.d" -o "Dir::Etc::preferences=$a/preferences" \
    -o APT::Sandbox::User=root -o Acquire::Languages=none
}

# extract_vmlinux BZIMAGE OUT: the bzImage's payload decompressed (boot protocol header fields
# setup_sects, payload_offset and payload_length; the payload ends with its 4-byte size), kept
# only if it is an ELF with a PVH entry note (XEN_ELFNOTE_PHYS32_ENTRY, type 0x12), which qemu's
# -kernel boots without the in-guest decompressor.
extract_vmlinux() {
  local img=$1 out=$2 setup off len
  setup=$(od -An -tu1 -j $((0x1f1)) -N1 "$img")
  ((setup)) || setup=4
  off=$(od -An -tu4 -j $((0x248)) -N4 "$img")
  len=$(od -An -tu4 -j $((0x24c)) -N4 "$img")
  ((len > 4)) || return 1
  tail -c +$(((setup + 1) * 512 + off + 1)) "$img" | head -c $((len - 4)) >"$out.payload"
  case $(od -An -tx1 -N4 "$out.payload" | tr -d ' ') in
    fd377a58) xz -dc --single-stream <"$out.payload" >"$out" ;;
    28b52ffd) zstd -qdc <"$out.payload" >"$out" ;;
    1f8b*) gzip -dc <"$out.payload" >"$out" 2>/dev/null ;;
    *) false ;;
  esac || { rm -f "$out" "$out.payload"; return 1; }
  rm -f "$out.payload"
  if [[ $(od -An -tx1 -N4 "$out" | tr -d ' ') == 7f454c46 ]] && readelf -n "$out" | grep -q '0x00000012'; then
    return 0
  fi
  rm -f "$out"
  return 1
}

prepare_kernel() {
  local dir=$CACHE/$kernel a=$CACHE/apt/$suite
  if [[ -f $dir/ready && -z ${NETQOS_KERNEL_REFRESH:-} ]]; then return; fi
  exec 9>"$CACHE/.lock"
  flock 9
  if [[ -f $dir/ready && -z ${NETQOS_KERNEL_REFRESH:-} ]]; then exec 9>&-; return; fi
  mkdir -p "$a/lists/partial" "$a/cache/archives/partial" "$a/preferences.d"
  : >"$a/status"
  : >"$a/preferences"
  if [[ -n ${NETQOS_DEBIAN_MIRROR:-} ]]; then
    local key=/usr/share/keyrings/debian-archive-keyring.gpg
    {
      echo "deb [signed-by=$key] $NETQOS_DEBIAN_MIRROR/debian $suite main"
      echo "deb [signed-by=$key] $NETQOS_DEBIAN_MIRROR/debian-security $suite-security main"
    } >"$a/sources.list"
  else
    # The machine's own archive (mirror, proxy, keys), for the lab's suite.
    python3 "$here/lib/apt_sources_for.py" "$suite" >"$a/sources.list" ||
      die "no apt source for $suite derived from this machine's (set NETQOS_DEBIAN_MIRROR)"
  fi
  local opts
  mapfile -t opts < <(apt_opts "$suite")
  note "looking up Debian $suite's kernel"
  apt-get "${opts[@]}" update >"$a/update.log" 2>&1 || { cat "$a/update.log" >&2; die "apt-get update for $suite failed"; }
  local pkg
  pkg=$(apt-cache "${opts[@]}" depends linux-image-amd64 | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
  [[ $pkg == linux-image-"$kernel".* ]] || die "$suite's linux-image-amd64 depends on '$pkg', not a $kernel kernel"
  local version
  version=$(apt-cache "${opts[@]}" show "$pkg" | awk '$1 == "Version:" { print $2; exit }')
  if [[ -f $dir/ready && $(cat "$dir/package") == "$pkg $version" ]]; then
    note "$pkg $version is the newest and is cached"
    touch "$dir/ready"
    exec 9>&-
    return
  fi
  local work
  rm -rf "$CACHE"/.prepare.*  # what a killed run left
  work=$(mktemp -d "$CACHE/.prepare.XXXXXX")
  note "downloading $pkg $version"
  (cd "$work" && apt-get "${opts[@]}" download "$pkg=$version" >download.log 2>&1) ||
    { cat "$work/download.log" >&2; die "apt-get download $pkg failed"; }
  dpkg-deb -x "$work"/*.deb "$work/x"
  local mods release
  for mods in "$work/x/lib/modules" "$work/x/usr/lib/modules"; do [[ -d $mods ]] && break; done
  release=$(ls "$mods")
  [[ -n $release && -f $work/x/boot/vmlinuz-$release ]] || die "unexpected layout in $pkg"
  mkdir "$work/new"
  mv "$work/x/boot/vmlinuz-$release" "$work/new/vmlinuz"
  mv "$work/x/boot/config-$release" "$work/new/config"
  extract_vmlinux "$work/new/vmlinuz" "$work/new/vmlinux" ||
    note "no PVH vmlinux in $pkg: booting the bzImage (slower on TCG)"
  mkdir -p "$work/new/lib/modules"
  mv "$mods/$release" "$work/new/lib/modules/"
  depmod -b "$work/new" "$release" || die "depmod for $release failed"
  echo "$release" >"$work/new/release"
  echo "$pkg $version" >"$work/new/package"
  touch "$work/new/ready"
  rm -rf "$dir"
  mv "$work/new" "$dir"
  rm -rf "$work"
  exec 9>&-
  note "cached $release in $dir"
}

# modules_closure MODDIR NAME...: the module files (relative to MODDIR) that NAMEs need, each
# after its dependencies; built-in modules print nothing, unknown ones fail.
modules_closure() {
  local moddir=$1
  shift
  awk -v want="$*" '
    function norm(p,   n) { n = p; sub(/.*\//, "", n); sub(/\.ko(\.(xz|zst|gz))?$/, "", n); gsub(/-/, "_", n); return n }
    function visit(n,   i, d, k) {
      if (n in done) return
      done[n] = 1
      k = split(deps[n], d, " ")
      for (i = k; i >= 1; i--) visit(norm(d[i]))
      print path[n]
    }
    FILENAME ~ /modules\.builtin$/ { builtin[norm($1)] = 1; next }
    { key = $1; sub(/:$/, "", key); n = norm(key); path[n] = key; $1 = ""; deps[n] = $0 }
    END {
      k = split(want, w, " ")
      for (i = 1; i <= k; i++) {
        n = w[i]; gsub(/-/, "_", n)
        if (n in path) visit(n)
        else if (!(n in builtin)) { print "unknown module " n > "/dev/stderr"; exit 1 }
      }
    }' "$moddir/modules.builtin" "$moddir/modules.dep"
}

prepare_kernel
kdir=$CACHE/$kernel
release=$(cat "$kdir/release")
moddir=$kdir/lib/modules/$release

# --------------------------------------------------------------------------------------------
# The run's directory: ctl/ is shared read-only with the guest (config, command), io/ is not
# (the serial ports' host ends), initrd/ becomes the initramfs.

# Leftovers of runs that were SIGKILLed (their trap never ran) go first.
for old in "${TMPDIR:-/tmp}"/netqos-lab.*; do
  [[ -f $old/owner ]] || continue
  pid=$(cat "$old/owner")
  kill -0 "$pid" 2>/dev/null || rm -rf "$old"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/netqos-lab.XXXXXX")
echo $$ >"$tmp/owner"
qpid="" readers=()
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  local code=$?
  trap - EXIT INT TERM HUP
  if [[ -n $qpid ]] && kill -0 "$qpid" 2>/dev/null; then
    kill -TERM "$qpid" 2>/dev/null || true
    wait "$qpid" 2>/dev/null || true
  fi
  # A reader still blocked in open() (qemu never opened its end) is released: O_RDWR on a FIFO
  # does not block, and closing it is the EOF.
  local f
  for f in "$tmp"/io/*.fifo; do [[ -p $f ]] && { exec 8<>"$f"; exec 8>&-; }; done
  ((${#readers[@]})) && wait "${readers[@]}" 2>/dev/null
  rm -rf "$tmp"
  return "$code"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

mkdir "$tmp/ctl" "$tmp/io" "$tmp/initrd"

# The initramfs: static busybox, /init, stage2, and the modules it needs to reach the host's
# files (virtio-pci where it is a module, 9p, overlay), decompressed, in load order.
boot_modules=(virtio_pci 9pnet_virtio 9p overlay)
mkdir -p "$tmp/initrd/bin" "$tmp/initrd/modules"
cp "$(command -v busybox)" "$tmp/initrd/bin/busybox"
install -m 755 "$here/lib/kernel-lab/init" "$tmp/initrd/init"
cp "$here/lib/kernel-lab/stage2" "$tmp/initrd/stage2"
closure=$(modules_closure "$moddir" "${boot_modules[@]}") || die "boot modules of $release"
while read -r m; do
  [[ -n $m ]] || continue
  base=${m##*/}
  case $m in
    *.xz) base=${base%.xz}; xz -dc "$moddir/$m" >"$tmp/initrd/modules/$base" ;;
    *.zst) base=${base%.zst}; zstd -qdc "$moddir/$m" >"$tmp/initrd/modules/$base" ;;
    *.gz) base=${base%.gz}; gzip -dc "$moddir/$m" >"$tmp/initrd/modules/$base" ;;
    *) cp "$moddir/$m" "$tmp/initrd/modules/$base" ;;
  esac
  echo "$base" >>"$tmp/initrd/modules/order"
done <<<"$closure"
touch "$tmp/initrd/modules/order"
(cd "$tmp/initrd" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$tmp/initrd.img"

# What the guest's stage2 reads: the kernel's module tree (bound at /lib/modules/$release) and
# the modules to load; and COMMAND with this shell's environment and working directory.
qos_modules="sch_fq sch_fq_codel sch_htb ifb cls_bpf cls_u32 act_mirred veth"
{
  printf 'LAB_RELEASE=%q\n' "$release"
  printf 'LAB_MODTREE=%q\n' "$moddir"
  printf 'LAB_MODULES=%q\n' "$qos_modules"
  printf 'LAB_HOSTNAME=%q\n' "netqos-lab-${kernel//./-}"
  printf 'LAB_KEEP_TMP=%q\n' "$keep_tmp"
} >"$tmp/ctl/config"
{
  echo '# written by kernel-lab.sh: the environment, working directory and command of the caller'
  while read -r name; do
    case $name in _|SHLVL|PWD|OLDPWD) continue ;; esac
    printf 'export %s=%q\n' "$name" "${!name}"
  done < <(compgen -e)
  # shellcheck disable=SC2016  # for the guest's shell
  echo '[ -z "${TMPDIR:-}" ] || [ -d "$TMPDIR" ] || unset TMPDIR'
  printf 'cd -- %q || exit 125\n' "$PWD"
  printf 'exec'
  printf ' %q' "$@"
  echo
} >"$tmp/ctl/command"

# --------------------------------------------------------------------------------------------
# The accelerator: TCG unless KVM is known to work on this host boot.

accel=${NETQOS_LAB_ACCEL:-auto}
if [[ $accel == auto ]]; then
  accel=tcg
  if [[ -r /dev/kvm && -w /dev/kvm ]]; then
    probe=$CACHE/kvm-probe.$(cat /proc/sys/kernel/random/boot_id)
    if [[ ! -f $probe ]]; then
      note "probing KVM (once per host boot)"
      if NETQOS_LAB_ACCEL=kvm NETQOS_LAB_QUIET=1 "${BASH_SOURCE[0]}" --kernel "$kernel" --timeout 60 \
          -- true >/dev/null 2>&1; then
        echo ok >"$probe"
      else
        echo hangs >"$probe"
      fi
    fi
    [[ $(cat "$probe") == ok ]] && accel=kvm
  fi
fi
case $accel in
  kvm) accel_args=(-accel kvm -cpu host) ;;
  tcg) accel_args=(-accel 'tcg,thread=multi' -cpu max) ;;
  *) die "NETQOS_LAB_ACCEL must be tcg, kvm or auto" ;;
esac

# --------------------------------------------------------------------------------------------
# The serial ports: ttyS0 stdout and ttyS1 stderr (FIFOs that cat copies out, so that they
# stream), ttyS2 the kernel console, ttyS3 the status lines (NETQOS-LAB-READY <uptime>,
# NETQOS-LAB-EXIT <status> or NETQOS-LAB-ERROR <why>).

mkfifo "$tmp/io/out.fifo" "$tmp/io/err.fifo"
cat "$tmp/io/out.fifo" &
readers+=($!)
cat "$tmp/io/err.fifo" >&2 &
readers+=($!)
console=$tmp/io/console
if [[ -n ${NETQOS_LAB_VERBOSE:-} ]]; then
  console=$tmp/io/console.fifo
  mkfifo "$console"
  cat "$console" >&2 &
  readers+=($!)
fi

# The uncompressed vmlinux (PVH entry) where prepare_kernel could make one: decompressing a
# bzImage takes ~10 s on TCG.
boot_image=$kdir/vmlinuz
[[ -f $kdir/vmlinux ]] && boot_image=$kdir/vmlinux
cmdline="console=ttyS2 loglevel=6 panic=-1 oops=panic cgroup_no_v1=all random.trust_cpu=on"
cmdline+=" mitigations=off 8250.nr_uarts=4 rdinit=/init"
note "booting $(cat "$kdir/package") ($release) on $accel, $cpus cpus, $mem"

start=$(date +%s.%N)
setpriv --pdeathsig KILL timeout --kill-after=10 "$timeout" \
  setpriv --pdeathsig KILL qemu-system-x86_64 \
  -nodefaults -no-user-config -display none -no-reboot \
  -machine pc "${accel_args[@]}" -smp "$cpus" -m "$mem" \
  -kernel "$boot_image" -initrd "$tmp/initrd.img" -append "$cmdline" \
  -fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap \
  -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
  -fsdev "local,id=ctl,path=$tmp/ctl,security_model=none,readonly=on" \
  -device virtio-9p-pci,fsdev=ctl,mount_tag=netqosctl \
  -chardev "file,id=out,path=$tmp/io/out.fifo" -serial chardev:out \
  -chardev "file,id=err,path=$tmp/io/err.fifo" -serial chardev:err \
  -chardev "file,id=con,path=$console" -serial chardev:con \
  -chardev "file,id=st,path=$tmp/io/status" -serial chardev:st \
  </dev/null >"$tmp/io/qemu.log" 2>&1 &
qpid=$!
qrc=0
wait "$qpid" || qrc=$?
qpid=
end=$(date +%s.%N)
for f in "$tmp"/io/*.fifo; do exec 8<>"$f"; exec 8>&-; done
wait "${readers[@]}" 2>/dev/null || true
readers=()

if [[ -n ${NETQOS_LAB_CONSOLE:-} && -f $tmp/io/console ]]; then cp "$tmp/io/console" "$NETQOS_LAB_CONSOLE"; fi
status=$(tr -d '\r' <"$tmp/io/status" 2>/dev/null || true)
ready=$(sed -n 's/^NETQOS-LAB-READY \([0-9.]*\).*/\1/p' <<<"$status" | tail -1)
exit_line=$(grep -E '^NETQOS-LAB-(EXIT|ERROR)' <<<"$status" | tail -1 || true)
elapsed=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')

guest_log() {
  echo "$prog: qemu exited $qrc; its messages and the guest's last console lines:" >&2
  sed 's/^/  qemu: /' "$tmp/io/qemu.log" >&2
  [[ -f $tmp/io/console ]] && tail -n 40 "$tmp/io/console" | tr -d '\r' | sed 's/^/  console: /' >&2
}

if ((qrc == 124 || qrc == 137)) && [[ $exit_line != NETQOS-LAB-EXIT* ]]; then
  echo "$prog: timed out after ${timeout}s (guest ready after ${ready:-?}s of uptime)" >&2
  [[ -n ${NETQOS_LAB_VERBOSE:-} ]] || guest_log
  exit 124
fi
case $exit_line in
  NETQOS-LAB-EXIT\ *)
    rc=${exit_line#NETQOS-LAB-EXIT }
    note "$release: guest ready at ${ready:-?}s uptime, COMMAND exited $rc, ${elapsed}s in all"
    exit "$rc" ;;
  NETQOS-LAB-ERROR\ *)
    echo "$prog: guest setup failed: ${exit_line#NETQOS-LAB-ERROR }" >&2
    [[ -n ${NETQOS_LAB_VERBOSE:-} ]] || guest_log
    exit 125 ;;
  *)
    echo "$prog: the guest ended without a status" >&2
    guest_log
    exit 125 ;;
esac
