#!/usr/bin/env bash
# Called by bench/gpu.sh: compute-sanitizer memcheck and racecheck over the interpreter-vs-GPU test (every
# example and test program on the GPU). Logs under $2.
BIN=$1
OUT=$2
status=0
if [ "${SANITIZER:-1}" = 0 ]; then
  echo "compute-sanitizer: skipped (SANITIZER=0)"
elif command -v compute-sanitizer >/dev/null; then
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
# The command line: tilevm run --gpu and --interp give the same bytes.
root=$PWD
(cd tests/golden/run &&
  "$root/$BIN/tilevm" run scale.tile --gpu --in x_ptr=x.npy --arg s=2.5 --out x_ptr="$OUT/scale_gpu.npy" > "$OUT/run_gpu.log" 2>&1 &&
  "$root/$BIN/tilevm" run scale.tile --interp --in x_ptr=x.npy --arg s=2.5 --out x_ptr="$OUT/scale_interp.npy" > "$OUT/run_interp.log" 2>&1 &&
  cmp "$OUT/scale_gpu.npy" "$OUT/scale_interp.npy") && echo "tilevm run --gpu == --interp (scale.tile)" || { echo "tilevm run --gpu differs or failed"; status=1; }
exit $status
