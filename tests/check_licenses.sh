#!/usr/bin/env bash
# netqos is Apache-2.0 (LICENSE), but its BPF programs cannot be: the kernel refuses a program that
# calls a GPL-only helper unless the program's license section names a GPL-compatible licence. So
# the BPF C (every *.bpf.c, and the headers in bpf/ they include) is dual-licensed
# "(BSD-2-Clause OR GPL-2.0-only)" (bpf/LICENSE says which files and why). This check keeps it so:
# it fails, naming the file, when
#   - LICENSE (Apache-2.0), bpf/LICENSE or a licence text in LICENSES/ is missing;
#   - a *.bpf.c or a bpf/*.h does not start with the SPDX line of the dual licence (a file copied
#     from elsewhere, or a new one, would otherwise carry no licence or the wrong one);
#   - a *.bpf.c has no license section, more than one, or one other than "Dual BSD/GPL" (the
#     string the kernel reads: "GPL" alone would declare a licence the file does not have).
#
#   check_licenses.sh
set -euo pipefail
cd "$(dirname "$0")/.."

spdx='SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)'
section='char LICENSE[] SEC("license") = "Dual BSD/GPL";'
failed=0
fail() {  # file, what is wrong
  echo "licences: $1: $2"
  failed=1
}

# The licence texts. LICENSE is what a reader (and a packager's scanner) looks at first.
[[ -f LICENSE ]] || fail LICENSE "missing (the Apache-2.0 text of the whole project)"
if [[ -f LICENSE ]] && ! grep -q 'Apache License' LICENSE; then
  fail LICENSE "is not the Apache License 2.0 text"
fi
[[ -f bpf/LICENSE ]] || fail bpf/LICENSE "missing (which files are dual-licensed, and why)"
for f in LICENSES/BSD-2-Clause.txt LICENSES/GPL-2.0-only.txt; do
  [[ -f $f ]] || fail "$f" "missing (a licence text of the BPF programs)"
done

# The BPF sources: every *.bpf.c (bpf/, tests/bpf/, bench/bpf/) and the headers of bpf/, which the
# programs include. From git where there is one, so that build trees are not searched.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t programs < <(git ls-files -- '*.bpf.c')
  mapfile -t headers < <(git ls-files -- 'bpf/*.h')
else  # an exported tree
  mapfile -t programs < <(find bpf tests bench -type f -name '*.bpf.c' | sort)
  mapfile -t headers < <(find bpf -type f -name '*.h' | sort)
fi
# An empty list would pass vacuously (a moved directory, a broken pattern).
((${#programs[@]} >= 4)) || fail "bpf/" "only ${#programs[@]} *.bpf.c files found"
((${#headers[@]} >= 2)) || fail "bpf/" "only ${#headers[@]} headers found"

for f in "${programs[@]}" "${headers[@]}"; do
  # The kernel's convention: the SPDX line is the file's first line, // in .c, /* */ in .h.
  case $f in
    *.c) want="// $spdx" ;;
    *) want="/* $spdx */" ;;
  esac
  first=$(head -n 1 -- "$f")
  [[ $first == "$want" ]] || fail "$f" "first line is '$first', want '$want'"
done

for f in "${programs[@]}"; do
  mapfile -t sections < <(grep -F 'SEC("license")' -- "$f" || true)
  if ((${#sections[@]} == 0)); then
    fail "$f" "no license section (want '$section')"
  elif ((${#sections[@]} > 1)); then
    fail "$f" "${#sections[@]} license sections (want one: '$section')"
  elif [[ ${sections[0]} != "$section" ]]; then
    fail "$f" "license section is '${sections[0]}', want '$section'"
  fi
done

if ((failed)); then
  echo "licences: see bpf/LICENSE for which files are under which licence"
  exit 1
fi
echo "licences: LICENSE present; ${#programs[@]} BPF programs and ${#headers[@]} BPF headers" \
  "dual-licensed (BSD-2-Clause OR GPL-2.0-only)"
