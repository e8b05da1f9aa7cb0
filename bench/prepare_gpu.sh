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
git rev-parse HEAD > .gpu/commit
git status --porcelain | grep -q . && echo "dirty" >> .gpu/commit || true
ls -la .gpu/bin
