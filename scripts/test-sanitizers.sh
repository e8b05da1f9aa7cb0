#!/usr/bin/env bash
# CI's second half (README.md's test command runs it after the normal build and tests), over one clang build
# with AddressSanitizer + UndefinedBehaviorSanitizer and the fuzzer's coverage (-DTILEVM_FUZZ=ON, in
# build-fuzz), which serves both steps:
#   1. the library, the tool and the C++ tests (any report aborts the test that made it), and CTest over them:
#      the unit tests, the golden tests and the fuzz replays, without the GPU tests (no GPU in CI), the install
#      test and the format check (the normal build runs those);
#   2. scripts/fuzz.sh: every fuzz target for FUZZ_SECONDS each (default 20), in the same build.
# One build instead of a g++ sanitizer build beside the fuzzers' clang one: the two compiled the library
# twice with the same sanitizers, and CI had come within a minute of its limit (stop 38: 5371 s of 5400).
# -DTILEVM_SANITIZE=ON (g++) still builds the first half alone for whoever wants g++'s view.
#
#   scripts/test-sanitizers.sh [FUZZ_SECONDS]          # $TILEVM_FUZZ_BUILD chooses the build directory
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TILEVM_FUZZ_BUILD:-build-fuzz}
if ! command -v clang++ >/dev/null; then
  echo "test-sanitizers: clang++ is not installed (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DTILEVM_FUZZ=ON -DTILEVM_BUILD_TESTS=ON >/dev/null
targets=(tilevm_unit_tests tilevm_cli tilevm_fuzz_targets)
for t in tile_parser interpreter layout_parser dtype_parser npy_reader; do targets+=("tilevm_fuzz_replay_$t"); done
cmake --build "$build" --target "${targets[@]}"
# detect_leaks: a leak fails the test too. halt_on_error and print_stacktrace make a report one readable
# failure. The interpreter tests are CPU-heavy under ASan: each still has CTest's timeout of the normal build.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# The sweeps (each over 1 s in the normal build: every example compiled by NVRTC, the qmatmul forms' full
# interpreter runs, thousands of mutated programs or graphs) run 10 to 60 times slower under the sanitizers
# and coverage, 20 minutes together, while the code they drive is the code the other tests drive on smaller
# cases; they run in the normal build. Measured 2026-11-29 (this list, README "Fuzzing and sanitizers").
sweeps=(
  CodegenCompile.EveryProgramForSm80AndSm90 CodegenFastPaths.BothPathsCompileWithNvrtc
  'ConvertersNvrtc\.' QMatmulNvrtc.EveryProgramCompiles BenchPlainRead.KernelsCompileForSm80AndSm90
  QMatmulProgram.RegisterAForm QMatmulProgram.WarpSpecializedForm QMatmulProgram.WgmmaForm
  QMatmulProgram.WarpsAlongK QMatmulProgram.SplitKSumCoversWideTiles
  PipelineFuzz.MutatedExamplesGetDiagnosticsNotCrashes TileRandomPrograms.PipelinedEqualsUnpipelinedAndTheProduct
  TileParallel.DequantGemmOfPackedWeightsOnTheInterpreter TileParallel.RegisterAGemmsOfAStepRunAsynchronously
  TileParallel.DequantGemmOfEveryWidthOnTheInterpreter TileGemm.WarpSpecializedOnTheInterpreter
  'SuperoptMutation\.' golden/superopt/search_softmax golden/superopt/search_split ExecViewBounds.TheDifferentialTestProgramsPass
  OpsGemm.PersistentConfigurationsOnTheInterpreter LayoutHolds.AgreesWithTheDefinitionOnMixedRadices
)
# A name that matches no test (a renamed sweep) would leave the sweep in, unnoticed: fail instead.
for s in "${sweeps[@]}"; do
  if ! ctest --test-dir "$build" -N -R "$s" | grep -q 'Test *#'; then
    echo "test-sanitizers: no test matches the sweep '$s' (renamed? update the list here)" >&2
    exit 1
  fi
done
exclude="^(install/|format/)|$(IFS='|'; echo "${sweeps[*]}")"
start=$(date +%s)
ctest --test-dir "$build" -LE gpu -E "$exclude" --output-on-failure -j2
echo "test-sanitizers: CTest under the sanitizers took $(( $(date +%s) - start )) s"
TILEVM_FUZZ_BUILD=$build scripts/fuzz.sh "${1:-20}"
