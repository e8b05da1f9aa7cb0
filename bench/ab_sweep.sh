#!/usr/bin/env bash
# An A/B of two builds of the quantized matmul on one GPU in one run: tilevm_qmatmul_sweep of an earlier
# build (BASE, stripped and copied by hand, e.g. to .gpu/bin/tilevm_qmatmul_sweep_base) and of this one, each
# configuration timed by both, one right after the other, so that drift between them stays small.
#   bash bench/ab_sweep.sh BASE_BIN WTYPE CONFIG...      (logs under $OUT: ab_<wtype>.txt)
set -uo pipefail
OUT=${OUT:-/tmp/tilevm-gpu-out}
mkdir -p "$OUT"
export TILEVM_CACHE_DIR=/tmp/tilevm-kernel-cache
base=$1 wtype=$2
shift 2
{
  status=0
  for cfg in "$@"; do
    for bin in "$base" .gpu/bin/tilevm_qmatmul_sweep; do
      echo "== $bin $wtype $cfg"
      timeout 300 "$bin" "$wtype" "$cfg" || { echo "$bin $cfg: exit $?"; status=1; }
    done
  done
  exit $status
} 2>&1 | tee "$OUT/ab_$wtype.txt"
exit "${PIPESTATUS[0]}"
