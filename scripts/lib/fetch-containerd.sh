#!/usr/bin/env bash
# A containerd with NRI (1.7 or later) for the tests, without installing it: Debian 12 ships 1.6,
# which has no NRI. Downloads the containerd package of a newer Debian suite (trixie's 1.7 by
# default, sid's 2.x with --suite sid) through an apt configuration of our own (the machine's
# sources stay untouched), unpacks it into a cache and prints the directory holding its binaries
# (containerd, containerd-shim-runc-v2, ctr), to be put first on PATH. A cached copy is reused
# without any download. Each suite has its own directory in the cache.
#
#   scripts/lib/fetch-containerd.sh [--suite SUITE]
#
# runc stays the machine's (Debian 12's 1.1.5): the package asks only for runc (>= 0.1.0~), and
# the shim drives runc through its command line and state directory, which 1.1.5 serves for
# containerd 1.7 and 2.1 alike (the NRI tests pass with both). trixie's own runc is 1.1.15 of the
# same series; sid's (1.3) needs glibc 2.38, which Debian 12 (2.36) does not have (docs/nri.md).
#
# Environment:
#   NETQOS_CONTAINERD_CACHE    downloads and the unpacked package (default
#                              ${XDG_CACHE_HOME:-$HOME/.cache}/netqos/containerd)
#   NETQOS_CONTAINERD_REFRESH=1  look for a newer build of the suite's package
#   NETQOS_DEBIAN_MIRROR       an archive's base URL in place of this machine's own apt sources,
#                              which are the default (scripts/lib/apt_sources_for.py)
#
# Exit status 0 with the bin directory on stdout; 1 with the reason on stderr.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
prog=fetch-containerd
die() { echo "$prog: $*" >&2; exit 1; }
note() { echo "$prog: $*" >&2; }

suite=trixie
while (($#)); do
  case $1 in
    --suite) suite=${2:?--suite needs a value}; shift 2 ;;
    --suite=*) suite=${1#*=}; shift ;;
    *) die "unknown argument '$1' (usage: $0 [--suite SUITE])" ;;
  esac
done
[[ $suite =~ ^[a-z0-9][a-z0-9.-]*$ ]] || die "bad suite name '$suite'"
for tool in apt-get apt-cache dpkg-deb flock; do
  command -v "$tool" >/dev/null || die "$tool is missing"
done

CACHE=${NETQOS_CONTAINERD_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/netqos/containerd}
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd -P)
case $CACHE/ in "$(cd "$repo" && pwd -P)"/*) die "NETQOS_CONTAINERD_CACHE ($CACHE) must be outside the checkout" ;; esac
dir=$CACHE/$suite
bin=$dir/usr/bin

# The binaries run here and containerd is 1.7 or later: what the cache and a fresh download must
# both pass.
check_bin() {
  local out major minor
  out=$("$bin/containerd" --version 2>&1) || { echo "$bin/containerd --version failed: $out"; return 1; }
  [[ $out =~ containerd[[:space:]]+[^[:space:]]+[[:space:]]+v?([0-9]+)\.([0-9]+) ]] ||
    { echo "no version in '$out'"; return 1; }
  major=${BASH_REMATCH[1]} minor=${BASH_REMATCH[2]}
  if ((major < 1 || (major == 1 && minor < 7))); then
    echo "$bin/containerd is $major.$minor, not 1.7 or later (no NRI)"
    return 1
  fi
  for f in containerd-shim-runc-v2 ctr; do
    [[ -x $bin/$f ]] || { echo "$bin/$f missing"; return 1; }
  done
  # They run here too: a newer suite's build may need a newer glibc than this machine's.
  out=$("$bin/containerd-shim-runc-v2" -v 2>&1) || { echo "$bin/containerd-shim-runc-v2 -v failed: $out"; return 1; }
  out=$("$bin/ctr" --version 2>&1) || { echo "$bin/ctr --version failed: $out"; return 1; }
}

if [[ -f $dir/ready && -z ${NETQOS_CONTAINERD_REFRESH:-} ]] && check_bin >/dev/null; then
  echo "$bin"
  exit 0
fi

exec 9>"$CACHE/.lock"
flock 9
if [[ -f $dir/ready && -z ${NETQOS_CONTAINERD_REFRESH:-} ]] && check_bin >/dev/null; then
  echo "$bin"
  exit 0
fi

a=$CACHE/apt/$suite
mkdir -p "$a/lists/partial" "$a/cache/archives/partial" "$a/preferences.d"
: >"$a/status"
: >"$a/preferences"
if [[ -n ${NETQOS_DEBIAN_MIRROR:-} ]]; then
  key=/usr/share/keyrings/debian-archive-keyring.gpg
  echo "deb [signed-by=$key] $NETQOS_DEBIAN_MIRROR/debian $suite main" >"$a/sources.list"
else
  # The machine's own archive (mirror, proxy, keys), for the suite.
  python3 "$here/apt_sources_for.py" "$suite" >"$a/sources.list" ||
    die "no apt source for $suite derived from this machine's (set NETQOS_DEBIAN_MIRROR)"
fi
opts=(-q -o "Dir::Etc::sourcelist=$a/sources.list" -o Dir::Etc::sourceparts=-
  -o "Dir::State::Lists=$a/lists" -o "Dir::Cache=$a/cache" -o "Dir::State::status=$a/status"
  -o "Dir::Etc::preferencesparts=$a/preferences.d" -o "Dir::Etc::preferences=$a/preferences"
  -o APT::Sandbox::User=root -o Acquire::Languages=none)
note "looking up Debian $suite's containerd"
# --error-on=any: a source that cannot be read fails here, not as "no such package" below.
apt-get "${opts[@]}" --error-on=any update >"$a/update.log" 2>&1 ||
  { cat "$a/update.log" >&2; die "apt-get update for $suite failed"; }
version=$(apt-cache "${opts[@]}" show containerd 2>/dev/null | awk '$1 == "Version:" { print $2; exit }') || true
[[ -n $version ]] || die "$suite has no containerd package"
if [[ -f $dir/ready && $(cat "$dir/package") == "containerd $version" ]] && check_bin >/dev/null; then
  touch "$dir/ready"
  echo "$bin"
  exit 0
fi

rm -rf "$CACHE"/.prepare.*  # what a killed run left
work=$(mktemp -d "$CACHE/.prepare.XXXXXX")
trap 'rm -rf "$work"' EXIT
note "downloading containerd $version"
(cd "$work" && apt-get "${opts[@]}" download "containerd=$version" >download.log 2>&1) ||
  { cat "$work/download.log" >&2; die "apt-get download containerd=$version failed"; }
dpkg-deb -x "$work"/containerd_*.deb "$work/new"
echo "containerd $version" >"$work/new/package"
rm -rf "$dir"
mv "$work/new" "$dir"
why=$(check_bin) || { rm -rf "$dir"; die "the downloaded containerd $version: $why"; }
touch "$dir/ready"
note "cached containerd $version in $dir"
echo "$bin"
