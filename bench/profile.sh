#!/usr/bin/env bash
# Nsight Compute over one quantized-matmul configuration (run by the device tool, after bench/prepare_gpu.sh):
#   bash bench/profile.sh WTYPE CONFIG [SKIP]
# profiles the SKIP-th launch (default 40: the M=16, 8192 x 8192 run of tilevm_qmatmul_sweep) with the full
# section set and writes under $OUT: the report, its details page, and the per-SASS-instruction source page
# (executed instructions and stall samples per line). Clocks are left alone (--clock-control none).
set -uo pipefail
OUT=${OUT:-/tmp/tilevm-gpu-out}
mkdir -p "$OUT"
BIN=.gpu/bin
export TILEVM_CACHE_DIR=/tmp/tilevm-kernel-cache
name=prof_$1_$2
timeout 400 ncu --clock-control none --set full --import-source no -k tilevm_qmatmul --launch-skip "${3:-40}" \
  --launch-count 1 -f -o "$OUT/$name" "$BIN/tilevm_qmatmul_sweep" "$1" "$2" > "$OUT/$name.log" 2>&1
echo "ncu: exit $?"
ncu -i "$OUT/$name.ncu-rep" --page details > "$OUT/$name.details.txt" 2>&1
ncu -i "$OUT/$name.ncu-rep" --page source --csv --print-source sass > "$OUT/$name.sass.csv" 2>&1
grep -E "Duration|Throughput|Executed Ipc|Issue Slots|No Eligible|Warp Cycles Per Issued|Achieved Occupancy|Registers Per" \
  "$OUT/$name.details.txt" | head -30
