#!/usr/bin/env bash
# The one GPU script: run by the device tool on the GPU machine from the repository root, with the binaries
# of bench/prepare_gpu.sh carried in .gpu/. Writes every log under $OUT (device.txt names the machine).
set -uo pipefail
OUT=${OUT:-/tmp/tilevm-gpu-out}
mkdir -p "$OUT"
BIN=.gpu/bin
export TILEVM_CACHE_DIR=/tmp/tilevm-kernel-cache
export TILEVM_SOURCE_DIR=$PWD  # the tests find examples/ here, not where they were built
{
  echo "commit: $(cat .gpu/commit 2>/dev/null | tr '\n' ' ')"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nvcc --version | tail -2 | head -1
} > "$OUT/device.txt" 2>&1
cat "$OUT/device.txt"
status=0
# GPU tests (they skip themselves where there is no GPU; here none may skip).
"$BIN/tilevm_unit_tests" --gtest_filter="${GPU_TEST_FILTER:-*Gpu*:*GPU*}" 2>&1 | tee "$OUT/gpu_tests.log" | tail -40
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
grep -q "SKIPPED" "$OUT/gpu_tests.log" && { echo "gpu.sh: some GPU tests skipped on a GPU machine"; status=1; }
# Extra steps (examples on the GPU, benchmarks) are appended here as the backend grows.
if [ -f bench/gpu_extra.sh ]; then bash bench/gpu_extra.sh "$BIN" "$OUT" || status=1; fi
echo "gpu.sh: exit $status"
exit $status
