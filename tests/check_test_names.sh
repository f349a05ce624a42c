#!/usr/bin/env bash
# CTest's Catch2 discovery splits test names on ';' and mangles '[' and a leading '-': a test
# with such a name silently runs nothing. Fail the suite when one appears. A name may be split
# over several adjacent string literals (clang-format wraps long ones): they are joined first.
set -euo pipefail
cd "$(dirname "$0")"
bad=$(python3 - <<'PY'
import pathlib
import re

case = re.compile(r'TEST_CASE\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)')
for path in sorted(pathlib.Path('.').rglob('*.cc')):
    for m in case.finditer(path.read_text(encoding='utf-8', errors='replace')):
        name = ''.join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1)))
        if ';' in name or '[' in name or name.startswith('-'):
            print(f'{path}: {name}')
PY
)
if [[ -n $bad ]]; then
  echo "test names CTest cannot run (no ';', '[' or leading '-'):"
  echo "$bad"
  exit 1
fi
echo "all test names are CTest-safe"
