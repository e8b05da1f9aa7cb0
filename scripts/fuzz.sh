#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (clang, AddressSanitizer + UndefinedBehaviorSanitizer, in
# build-fuzz) and runs each for SECONDS (default 20), from seed corpora made of the examples and the golden
# tests' inputs plus what earlier runs found. Fails when a target fails: a crash, a sanitizer report, a
# hang (an input that takes more than 25 s: fuzz/README.md says why not 10), an allocation past 2 GiB or an unlocated error
# (fuzz/README.md). The failing input is saved under build-fuzz/findings/TARGET/; once its bug is fixed,
# copy it into fuzz/regressions/TARGET/ (replayed by CTest in every build).
#
#   scripts/fuzz.sh [SECONDS-PER-TARGET] [TARGET...]      # CI: scripts/fuzz.sh 20
#
# $TILEVM_FUZZ_BUILD chooses the build directory; $CMAKE_CXX_COMPILER_LAUNCHER (ccache) is honoured.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then targets=(tile_parser layout_parser dtype_parser npy_reader interpreter); fi
build=${TILEVM_FUZZ_BUILD:-build-fuzz}

if ! command -v clang++ >/dev/null; then
  echo "fuzz: clang++ is not installed (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DTILEVM_FUZZ=ON >/dev/null
cmake --build "$build" --target tilevm_fuzz_targets

# Seed corpora, made fresh each run from the inputs of the examples and the golden tests.
seeds="$build/seeds"
rm -rf "$seeds"
mkdir -p "$seeds"/{tile,layout,dtype,npy}
mapfile -t tiles < <(find examples tests/golden -name '*.tile' | sort)
for f in "${tiles[@]}"; do cp "$f" "$seeds/tile/$(echo "$f" | tr / _)"; done
for f in $(find tests/golden -name '*.npy' | sort); do cp "$f" "$seeds/npy/$(echo "$f" | tr / _)"; done
# Layouts: the expressions of the `tilevm layout` cases and the layout constants of the programs.
{
  sed -n 's/^layout "\([^"]*\)".*/\1/p' tests/golden/layout/*.cmd
  sed -n 's/^[A-Za-z_][A-Za-z_0-9]* *= *\(\(local\|spatial\|column_\|repeat\|replicate\|swizzle\|reduce\|register_layout\|compose\|divide\|(\).*\)$/\1/p' \
    "${tiles[@]}" | sed 's/ *#.*//'
} | sort -u | awk -v dir="$seeds/layout" '{ f = sprintf("%s/%04d", dir, NR); printf "%s", $0 > f; close(f) }'
# Type names: the `tilevm dtype` cases and every type the programs name.
{
  sed -n 's/^dtype \([^ ]*\).*/\1/p' tests/golden/dtype/*.cmd
  grep -ohE '\b(bool|bf16|[iuf][0-9]+(e[0-9]+m[0-9]+)?)\b' "${tiles[@]}"
} | sort -u | awk -v dir="$seeds/dtype" '{ f = sprintf("%s/%04d", dir, NR); printf "%s", $0 > f; close(f) }'
# A dictionary of the language's words lets the fuzzer splice whole names into programs.
grep -ohE '\b[A-Za-z_][A-Za-z_0-9]*\b' "${tiles[@]}" | sort -u | sed 's/.*/"&"/' > "$build/tile.dict"
printf '"%s"\n' local spatial column_local column_spatial repeat column_repeat replicate compose divide \
  reduce swizzle register_layout dims= dim= log_step= shape= mode_shape= spatial_modes= local_modes= \
  > "$build/layout.dict"

failed=()
for t in "${targets[@]}"; do
  case $t in
    tile_parser | interpreter) kind=tile ;;
    layout_parser) kind=layout ;;
    dtype_parser) kind=dtype ;;
    npy_reader) kind=npy ;;
    *) echo "fuzz: unknown target '$t'" >&2; exit 2 ;;
  esac
  dict=()
  if [ -f "$build/$kind.dict" ]; then dict=(-dict="$build/$kind.dict"); fi
  corpus="$build/corpus/$t"  # grows across runs on this machine
  findings="$build/findings/$t"
  mkdir -p "$corpus" "$findings"
  echo "fuzz: $t for $seconds s"
  if ! "$build/bin/tilevm_fuzz_$t" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2560 \
      -malloc_limit_mb=2048 -max_len=16384 -print_final_stats=1 "${dict[@]}" \
      -artifact_prefix="$findings/" "$corpus" "$seeds/$kind" "fuzz/regressions/$t" \
      >"$build/fuzz-$t.log" 2>&1; then
    failed+=("$t")
    tail -n 60 "$build/fuzz-$t.log" >&2
  fi
  grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' "$build/fuzz-$t.log" | tail -n 2 || true
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]} (inputs in $build/findings/; logs $build/fuzz-TARGET.log)" >&2
  exit 1
fi
echo "fuzz: every target ran $seconds s without a failure"
