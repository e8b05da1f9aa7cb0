// A roofline cost model of the quantized matmul (qmatmul.h): predicts a configuration's time from the bytes
// it moves at each level, its tensor-core and dequantization work and how its blocks fill the machine, so
// that the autotuner compiles and times only the promising few of a few hundred configurations.
//
// Per launch the model counts
//   DRAM   the transformed weight tiles once (padding included: edge tiles are read whole), scales (+ zeros),
//          A once if it fits in L2 (else once per wave), C written; with split-K the f32 partials written
//          by the matmul and re-read by the reduce
//   L2     A re-read by every block column, the weight tiles and scales re-read by every block row
//   issue  the template's own instruction rate (calibrated, see warp_weights_per_ns): with the current
//          template this, not DRAM, bounds decode, and it is what makes more warps and split-K win
//   MMA    2 * ceil(M/BM)*BM * ceil(N/BN)*BN * ceil(K/BK)*BK flops (padding computes too)
//   ALU    the dequantization of every weight by every block row (about 1 operation per weight on the fast
//          path, 4 on the f32 path, +1 with zero points) and the per-slice f32 scaling of the accumulators
// and runs the blocks in waves (blocks resident per SM from shared memory, threads and an estimate of
// registers). Each wave takes the longest of its resources plus the pipeline's fill latency; DRAM bandwidth
// in a wave is capped by Little's law, bytes in flight (stages - 1 tiles per resident block) / latency, and by
// what the active SMs can pull (sm_dram_gbps each), which is what makes a decode shape with too few blocks
// slow and split-K fast. A launch costs launch_us, and
// split-K adds the reduce launch.
//
// dequant_gemm is two steps: the dequantize program (reads the codes and scales, writes the dense ATYPE
// weight, DRAM-bound) and cuBLAS's GEMM (2MNK at gemm_tflops, or its bytes at DRAM speed), a launch each.
//
// The absolute figures are rough (within a factor of ~2); the ranking is what the tuner uses, and the
// timing of the survivors decides.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tilevm/ops/qmatmul.h"
#include "tilevm/runtime/device.h"

namespace tilevm::tune {

struct DeviceRoofline {
  double dram_gbps = 3160;       // read bandwidth of a large stream (H100 SXM measured: PERFORMANCE.md)
  double l2_gbps = 10000;        // L2 -> SM bandwidth
  double mma_tflops = 474;       // f16 mma.sync, f32 accumulate: ~60% of the 790 dense peak on sm_90
  double gemm_tflops = 722;      // cuBLAS f16 GEMM, large (PERFORMANCE.md, measured): dequant_gemm's rate
  double fma_tflops = 60;        // f32 FMA (2 flops each): the dequantization's ALU rate, whole chip
  int sm_count = 132;
  int64_t shared_per_sm = 228 * 1024;
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  int64_t registers_per_sm = 65536;
  int64_t l2_cache_bytes = 50 * 1024 * 1024;  // re-read tiles that fit hit L2 instead of DRAM
  double sm_dram_gbps = 72;      // what one SM alone can pull from DRAM (~3x its share of the total)
  double dram_latency_ns = 700;  // loaded DRAM latency: bytes in flight needed = bandwidth * latency
  double launch_us = 2.5;        // launch and ramp-down of one kernel, as CUDA events measure it
  // The issue limit of the template's inner loop (copy, ldmatrix, convert, mma: a dependent chain per
  // warp), in weights per ns: one warp alone, and one SM with many warps. First calibrated on the H100 with
  // the template of 67cb99f (every configuration of m16 x 8192 x 8192 and m1 x 57344 x 8192, u4, timed: time
  // ~ weights per warp / 1.1 until an SM holds ~14 weights/ns); refitted to the sweep of c26b503 (faster
  // converters, conflict-free weight loads, fewer NaN checks; docs/performance.md) with the slice overhead
  // below: both about twice as fast. Re-measure when the template changes.
  double warp_weights_per_ns = 2.3;
  double sm_weights_per_ns = 29;
  // A slice's fixed work (the A fragments, the scale row and its multiply-add, the loop) in weights of one
  // thread: a thread's slice of S weights costs as much as S + slice_overhead_weights. Fitted to the sweep
  // of 3700b62 (slices of 32 / 64 / 128 at 128 columns of 4 warps: 64.3 / 44.4 / 37.2 us).
  double slice_overhead_weights = 41;

  // The H100 figures above, scaled to `info`: a known device by name (H200: 4300 GB/s, H100 PCIe, A100,
  // L40S, RTX 4090), others by SM count relative to the H100 (and by arch for the tensor-core rate).
  // Measured values (a benchmark's stream ceiling) may then overwrite the fields.
  static DeviceRoofline for_device(const runtime::DeviceInfo& info);
  // The H100 figures scaled to `sm_count` SMs: for choosing a configuration without a device.
  static DeviceRoofline h100_like(int sm_count = 132);
};

struct CostEstimate {
  double seconds = 0;
  std::string bound;     // "dram", "dram-latency" (too few bytes in flight), "l2", "mma", "alu", "issue", "launch"
  double dram_bytes = 0;
  double l2_bytes = 0;
  double mma_flops = 0;
  double alu_ops = 0;
  int64_t blocks = 0;
  int64_t blocks_per_sm = 0;  // resident at once
  int64_t waves = 0;
};

// @throws tilevm::Error when the problem or configuration is invalid (ops::check_config).
CostEstimate estimate_qmatmul(const ops::QMatmulProblem& problem, const ops::QMatmulConfig& config,
                              const DeviceRoofline& roofline);

// The `keep` configurations of `configs` with the smallest estimates, fastest first (ties: less padded
// work, then fewer threads, then the name, so the order is deterministic). keep <= 0 keeps none.
std::vector<ops::QMatmulConfig> prune(const ops::QMatmulProblem& problem,
                                      const std::vector<ops::QMatmulConfig>& configs,
                                      const DeviceRoofline& roofline, int keep);

}  // namespace tilevm::tune
