// The configurations the autotuner considers for one quantized-matmul problem.
//
// The space is declared by rules on the problem's sizes, never by listing shapes (P = the smallest power of
// two >= M, clamped to 16..128):
//   block_m   P, and also P / 2 when P == 128: a block taller than M only pads, and below 128 rows the
//             weight traffic (read once per block row) dominates, so fewer block rows win; at prefill sizes
//             half-height blocks double the blocks along M.
//   warps     each warp computes a piece_m x piece_n piece of C: piece_m = block_m up to 32 rows, else
//             32 or 64 (a warp reuses its B fragments over all its rows); piece_n is 32 or 64, or 16 in a
//             32-wide block (so that small N still gets 2 warps); at least 32 x 32 when block_m >= 64
//             (big pieces amortize the shared loads where compute matters); a block has 2 to 8 warps, or
//             1 in a 32-wide block (narrower pieces cannot hold whole words of odd-width codes at G = 32).
//   block_n   32..256, at most the smallest power of two >= N (a wider block only pads).
//   slice_k   128 where G (or per channel) and block_k >= 128 allow, else 64, or 32 when G is 32 (a slice
//             must not straddle a group); a larger slice divides the per-slice fixed work.
//   block_k   64..256, at most the smallest power of two >= K (at least 64).
//   stages    2..5 with 256 <= stages * block_k <= 768: enough K in flight to hide DRAM latency, not so
//             much that shared memory caps the blocks per SM.
//   split_k   1, 2, 4, 8, 16 (and 3 for the wgmma forms from M = 32, below) while each split keeps >= 2
//   k-tiles (the pipeline has something to overlap)
//             and the blocks stay few (tiles * split_k <= 512, about two waves of 2 blocks per SM on 132
//             SMs): beyond that the machine is full without it and split-K only adds partial-sum traffic.
//   warps_k   for decode (block_m <= 32, at most 4 warps, weights that fit ATYPE) also 2, 4 or 8 groups of
//             warps along K with slice_k = G (128 per channel), block_k = slice_k * warps_k, 3 or 4 stages,
//             split_k 1 or 2 (each keeping two k-tiles): one launch instead of split-K's two.
//   swapped   for M <= 8 (weights that fit ATYPE) also block_m 8, the mma's operands
//             swapped (QMatmulConfig::swapped): warps of 32 columns, block_k = slice_k (128 or G), 3 or 4
//             stages, every split; on the H100 these win every M = 1 decode shape.
//   wgmma     on sm_90a targets, for every M, also the wgmma form (QMatmulConfig::wgmma): block_m the
//             16-row multiple >= M (at most 256) and, where that passes 128, also 128 (two block rows fill
//             twice the SMs; register A past 128 rows needs two warpgroups); one or two warpgroups (block_n
//             64 or 128), block_k = slice_k of 64 or 128 (256 per channel), 3 or 4 stages, every split and
//             from M = 32 3 (one block per SM: 80 tiles fill 132 SMs best in three); the mid batches' form (M
//             = 64: 45 us against 95 us for the mma.sync forms on the H200 at 8192 x 8192). Below M = 32 its
//             register-A variant wins some decode shapes too (the H100 at M = 16, 14336 x 4096: 23.5 us
//             against 34.0; docs/performance.md, fourteenth session).
// Each candidate is then filtered by check_config (shared memory, thread limits, whole code words per
// thread, divisibility). Last comes dequant_gemm (dequantize, then cuBLAS), a candidate for every shape: the
// cost model ranks it, and it only wins where the GEMM is compute-bound (prefill).
// Decode shapes (M 1..64, K and N in the thousands) get about 100-450 configurations on an H100-like target
// (355 at 1 x 8192 x 8192, 327 at 16, 437 at 64), prefill (M >= 1024) about 200; the cost model
// (cost_model.h) then picks the few worth compiling and timing.
#pragma once

#include <vector>

#include "tilevm/ops/qmatmul/qmatmul.h"
#include "tilevm/target/target.h"

namespace tilevm::ops {

struct ConfigSpaceOptions {
  bool dequant_gemm = true;  // false: only the fused template (the interpreter has no cuBLAS)
  // The limits check_config applies (threads and shared memory per block); nullptr: the H100 SXM's.
  const target::Target* target = nullptr;
};

// The valid configurations for `problem`, in a fixed order. @throws tilevm::Error when the problem itself
// is invalid (check_problem).
std::vector<QMatmulConfig> qmatmul_config_space(const QMatmulProblem& problem,
                                                const ConfigSpaceOptions& options = {});

}  // namespace tilevm::ops
