#!/usr/bin/env bash
# scripts/format.sh: clang-format (the repository's .clang-format: Google
# style, 100 columns) over the tracked C++ and CUDA sources.
#   scripts/format.sh            rewrite the files in place
#   scripts/format.sh --check    change nothing; list the files that differ
#                                and exit 1 when any does
#   scripts/format.sh [--check] PATH...   only these files or folders
# The formatter is clang-format-14 (installed with clang-14, setup.sh's apt
# list), or $CLANG_FORMAT. Files under fuzz/corpus and fuzz/regressions are
# data, never formatted.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

check=0
if [[ "${1:-}" == "--check" ]]; then
  check=1
  shift
fi
formatter="${CLANG_FORMAT:-clang-format-14}"
if ! command -v "$formatter" >/dev/null; then
  echo "format.sh: $formatter not found (apt-get install clang-format-14, or set CLANG_FORMAT)" >&2
  exit 2
fi

mapfile -t files < <(git ls-files -- "${@:-.}" |
  grep -E '\.(h|cpp|cu|cuh|cc)$' | grep -vE '^fuzz/(corpus|regressions)/' || true)
if [[ ${#files[@]} -eq 0 ]]; then
  echo "format.sh: no C++ files under ${*:-.}" >&2
  exit 0
fi

if [[ $check -eq 0 ]]; then
  printf '%s\0' "${files[@]}" | xargs -0 -n 50 "$formatter" -i --style=file
  echo "format.sh: formatted ${#files[@]} files"
  exit 0
fi
# One clang-format call per 50 files; a file that differs gets
# "path:line:col: error: code should be clang-formatted" lines.
mapfile -t differ < <(printf '%s\0' "${files[@]}" |
  xargs -0 -n 50 "$formatter" --style=file --dry-run --Werror 2>&1 |
  grep -oE '^[^:[:space:]]+:[0-9]+:[0-9]+: error' | cut -d: -f1 | sort -u || true)
if [[ ${#differ[@]} -gt 0 ]]; then
  printf 'format.sh: not formatted: %s\n' "${differ[@]}" >&2
  echo "format.sh: ${#differ[@]} of ${#files[@]} files differ (run scripts/format.sh)" >&2
  exit 1
fi
echo "format.sh: ${#files[@]} files formatted"
