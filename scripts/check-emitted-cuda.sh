#!/usr/bin/env bash
# Proves that the code generator's output did not change: builds tilevm_emit_corpus (tools/emit_corpus/), which
# emits every .tile program of examples/ and tests/ and the quantized-matmul configurations of the tuner's
# space for a fixed list of problems, and compares one hash per program or problem with the committed
# tests/emitted_cuda/corpus.txt.
#
#   scripts/check-emitted-cuda.sh [BUILD_DIR]            exit 1 and list the groups that differ
#   scripts/check-emitted-cuda.sh --update [BUILD_DIR]   rewrite corpus.txt (a change of emitted code on purpose)
#
# To find which configuration of a differing group changed, run the tool without --summary in both builds
# (an older commit's worktree and this one) and diff; `--dump NAME` prints one entry's source.
set -euo pipefail
cd "$(dirname "$0")/.."
update=0
if [ "${1:-}" = "--update" ]; then update=1; shift; fi
build=${1:-build}
[ -f "$build/build.ninja" ] || [ -f "$build/Makefile" ] || cmake -S . -B "$build" -G Ninja >/dev/null
cmake --build "$build" --target tilevm_emit_corpus >/dev/null
expected=tests/emitted_cuda/corpus.txt
actual=$(mktemp)
trap 'rm -f "$actual"' EXIT
"$build/bin/tilevm_emit_corpus" --source-dir . --summary > "$actual"
if [ $update -eq 1 ]; then
  cp "$actual" "$expected"
  echo "updated $expected ($(wc -l < "$expected") groups)"
  exit 0
fi
if diff -u "$expected" "$actual"; then
  echo "emitted CUDA unchanged: $(wc -l < "$expected") groups"
else
  echo "emitted CUDA differs from $expected (lines above: - committed, + now)" >&2
  exit 1
fi
