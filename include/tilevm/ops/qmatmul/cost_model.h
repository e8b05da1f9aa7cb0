// A roofline cost model of the quantized matmul (qmatmul.h), its template's estimate(): predicts a
// configuration's time from the bytes it moves at each level, its tensor-core and dequantization work and
// how its blocks fill the machine, so that the autotuner compiles and times only the promising few of a few
// hundred configurations.
//
// Per launch the model counts
//   DRAM   the transformed weight tiles once (padding included: edge tiles are read whole), scales (+ zeros),
//          A once if it fits in L2 (else once per wave), C written; with split-K the f32 partials written
//          by every block (read back from L2 by the last block of each tile: a tail on one SM after the
//          waves)
//   L2     A re-read by every block column, the weight tiles and scales re-read by every block row
//   issue  the template's own instruction rate (QMatmulCalibration): with the current
//          template this, not DRAM, bounds decode, and it is what makes more warps and split-K win
//   MMA    2 * ceil(M/BM)*BM * ceil(N/BN)*BN * ceil(K/BK)*BK flops (padding computes too)
//   ALU    the dequantization of every weight by every block row (about 1 operation per weight on the fast
//          path, 4 on the f32 path, +1 with zero points) and the per-slice f32 scaling of the accumulators
// and runs the blocks in waves (blocks resident per SM from shared memory, threads and an estimate of
// registers). Each wave takes the longest of its resources plus the pipeline's fill latency; DRAM bandwidth
// in a wave is capped by Little's law, bytes in flight (stages - 1 tiles per resident block) / latency, and
// by what the active SMs can pull (sm_dram_gbps each), which is what makes a decode shape with too few blocks
// slow and split-K fast. A launch costs launch_us (the device's figures are target::Target's); split-K is
// one launch too. Stream-K is one wave of blocks that each take `per` k-tiles (StreamK), plus the partial
// sums of the tiles that blocks share, written and read back, and the last such tile's sum as split-K's tail.
//
// dequant_gemm is two steps: the dequantize program (reads the codes and scales, writes the dense ATYPE
// weight, DRAM-bound) and cuBLAS's GEMM (2MNK at gemm_tflops, or its bytes at DRAM speed), a launch each.
//
// The absolute figures are rough (within a factor of ~2); the ranking is what the tuner uses, and the
// timing of the survivors decides.
#pragma once

#include "tilevm/ops/qmatmul/qmatmul.h"
#include "tilevm/target/target.h"
#include "tilevm/tune/cost_model.h"

namespace tilevm::ops {

// The issue limit of the template's inner loop (copy, ldmatrix, convert, mma: a dependent chain per warp),
// in weights per ns: one warp alone, and one SM with many warps. First calibrated on the H100 with the
// template of 67cb99f (every configuration of m16 x 8192 x 8192 and m1 x 57344 x 8192, u4, timed: time ~
// weights per warp / 1.1 until an SM holds ~14 weights/ns); refitted to the sweep of c26b503 (faster
// converters, conflict-free weight loads, fewer NaN checks; docs/performance.md) with the slice overhead
// below: both about twice as fast. Re-measure when the template changes. These describe the template, not
// the device (target::Target has the device's figures).
struct QMatmulCalibration {
  double warp_weights_per_ns = 2.3;
  double sm_weights_per_ns = 29;
  // A slice's fixed work (the A fragments, the scale row and its multiply-add, the loop) in weights of one
  // thread: a thread's slice of S weights costs as much as S + slice_overhead_weights. Fitted to the sweep
  // of 3700b62 (slices of 32 / 64 / 128 at 128 columns of 4 warps: 64.3 / 44.4 / 37.2 us).
  double slice_overhead_weights = 41;
  // The wgmma form (QMatmulConfig::wgmma): a thread's cost per weight relative to the mma.sync forms' (it
  // dequantizes, scales and stores each weight to shared memory; the product runs on the tensor cores and is
  // counted by the mma bound), and a step's fixed work (three barriers, the wgmma issue and wait) in weights
  // of one thread. Fitted to the H200 runs of 98209da (docs/performance.md, "the wgmma form").
  double wgmma_weight_cost = 0.75;
  double wgmma_step_overhead_weights = 64;
  // Its warp-specialized variant (QMatmulConfig::warp_specialized): the same dequantization, a smaller fixed
  // step (no copies to issue, two barriers of the consumers instead of three of the block). Fitted to the
  // H200 runs of the _ws form beside _wg at 8192 x 8192, M = 32 to 256 (0.67 to 0.83 of its time;
  // docs/performance.md, "warp specialization").
  double ws_step_overhead_weights = 38;
  // With register A (QMatmulConfig::register_a): no shared store, proxy fence or Synchronize a step, so less
  // per weight and per step; but a step's last product runs alone (the wait before the loop goes round),
  // which adds a share of one group's tensor-core time (qmatmul_rs_group_k / block_k of the step's) to the
  // issue limit. Fitted to the H200 A/B of _ws and _wsr at M = 32 to 128 on three layers (0.67 to 0.99 of the
  // _ws time, 11 points: the model's ratio is within 0.14 of each, 0.08 rms; docs/performance.md, thirteenth
  // session).
  double rs_weight_cost = 0.55;
  double rs_step_overhead_weights = 20;
  double rs_exposed_mma = 0.9;  // the share of a group's product that runs alone
  // Its tensor-core rate relative to the target's mma_tflops (mma.sync's): with nothing between the products
  // but conversions in registers, the warpgroup MMAs run at 545 to 672 TFLOP/s on the H100 where mma_tflops
  // says 474 (M = 256 and 512 on five layers, bm128 _wsr; docs/performance.md, fourteenth session). The
  // shared-A forms stay at 1: _ws measured 457 to 512.
  double rs_mma_rate = 1.25;
  // Past 128 rows (wgmma's N) the rate grows as N / (N + rs_rows_knee), relative to 128: each product of
  // 64 x N x 16 pays a fixed issue cost that more columns amortize. Fitted to the H200 at 8192 x 8192 (one
  // wave of blocks, K = 8192): 661 TFLOP/s at 128 rows and 778-800 at 256, which is cuBLAS f16's rate there
  // (docs/performance.md, twentieth session); at 256 the factor is 1.2, which puts the model's 256-row block
  // at the target's gemm_tflops.
  double rs_rows_knee = 66;
  // Stream-K's steady state relative to split-K's (QMatmulConfig::stream_k): at each step the blocks of a
  // split read one k-tile of every column (a contiguous run of the transformed weight and one row of
  // scales), stream-K's read k-tiles scattered over K. Measured on the H200 where both make the same runs
  // (8192 x 8192 at M = 32 and 64: 128 blocks of 32 k-tiles, split 2 or stream-K): 1.09 to 1.10 of the
  // split's time (docs/performance.md, fifteenth session); 1.10 also at 128 rows on 8192 x 57344. Past 128
  // rows it grows: on the H200 at M = 256 to 1024 on three layers stream-K took 1.22 (176 rows) and 1.29 to
  // 1.33 (256 rows) x what its k-tiles cost in the unsplit blocks of the same run (docs/performance.md,
  // twentieth session): stream_k_wide_step_cost at 256 rows, linear from 128.
  double stream_k_step_cost = 1.1;
  double stream_k_wide_step_cost = 1.3;
  // Two stages in the mma.sync forms, relative to three: the step waits for the copy issued one step before,
  // where a third stage hides it. Where the bytes in flight over the whole GPU are enough either way (the
  // measured shape: 896 blocks), the rest of the model ranked 2 and 3 stages equal. (The wgmma forms are
  // offered with 3 stages or more and are not charged.) Measured on the H100 at 8192 x 57344 (two-warp blocks
  // of 64 columns): 1.14 x at M = 8 (108.1 against 94.7 us), 1.25 x at M = 16 (186.5 against 148.6; 4 stages
  // 148.3); docs/performance.md, sixteenth session.
  double two_stage_cost = 1.15;
};

// @throws tilevm::Error when the problem or configuration is invalid (check_config).
tune::CostEstimate estimate_qmatmul(const QMatmulProblem& problem, const QMatmulConfig& config,
                                    const target::Target& target, const QMatmulCalibration& calibration = {});

}  // namespace tilevm::ops
