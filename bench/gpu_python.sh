#!/usr/bin/env bash
# The Python package on the GPU machine (bench/gpu.sh calls it when .gpu/wheels exists): installs the wheel of
# bench/prepare_gpu_python.sh, runs the GPU tests (pytest -m gpu; none may skip) and the benchmarks (the
# quantized matmul's latency, the tile layer's kernels from PyTorch; PYTHON_BENCH=0 skips them).
#   bash bench/gpu_python.sh [OUT_DIR]
set -uo pipefail
OUT=${1:-${OUT:-/tmp/tilevm-gpu-out}}
mkdir -p "$OUT"
export TILEVM_CACHE_DIR=${TILEVM_CACHE_DIR:-/tmp/tilevm-kernel-cache}
export TILEVM_SOURCE_DIR=$PWD
export PYTHONUNBUFFERED=1
site=/tmp/tilevm-python-site
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$site" .gpu/wheels/tilevm-*.whl ||
  { echo "gpu_python.sh: cannot install .gpu/wheels (run bench/prepare_gpu_python.sh)"; exit 1; }
export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
status=0
# The two-GPU test (tensor parallelism over NCCL) only with TILEVM_TEST_NCCL=1, on a machine of 2 GPUs.
marks="gpu and not nccl"
[ "${TILEVM_TEST_NCCL:-0}" = 1 ] && marks="gpu"
echo "== pytest -m '$marks' python/tests"
python3 -m pytest -q -p no:cacheprovider -m "$marks" -rs python/tests 2>&1 | tee "$OUT/python_gpu_tests.log" | tail -30
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
grep -qE "[0-9]+ passed" "$OUT/python_gpu_tests.log" || { echo "gpu_python.sh: no GPU test passed"; status=1; }
grep -qE "[0-9]+ skipped" "$OUT/python_gpu_tests.log" && { echo "gpu_python.sh: GPU tests skipped on a GPU machine"; status=1; }
if [ "${PYTHON_BENCH:-1}" != 0 ]; then
  echo "== python/benchmarks/qmatmul_latency.py"
  timeout "${BENCH_TIMEOUT:-300}" python3 python/benchmarks/qmatmul_latency.py 2>&1 | tee "$OUT/python_bench.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  echo "== python/benchmarks/tile_kernels.py"
  timeout "${BENCH_TIMEOUT:-300}" python3 python/benchmarks/tile_kernels.py 2>&1 | tee "$OUT/python_tile_bench.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
# The end-to-end decoder layer (python/benchmarks/decoder_layer.py): minutes, so only when asked for.
if [ "${PYTHON_DECODER:-0}" = 1 ]; then
  echo "== python/benchmarks/decoder_layer.py ${DECODER_ARGS:-}"
  timeout "${DECODER_TIMEOUT:-480}" python3 python/benchmarks/decoder_layer.py ${DECODER_ARGS:-} 2>&1 |
    tee "$OUT/python_decoder.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
echo "gpu_python.sh: exit $status"
exit $status
