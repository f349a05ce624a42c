#!/usr/bin/env bash
# Checks that the runtime image installs every shared library netqosd and netqosctl link: each
# library `ldd` resolves is mapped to its Debian package (`dpkg -S`) and must be named in the
# runtime stage's package list. The build host is Debian bookworm, like the image, so the
# packages that provide the libraries here are the ones the image needs.
#
#   check_runtime_libs.sh PACKAGE_LIST DOCKERFILE BINARY...
set -euo pipefail

if (($# < 3)); then
  echo "usage: $0 runtime-packages.txt Dockerfile BINARY..." >&2
  exit 2
fi
list=$1
dockerfile=$2
shift 2

if ! command -v dpkg-query >/dev/null; then
  echo "FAIL: dpkg-query not found (this check needs a Debian host, like the image)"
  exit 1
fi

fail=0
problem() {
  echo "FAIL: $*"
  fail=1
}

[[ -f $list && -r $list ]] || { echo "FAIL: package list $list not readable"; exit 1; }
mapfile -t listed < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$list" | grep -v '^$')
((${#listed[@]})) || { echo "FAIL: $list lists no packages"; exit 1; }
declare -A in_list=()
for p in "${listed[@]}"; do in_list[$p]=1; done

# The list only protects the image if the runtime stage installs it and ships the binaries.
[[ -r $dockerfile ]] || { echo "FAIL: $dockerfile not readable"; exit 1; }
grep -qE '^COPY[[:space:]]+deploy/image/runtime-packages\.txt[[:space:]]' "$dockerfile" ||
  problem "$dockerfile does not COPY deploy/image/runtime-packages.txt"
grep -qE 'xargs .*apt-get install' "$dockerfile" ||
  problem "$dockerfile does not apt-get install the list (xargs apt-get install)"
grep -qE '^COPY --from=build .*/netqosd .*/netqosctl /usr/local/bin/' "$dockerfile" ||
  problem "$dockerfile does not copy netqosd and netqosctl to /usr/local/bin/"
for tool in bpftool iproute2; do
  [[ -n ${in_list[$tool]:-} ]] || problem "operator tool package $tool is not in $list"
done

# The paths under which dpkg may have recorded a library: merged /usr means dpkg knows some
# under /lib and others under /usr/lib, and ldd may report either, through a symlink or not.
# variants_of[PATH]: the candidates, one per line, for every library path; two readlink calls in
# all (a fork per library and candidate made this check take seconds).
declare -A variants_of=()
compute_variants() {
  local paths=("$@") dirs=() real=() real_dirs=() i cand out v
  local -A seen
  ((${#paths[@]})) || return 0
  for cand in "${paths[@]}"; do dirs+=("${cand%/*}"); done
  mapfile -t real < <(readlink -f -- "${paths[@]}")
  mapfile -t real_dirs < <(readlink -f -- "${dirs[@]}")
  for i in "${!paths[@]}"; do
    out="" seen=()
    for cand in "${paths[$i]}" "${real_dirs[$i]}/${paths[$i]##*/}" "${real[$i]}"; do
      for v in "$cand" "${cand#/usr}" "/usr$cand"; do
        [[ -n ${seen[$v]:-} ]] && continue
        seen[$v]=1
        out+=${out:+$'\n'}$v
      done
    done
    variants_of[${paths[$i]}]=$out
  done
}

# Every library the binaries load: "BINARY<TAB>PATH" lines.
libs=()
for bin in "$@"; do
  if [[ ! -x $bin ]]; then
    problem "binary $bin does not exist (build netqosd and netqosctl first)"
    continue
  fi
  if ! ldd_out=$(ldd "$bin" 2>&1); then
    problem "ldd $bin failed: $ldd_out"
    continue
  fi
  while IFS= read -r line; do
    line=${line#"${line%%[![:space:]]*}"}
    case $line in
      linux-vdso.so* | linux-gate.so*) continue ;;              # provided by the kernel
      *"=> not found"*)
        problem "$(basename "$bin"): ${line%% *} not found by the loader"
        continue ;;
      *" => "*) lib=${line#* => }; lib=${lib%% (*} ;;
      /*) lib=${line%% (*} ;;                                    # the dynamic loader itself
      *) continue ;;
    esac
    libs+=("$(basename "$bin")"$'\t'"$lib")
  done <<<"$ldd_out"
done

# Which packages own the candidate paths: one fixed-string pass over dpkg's file lists (what
# `dpkg-query -S` reads too, but it matches each path as a pattern against every file of every
# package: about 20 s for the few hundred candidates here, and the self-test runs this 5 times).
# A path in several packages' lists is owned by each.
declare -A owner_of=()
if ((${#libs[@]})); then
  mapfile -t paths < <(for entry in "${libs[@]}"; do echo "${entry#*$'\t'}"; done | awk '!seen[$0]++')
  compute_variants "${paths[@]}"
  mapfile -t candidates < <(for p in "${paths[@]}"; do echo "${variants_of[$p]}"; done |
                            awk '!seen[$0]++')
  info_dir=${DPKG_INFO_DIR:-/var/lib/dpkg/info}
  # "DIR/pkg:arch.list:/path" (the arch is absent for some packages).
  while IFS= read -r out; do
    list_file=${out%%.list:*}
    pkg=${list_file##*/}
    owner_of[${out#*.list:}]+="${pkg%%:*} "
  done < <(grep -F -x -f <(printf '%s\n' "${candidates[@]}") "$info_dir"/*.list 2>/dev/null || true)
fi

declare -A needed=()
for entry in "${libs[@]}"; do
  bin=${entry%%$'\t'*}
  lib=${entry#*$'\t'}
  pkgs=""
  while IFS= read -r cand; do
    if [[ -n ${owner_of[$cand]:-} ]]; then pkgs=${owner_of[$cand]}; break; fi
  done <<<"${variants_of[$lib]:-}"
  if [[ -z $pkgs ]]; then
    problem "$bin: $lib belongs to no Debian package (built locally?)"
    continue
  fi
  ok=0
  for p in $pkgs; do [[ -n ${in_list[$p]:-} ]] && ok=1; done
  if ((ok)); then
    for p in $pkgs; do [[ -n ${in_list[$p]:-} ]] && needed[$p]=1; done
  else
    problem "$bin: $lib is in package $(tr ' ' ',' <<<"${pkgs% }"), not in $list"
  fi
done

if ((fail)); then
  echo "runtime image check failed (the FAIL lines above say what to add or fix)"
  exit 1
fi
# Listed packages no binary links (other than the tools) only make the image bigger.
for p in "${listed[@]}"; do
  case $p in bpftool | iproute2) continue ;; esac
  [[ -n ${needed[$p]:-} ]] || echo "note: $p is listed but no binary links a library from it"
done
echo "ok: every library of $* comes from a package in $list (${#needed[@]} packages)"
