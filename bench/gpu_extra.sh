#!/usr/bin/env bash
# Called by bench/gpu.sh: compute-sanitizer memcheck and racecheck over the interpreter-vs-GPU test (every
# example and test program on the GPU). Logs under $2.
BIN=$1
OUT=$2
status=0
if command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck; do
    timeout 400 compute-sanitizer --tool "$tool" --error-exitcode 9 \
      "$BIN/tilevm_unit_tests" --gtest_filter="${SANITIZER_FILTER:-CodegenGpu*}" > "$OUT/sanitizer_$tool.log" 2>&1
    rc=$?
    echo "compute-sanitizer $tool: exit $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer_$tool.log" | tail -1)"
    [ $rc -eq 0 ] || status=1
  done
else
  echo "compute-sanitizer not found"
  status=1
fi
exit $status
