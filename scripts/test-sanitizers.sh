#!/usr/bin/env bash
# CI's second half (README.md's test command runs it after the normal build and tests):
#   1. an AddressSanitizer + UndefinedBehaviorSanitizer build of the library, the tool and the C++ tests in
#      build-asan (-DTILEVM_SANITIZE=ON; any report aborts the test that made it), and CTest over it: the
#      unit tests, the golden tests and the fuzz replays, without the GPU tests (no GPU in CI), the install
#      test and the format check (the normal build runs those);
#   2. scripts/fuzz.sh: every fuzz target for FUZZ_SECONDS each (default 20).
#
#   scripts/test-sanitizers.sh [FUZZ_SECONDS]          # $TILEVM_ASAN_BUILD chooses the build directory
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TILEVM_ASAN_BUILD:-build-asan}
cmake -S . -B "$build" -G Ninja -DTILEVM_SANITIZE=ON >/dev/null
targets=(tilevm_unit_tests tilevm_cli)
for t in tile_parser interpreter layout_parser dtype_parser npy_reader; do targets+=("tilevm_fuzz_replay_$t"); done
cmake --build "$build" --target "${targets[@]}"
# detect_leaks: a leak fails the test too. halt_on_error and print_stacktrace make a report one readable
# failure. The interpreter tests are CPU-heavy under ASan: each still has CTest's timeout of the normal build.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir "$build" -LE gpu -E '^(install/|format/)' --output-on-failure -j2
scripts/fuzz.sh "${1:-20}"
