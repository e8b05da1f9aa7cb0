#!/usr/bin/env bash
# Fails when a C++ file differs from what clang-format (the repository's .clang-format) makes of it.
# Fix with: scripts/check-format.sh --fix
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null; then
  echo "check-format: clang-format is not installed (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
# Source files only: the golden expectations are output, not code.
mapfile -t files < <(find cmake include src tools tests examples bench python fuzz -type f \( -name '*.cpp' -o -name '*.h' \) \
                       -not -path 'tests/golden/*' -not -path '*/build/*' 2>/dev/null | sort)
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
if ! clang-format --dry-run --Werror "${files[@]}" 2>/tmp/check-format.$$; then
  grep -E '^[^ ].*(warning|error):' /tmp/check-format.$$ | cut -d: -f1 | sort -u | sed 's/^/check-format: not formatted: /' >&2
  rm -f /tmp/check-format.$$
  echo "check-format: run scripts/check-format.sh --fix" >&2
  exit 1
fi
rm -f /tmp/check-format.$$
echo "check-format: ${#files[@]} files formatted"
