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
// in weights per ns: one warp alone, and one SM with many warps; the time is the larger of the two. These
// describe the template, not the device (target::Target has the device's figures). Re-measure when the
// template changes.
//
// The mma.sync forms (plain, swapped, warps along K) were refitted on 2026-11-29 to every configuration of
// the tuner's space timed on the H200 (`tilevm_qmatmul_sweep --space`, 283a2e0: 22 problems, M = 1 to 32 on
// seven layers of Llama-3.3-70B and Llama-3.1-8B, 6435 timings; tests/data/qmatmul_space_h200.txt keeps the
// near-best of them and of a sweep on three more layers, and TuneCostModel.PicksWithinTenPercentOfTheFastest-
// Measured checks the picks against it).
// (bench/data/qmatmul_space_h200.txt.gz keeps the whole sweeps; `tilevm_qmatmul_sweep --replay` and
// bench/fit_cost_model.py refit them without a GPU.) The fit minimized the measured time of the model's first
// pick over the fastest (the tuner's regret) and the log error of the configurations within 1.5 x the
// fastest: the worst pick 1.08 x, the geometric mean 1.02 x (the previous constants, 2.3 and 29 with a slice
// overhead of 41: 1.56 x and 1.08 x). Fitted on the 70B layers alone, the 8B layers' worst was 1.10 x; on
// three layers of other models that no fit saw (M = 2, 8 and 16 on 5120 x 13824, 13824 x 5120, 4096 x 11008)
// the worst pick was 1.08 x (the previous constants: 1.16 x). The previous constants made these forms
// about 2.2 x slower than measured, which is why the model preferred the wgmma forms at M = 16 where mma.sync
// tiles ran faster. A sum of the two limits instead of the larger (a rate growing with the warps a scheduler
// holds) fitted worse (1.14 x worst); so did charging A's copy and fragments per k-tile. The fit is sharp:
// 10% on either rate moves a pick at M = 16 or 32 by up to 1.6 x, so a template change needs the sweep again.
struct QMatmulCalibration {
  double warp_weights_per_ns = 5.97;
  double sm_weights_per_ns = 40.3;
  // The wgmma forms' rates, against which their per-weight costs below were fitted (the mma.sync forms'
  // constants before the refit). Calibrated on H100 with the template of 67cb99f, then c26b503's sweep.
  double wgmma_warp_weights_per_ns = 2.3;
  double wgmma_sm_weights_per_ns = 29;
  // A slice's fixed work (the A fragments, the scale row and its multiply-add, the loop) in weights of one
  // thread: a thread's slice of S weights costs as much as S + slice_overhead_weights (the 2026-11-29 fit).
  double slice_overhead_weights = 34.2;
  // A mma.sync warp with more rows does more per weight (mma, scaling): 1 + rows_weight_slope (rows / 16 -
  // 1); the swapped form's 8 rows cost 0.9. The sweep had one layer at M = 32 and fitted 0.37, with which the
  // model picked mma.sync tiles of 32 rows a warp on six other layers that then measured 1.10 to 1.39 x the
  // register-A tile's time (TuneCostModel.ThirtyTwoRowsPreferRegisterAWhereItMeasuredFaster); 0.7 orders
  // those pairs as measured and leaves the sweep's picks as they were.
  double rows_weight_slope = 0.7;
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
  // A step's cost by pipeline depth in the mma.sync forms, relative to four stages or more: with fewer, a
  // step waits longer for its copy. From the 2026-11-29 sweep on the H200 (the same configuration at other
  // depths, M = 1 to 32): three stages took a median 1.02 x four's time (1.035 in the swapped form), two
  // stages 1.34 x three's. (Earlier, on the H100 at 8192 x 57344: two stages 1.14 to 1.25 x three.)
  double three_stage_cost = 1.025;
  double two_stage_cost = 1.37;
  // The wgmma forms with three stages against four, on their issue limit: a median 1.08 x at 16 and 32 rows
  // in the same sweep, falling linearly to 1 at 64 rows, or for register A (`_wsr`) to
  // wgmma_wide_three_stage_issue_cost, which holds past 64 rows. At 64 to
  // 256 rows the tuner took four stages over the model's three on four of six layers (1.01 to 1.04 x faster,
  // 1.11 x where stream-K came with it; docs/performance.md, twenty-eighth session) and three on two (within
  // 1%); the thirteenth session had measured them equal at 64. (They are offered with three stages or more.)
  double wgmma_three_stage_issue_cost = 1.08;
  double wgmma_wide_three_stage_issue_cost = 1.02;
};

// @throws tilevm::Error when the problem or configuration is invalid (check_config).
tune::CostEstimate estimate_qmatmul(const QMatmulProblem& problem, const QMatmulConfig& config,
                                    const target::Target& target, const QMatmulCalibration& calibration = {});

}  // namespace tilevm::ops
