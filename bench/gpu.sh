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
# GPU tests: the CTest label gpu, listed by bench/prepare_gpu.sh in .gpu/gpu_tests.txt (GPU_TEST_FILTER, a
# --gtest_filter, runs a subset instead). They skip themselves where there is no GPU; here none may skip.
filter=${GPU_TEST_FILTER:-$(paste -sd: .gpu/gpu_tests.txt 2>/dev/null)}
[ -n "$filter" ] || { echo "gpu.sh: no GPU tests listed (.gpu/gpu_tests.txt: run bench/prepare_gpu.sh)"; status=1; }
"$BIN/tilevm_unit_tests" --gtest_filter="${filter:-NoGpuTestsListed}" 2>&1 | tee "$OUT/gpu_tests.log" | tail -40
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
grep -q "^\[  PASSED  \] [1-9]" "$OUT/gpu_tests.log" || { echo "gpu.sh: no GPU test passed"; status=1; }
grep -q "SKIPPED" "$OUT/gpu_tests.log" && { echo "gpu.sh: some GPU tests skipped on a GPU machine"; status=1; }
# compute-sanitizer (memcheck, racecheck, synccheck) over the same GPU tests, and tilevm run --gpu ==
# --interp (bench/gpu_extra.sh: SANITIZER=0 skips the sanitizer, which takes minutes; SANITIZER_TOOLS and
# SANITIZER_FILTER choose a subset).
if [ -f bench/gpu_extra.sh ]; then bash bench/gpu_extra.sh "$BIN" "$OUT" "$filter" || status=1; fi
# The Python package (bench/prepare_gpu_python.sh built its wheel): its GPU tests and latency benchmark.
if [ -d .gpu/wheels ]; then
  bash bench/gpu_python.sh "$OUT" || status=1
else
  echo "gpu.sh: no .gpu/wheels: the Python package is not tested (bench/prepare_gpu_python.sh)"
fi
# The benchmarks of docs/performance.md: BENCH="decode dtypes prefill" (the default) or a subset, or
# "tile" (the tile layer's GEMMs), "superopt" (the superoptimizer's workloads beside PyTorch),
# BENCH_ARGS extra options for each (e.g. --quick). Every table goes to $OUT/bench_<workloads>.txt and .csv.
# SUPEROPT_WORKLOADS="gqa_decode lora" limits "superopt" to those workloads of bench/superopt/.
# SUPEROPT_ARGS: options for each `tilevm superopt` of the fused graphs (default "--block-threads 128,256":
# both lowerings tried, the faster kept).
# SUPEROPT_TORCH=0 leaves out bench/superopt_torch.py (its torch.compile runs take minutes).
# SUPEROPT_BASELINE_BIN=.gpu/bin/tilevm_base (an earlier build, stripped, copied there by hand) times every
# fused graph with that binary too, just before the current one: an A/B on one machine in one run.
export TILEVM_TUNE_CACHE=$OUT/tuning.json
for w in ${BENCH-decode dtypes prefill}; do
  extra=${BENCH_ARGS:-}
  if [ "$w" = tile ]; then
    # The tile layer's GEMMs beside their hand-written counterparts, on the GEMM workloads with cuBLAS.
    for f in examples/gemm_f16_wgmma.tile examples/gemm_f16_pingpong.tile examples/gemm_f16_pingpong_cluster.tile examples/tile/gemm_f16.tile examples/tile/gemm_bias_relu.tile \
             examples/tile/dequant_gemm.tile examples/tile/dequant_gemm_rs.tile \
             examples/tile/dequant_gemm_rs_groups.tile examples/tile/dequant_gemm_rs_packed.tile; do
      name=$(basename "$f" .tile)
      echo "== tilevm bench --gemm $f $extra"
      timeout "${BENCH_TIMEOUT:-300}" "$BIN/tilevm" bench --gemm "$f" $extra > "$OUT/bench_tile_$name.txt" \
        2> "$OUT/bench_tile_$name.err"
      rc=$?
      cat "$OUT/bench_tile_$name.txt"; tail -3 "$OUT/bench_tile_$name.err"
      [ $rc -eq 0 ] || { echo "tilevm bench --gemm $f: exit $rc"; status=1; }
    done
    continue
  fi
  if [ "$w" = superopt ]; then
    # Each workload's fused graph (bench/superopt/NAME_fused.graph), verified, lowered, checked and timed
    # beside the program run op by op; then PyTorch eager and torch.compile on the same workloads.
    # SUPEROPT_WORKLOADS="gqa_decode lora" runs only those (default: every workload in bench/superopt/).
    for f in bench/superopt/*_fused.graph; do
      name=$(basename "$f" _fused.graph)
      if [ -n "${SUPEROPT_WORKLOADS:-}" ] && ! [[ " $SUPEROPT_WORKLOADS " == *" $name "* ]]; then continue; fi
      # 3 stages: the gated MLP's best of 2, 3 and 4 on the H100, and attention's [64, 128] tiles fit.
      # Other schedules of the same algorithm (NAME_fused.*.graph) are candidates too: the fastest is the answer.
      candidates=(--candidate "$f")
      for v in bench/superopt/"${name}"_fused.*.graph; do [ -f "$v" ] && candidates+=(--candidate "$v"); done
      if [ -n "${SUPEROPT_BASELINE_BIN:-}" ]; then
        # An earlier build of tilevm (carried in .gpu/) on the same graphs, first, for an A/B in one run.
        echo "== baseline $SUPEROPT_BASELINE_BIN superopt bench/superopt/$name.graph ${candidates[*]}"
        timeout "${BENCH_TIMEOUT:-300}" "$SUPEROPT_BASELINE_BIN" superopt "bench/superopt/$name.graph" "${candidates[@]}" \
          --gpu --stages 3 ${SUPEROPT_ARGS:---block-threads 128,256} > "$OUT/superopt_$name.baseline.txt" 2>&1
        grep "^time\|^alone\|^candidate" "$OUT/superopt_$name.baseline.txt"
      fi
      echo "== tilevm superopt bench/superopt/$name.graph ${candidates[*]} --gpu --stages 3 ${SUPEROPT_ARGS:---block-threads 128,256}"
      timeout "${BENCH_TIMEOUT:-300}" "$BIN/tilevm" superopt "bench/superopt/$name.graph" "${candidates[@]}" --gpu \
        --stages 3 ${SUPEROPT_ARGS:---block-threads 128,256} \
        --out "$OUT/superopt_$name" > "$OUT/superopt_$name.txt" 2> "$OUT/superopt_$name.err"
      rc=$?
      grep -v "^ \|^kernel\|^}" "$OUT/superopt_$name.txt"; tail -3 "$OUT/superopt_$name.err"
      [ $rc -eq 0 ] || { echo "tilevm superopt $name: exit $rc"; status=1; }
    done
    # Programs without a fused graph beside them are searched (16 threads here), checked and timed.
    for f in bench/superopt/*.graph; do
      name=$(basename "$f" .graph)
      case $name in *_fused) continue ;; esac
      [ -f "bench/superopt/${name}_fused.graph" ] && continue
      if [ -n "${SUPEROPT_WORKLOADS:-}" ] && ! [[ " $SUPEROPT_WORKLOADS " == *" $name "* ]]; then continue; fi
      echo "== tilevm superopt $f --gpu --max-ops 5 --grid 1,2,4,8,16 --loop 1,2,4 --budget 60"
      timeout "${BENCH_TIMEOUT:-300}" "$BIN/tilevm" superopt "$f" --gpu --max-ops 5 --grid 1,2,4,8,16 --loop 1,2,4 \
        --budget 60 --out "$OUT/superopt_$name" > "$OUT/superopt_$name.txt" 2> "$OUT/superopt_$name.err"
      rc=$?
      grep -v "^ \|^kernel\|^}" "$OUT/superopt_$name.txt"; grep -v "^  " "$OUT/superopt_$name.err" | tail -5
      [ $rc -eq 0 ] || { echo "tilevm superopt $name: exit $rc"; status=1; }
    done
    if [ "${SUPEROPT_TORCH:-1}" != 0 ]; then  # SUPEROPT_TORCH=0: PyTorch's times in a call of their own
      echo "== python3 bench/superopt_torch.py ${SUPEROPT_WORKLOADS:-}"
      timeout "${BENCH_TIMEOUT:-300}" python3 bench/superopt_torch.py ${SUPEROPT_WORKLOADS:-} > "$OUT/superopt_torch.txt" 2>&1 || status=1
      cat "$OUT/superopt_torch.txt"
    fi
    continue
  fi
  [ "$w" = dtypes ] && extra="${BENCH_DTYPES_ARGS:---quick --max-candidates 8}"
  echo "== tilevm bench --workloads $w $extra"
  timeout "${BENCH_TIMEOUT:-300}" "$BIN/tilevm" bench --workloads "$w" $extra --csv "$OUT/bench_$w.csv" \
    > "$OUT/bench_$w.txt" 2> "$OUT/bench_$w.err"
  rc=$?
  cat "$OUT/bench_$w.txt"; tail -3 "$OUT/bench_$w.err"
  [ $rc -eq 0 ] || { echo "tilevm bench --workloads $w: exit $rc"; status=1; }
done
# PROFILE="ARGS": Nsight Compute over `tilevm ARGS` (e.g. "qmatmul --m 64 --n 8192 --k 8192 --wtype u4 --config
# NAME --gpu"), the clocks left alone; PROFILE_KERNEL (a regex, default qmatmul$) picks the kernels and
# PROFILE_SET the sections (default "--set full"). The report's text goes to $OUT/profile.txt.
if [ -n "${PROFILE:-}" ]; then
  if command -v ncu >/dev/null; then
    echo "== ncu ${PROFILE_SET:---set full} -k regex:${PROFILE_KERNEL:-qmatmul\$} tilevm $PROFILE"
    timeout "${BENCH_TIMEOUT:-300}" ncu --clock-control none ${PROFILE_SET:---set full} \
      -k "regex:${PROFILE_KERNEL:-qmatmul\$}" -c "${PROFILE_COUNT:-1}" "$BIN/tilevm" $PROFILE > "$OUT/profile.txt" 2>&1 || status=1
    grep -E "Duration|Throughput|Registers|Achieved Occupancy|Warp Cycles Per Issued|Stall|Bank" "$OUT/profile.txt" | head -40
  else
    echo "gpu.sh: PROFILE given but ncu is not installed"; status=1
  fi
fi
echo "gpu.sh: exit $status"
exit $status
