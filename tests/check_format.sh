#!/usr/bin/env bash
# Every C and C++ file of netqos is formatted as its .clang-format says (the top-level one for
# the C++, bpf/.clang-format's kernel style for the BPF C). Fails listing each file that is not,
# with the command that fixes it. The vendored upstream protos' generated code is not ours.
#
#   check_format.sh [CLANG_FORMAT]
set -euo pipefail
cd "$(dirname "$0")/.."
clang_format=${1:-clang-format}
command -v "$clang_format" >/dev/null || { echo "format: $clang_format not found" >&2; exit 1; }
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- 'userspace/*.cc' 'userspace/*.h' 'tests/*.cc' 'tests/*.h' \
    'tests/*.c' 'bench/*.cc' 'bench/*.h' 'fuzz/*.cc' 'fuzz/*.h' 'bpf/*.c' 'bpf/*.h')
else  # an exported tree
  mapfile -t files < <(find userspace tests bench fuzz bpf -type f \
    \( -name '*.cc' -o -name '*.h' -o -name '*.c' \) | sort)
fi
((${#files[@]} > 100)) || { echo "format: only ${#files[@]} files found" >&2; exit 1; }
# One clang-format for all the files (each still takes the nearest .clang-format): a process per
# file was a minute of the test run. Each file that differs is named in its report.
report=$("$clang_format" --dry-run -Werror "${files[@]}" 2>&1 >/dev/null) && rc=0 || rc=$?
mapfile -t bad < <(sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*/\1/p' <<<"$report" | sort -u)
if ((rc != 0 && ${#bad[@]} == 0)); then
  echo "format: $clang_format failed (exit $rc): $report" >&2
  exit 1
fi
if ((${#bad[@]} > 0)); then
  echo "format: ${#bad[@]} file(s) differ from clang-format; fix with:"
  echo "  $clang_format -i ${bad[*]}"
  exit 1
fi
echo "format: ${#files[@]} files as clang-format writes them"
