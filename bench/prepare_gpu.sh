#!/usr/bin/env bash
# Builds tilevm here and copies stripped binaries into .gpu/bin (ignored by git), for the device tool to
# carry to the GPU machine: they need only glibc and libstdc++ there (CUDA is loaded at run time).
#   bench/prepare_gpu.sh [BUILD_DIR]      then: device run with carry [".gpu"] and command "bash bench/gpu.sh"
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cmake -S . -B "$build" -G Ninja >/dev/null
cmake --build "$build"
rm -rf .gpu && mkdir -p .gpu/bin
for b in tilevm tilevm_unit_tests tilevm_qmatmul_sweep; do
  strip -o ".gpu/bin/$b" "$build/bin/$b"
done
# The GPU tests for bench/gpu.sh: those with the CTest label gpu (tests/CMakeLists.txt), one GoogleTest name
# a line, taken from each test's --gtest_filter (CTest's names can carry parameter values instead of indices).
ctest --test-dir "$build" -L gpu --show-only=json-v1 | grep -o '"--gtest_filter=[^"]*"' |
  sed 's/^"--gtest_filter=//; s/"$//' > .gpu/gpu_tests.txt
[ -s .gpu/gpu_tests.txt ] || { echo "prepare_gpu.sh: ctest -L gpu lists no test" >&2; exit 1; }
# The Python package's wheel for the GPU machine (.gpu/wheels; bench/gpu.sh runs its GPU tests). It needs a
# Python of the GPU machine's version here; without one the C++ binaries still go, and gpu.sh says so.
bench/prepare_gpu_python.sh "$build" || echo "prepare_gpu.sh: WARNING: no Python wheel; bench/gpu.sh will not test python/" >&2
git rev-parse HEAD > .gpu/commit
git status --porcelain | grep -q . && echo "dirty" >> .gpu/commit || true
ls -la .gpu/bin
echo "$(wc -l < .gpu/gpu_tests.txt) GPU tests in .gpu/gpu_tests.txt"
