#!/usr/bin/env bash
# Called by bench/gpu.sh: compute-sanitizer's memcheck (out-of-bounds and misaligned device accesses, leaks),
# racecheck (shared-memory hazards between threads) and synccheck (barriers in divergent code, invalid
# syncs) over the GPU tests, each tool a separate run of tilevm_unit_tests. Logs under $2.
#
#   SANITIZER=0                 skip the sanitizer (the three runs take minutes: racecheck is the slowest)
#   SANITIZER_TOOLS="memcheck"  a subset of the tools (default: memcheck racecheck synccheck)
#   SANITIZER_FILTER='TmaGpu.*' a --gtest_filter (default: $3, the GPU tests gpu.sh runs)
#   SANITIZER_TIMEOUT=600       seconds per tool; a run past it fails, naming the tool
BIN=$1
OUT=$2
status=0
if [ "${SANITIZER:-1}" = 0 ]; then
  echo "compute-sanitizer: skipped (SANITIZER=0)"
elif command -v compute-sanitizer >/dev/null; then
  filter=${SANITIZER_FILTER:-${3:-CodegenGpu*}}
  for tool in ${SANITIZER_TOOLS:-memcheck racecheck synccheck}; do
    timeout "${SANITIZER_TIMEOUT:-600}" compute-sanitizer --tool "$tool" --error-exitcode 9 \
      "$BIN/tilevm_unit_tests" --gtest_filter="$filter" > "$OUT/sanitizer_$tool.log" 2>&1
    rc=$?
    summary=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer_$tool.log" | tail -1)
    [ $rc -eq 124 ] && summary="timed out after ${SANITIZER_TIMEOUT:-600} s (SANITIZER_FILTER narrows the tests)"
    echo "compute-sanitizer $tool: exit $rc; $summary"
    [ $rc -eq 0 ] || { status=1; grep -E '^=+ (Invalid|Race|Barrier|Error)' "$OUT/sanitizer_$tool.log" | head -5; }
  done
else
  echo "compute-sanitizer not found"
  status=1
fi
# The command line: tilevm run --gpu and --interp give the same bytes.
root=$PWD
(cd tests/golden/run &&
  "$root/$BIN/tilevm" run scale.tile --gpu --in x_ptr=x.npy --arg s=2.5 --out x_ptr="$OUT/scale_gpu.npy" > "$OUT/run_gpu.log" 2>&1 &&
  "$root/$BIN/tilevm" run scale.tile --interp --in x_ptr=x.npy --arg s=2.5 --out x_ptr="$OUT/scale_interp.npy" > "$OUT/run_interp.log" 2>&1 &&
  cmp "$OUT/scale_gpu.npy" "$OUT/scale_interp.npy") && echo "tilevm run --gpu == --interp (scale.tile)" || { echo "tilevm run --gpu differs or failed"; status=1; }
exit $status
