// The roofline cost model of the quantized matmul (cost_model.h says what it counts and why).
#include "tilevm/ops/qmatmul/cost_model.h"

#include "qmatmul_shape.h"

#include "tilevm/support/int_math.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "tilevm/support/error.h"

namespace tilevm::ops {

namespace {

// Registers per thread, roughly: the f32 accumulators of the warp's piece (twice on the per-slice scaling
// path: the slice's tile and the running sum), the A fragments of one slice, its B codes (the compiler
// converts them to f16 just before their mma, so few converted fragments are live) and ~40 for addresses,
// loop counters and the dequantization's temporaries. Only the blocks-per-SM limit uses it. (ptxas: 116 for
// bm16_bn256_bk128_sk128_w1x8 u4, where this gives 120.)
int64_t registers_per_thread(const QMatmulProblem& p, const QMatmulConfig& c) {
  const int64_t piece_m = c.block_m / c.warps_m, piece_n = c.block_n / c.warps_n;
  const int64_t acc = piece_m * piece_n / 32 * (p.group == p.k ? 1 : 2);
  const int64_t a_frags = c.slice_k * piece_m / 64;
  const int64_t b_codes = c.slice_k * piece_n * p.wtype.bits() / 1024;
  return std::min<int64_t>(255, 40 + acc + a_frags + b_codes);
}

// Blocks of this configuration resident on one SM at once. A warp-specialized kernel is launched with
// __launch_bounds__(T, 1) and takes the register file (setmaxnreg): one.
int64_t blocks_per_sm(const QMatmulProblem& p, const QMatmulConfig& c, const target::Target& r) {
  if (c.warp_specialized) return 1;
  const int64_t n =
      r.resident_blocks(c.block_threads(), registers_per_thread(p, c), qmatmul_shared_bytes(p, c));
  return std::max<int64_t>(n, 1);  // check_config guarantees one block fits
}

// Dequantization operations per weight (lane operations): the generated converters turn ~2 codes into
// an f16x2/bf16x2 in a couple of lop3/prmt/fma, about 1 per weight with the unpacking; the f32 path (weights
// that do not fit ATYPE) converts, scales and rounds each weight alone, about 4; a zero point is one
// packed subtraction per 2 weights.
double dequant_ops_per_weight(const QMatmulProblem& p) {
  double ops = qmatmul_weight_fits(p.wtype, p.atype) ? 1.0 : 4.0;
  if (p.zero_point) ops += 0.5;
  return ops;
}

// dequant_gemm: the dequantize program, then cuBLAS (cost_model.h).
tune::CostEstimate estimate_dequant_gemm(const QMatmulProblem& p, const target::Target& r) {
  const double elem = 2;
  const double codes = std::ceil(static_cast<double>(p.k) * static_cast<double>(p.n) * p.wtype.bits() / 8);
  const double scales = static_cast<double>(p.k / p.group * p.n) * elem * (p.zero_point ? 2 : 1);
  const double dense = static_cast<double>(p.k * p.n) * elem;
  const double a = static_cast<double>(p.m * p.k) * elem, out = static_cast<double>(p.m * p.n) * elem;
  const double dram_bw = r.dram_gbps * 1e9, launch = r.launch_us * 1e-6, latency = r.dram_latency_ns * 1e-9;
  tune::CostEstimate e;
  e.dram_bytes = codes + scales + 2 * dense + a + out;
  e.l2_bytes = e.dram_bytes;
  e.mma_flops = 2 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k);
  e.alu_ops = static_cast<double>(p.k * p.n) * dequant_ops_per_weight(p);
  const double t_dequant =
      std::max((codes + scales + dense) / dram_bw, e.alu_ops / (r.fma_tflops * 1e12 / 2));
  const double t_gemm_dram = (dense + a + out) / dram_bw;
  const double t_gemm_mma = e.mma_flops / (r.gemm_tflops * 1e12);
  e.seconds = 2 * (launch + latency) + t_dequant + std::max(t_gemm_dram, t_gemm_mma);
  e.bound = t_gemm_mma > t_dequant + t_gemm_dram ? "mma" : "dram";
  return e;
}

}  // namespace

tune::CostEstimate estimate_qmatmul(const QMatmulProblem& problem, const QMatmulConfig& config,
                                    const target::Target& r, const QMatmulCalibration& calibration) {
  check_config(problem, config);
  if (config.dequant_gemm) {
    tune::CostEstimate e = estimate_dequant_gemm(problem, r);
    e.threads = config.threads();
    return e;
  }
  const QMatmulProblem& p = problem;
  const QMatmulConfig& c = config;
  const double elem = 2;  // bytes of an ATYPE value (f16 or bf16)
  const int64_t tiles_m = ceil_div(p.m, c.block_m), tiles_n = ceil_div(p.n, c.block_n);
  const int64_t k_tiles = ceil_div(p.k, c.block_k);
  const int64_t groups = p.k / p.group;

  // Stream-K (StreamK in qmatmul.h): one row of blocks, each `per` of the tiles' k-tiles; a tile that
  // several blocks share costs each of them a partial store, and its last block reads them all back.
  const bool stream = c.stream_k > 0;
  const StreamK sk = stream_k_split(p, c);
  const int64_t partial_tiles = sk.partials;

  tune::CostEstimate e;
  e.threads = c.block_threads();
  e.blocks = stream ? sk.blocks : tiles_m * tiles_n * c.split_k;
  e.blocks_per_sm = blocks_per_sm(p, c, r);

  // Bytes. The grid's fastest axis is M (qmatmul<ceil(m/BM), ceil(n/BN), split_k>), so the blocks resident
  // at once cover whole block columns: each column of weight tiles (K x BN codes, a few MB at most) is read
  // from DRAM once and re-read by its block rows from L2. A is read once when it fits in half of L2, else
  // once per wave (each wave sweeps all its rows again), at most once per block column.
  const double weight = static_cast<double>(qmatmul_transformed_bytes(p, c));
  const double scales = static_cast<double>(groups * p.n) * elem * (p.zero_point ? 2 : 1);
  const double a = static_cast<double>(p.m * p.k) * elem;
  const double out = static_cast<double>(p.m * p.n) * elem;
  const double partials = stream ? static_cast<double>(partial_tiles) * static_cast<double>(p.m * p.n) /
                                       static_cast<double>(tiles_m * tiles_n) * 4
                                 : static_cast<double>(qmatmul_workspace_bytes(p, c));
  const int64_t concurrent = static_cast<int64_t>(r.sm_count) * e.blocks_per_sm;
  e.waves = ceil_div(e.blocks, concurrent);
  const double a_reads = a <= 0.5 * static_cast<double>(r.l2_cache_bytes)
                             ? 1.0
                             : static_cast<double>(std::min(e.waves, tiles_n));
  // What the blocks store along their runs: C; split-K's partials instead (its C is stored by the last
  // blocks after the waves: the tail below); stream-K's C and the partials of its shared tiles, which L2 also
  // serves back to the tiles' last blocks.
  const double stored = c.split_k > 1 ? partials : out + (stream ? partials : 0);
  const double dram_main = weight + scales + a * a_reads + stored;
  e.dram_bytes = dram_main + (c.split_k > 1 ? out : 0);
  e.l2_bytes = (weight + scales) * static_cast<double>(tiles_m) + a * static_cast<double>(tiles_n) + stored +
               (stream ? partials : 0);

  // Work.
  const double padded_m = static_cast<double>(tiles_m * c.block_m);
  const double padded_n = static_cast<double>(tiles_n * c.block_n);
  const double padded_k = static_cast<double>(k_tiles * c.block_k);
  e.mma_flops = 2 * padded_m * padded_n * padded_k;
  const double scalings =
      p.group == p.k ? static_cast<double>(c.split_k) : padded_k / static_cast<double>(c.slice_k);
  e.alu_ops = static_cast<double>(tiles_m) * padded_k * padded_n * dequant_ops_per_weight(p) +
              padded_m * padded_n * scalings;

  // Rates per SM. A block's warps share the SM's 4 sub-partitions: fewer than 4 resident warps leave
  // tensor cores and ALUs idle.
  const double sms = r.sm_count;
  // Register A's rate, and past 128 rows its growth with wgmma's N (QMatmulCalibration::rs_rows_knee).
  const auto rows_rate = [&](double rows) { return rows / (rows + calibration.rs_rows_knee); };
  const double rs_rate =
      calibration.rs_mma_rate * std::max(1.0, rows_rate(static_cast<double>(c.block_m)) / rows_rate(128));
  const double mma_per_sm = r.mma_tflops * 1e12 / sms * (c.register_a ? rs_rate : 1.0);
  const double alu_per_sm = r.fma_tflops * 1e12 / 2 / sms;  // lane operations per second
  const double dram_bw = r.dram_gbps * 1e9, l2_bw = r.l2_gbps * 1e9, sm_dram_bw = r.sm_dram_gbps * 1e9;
  const double latency = r.dram_latency_ns * 1e-9;
  const double per_block_dram = dram_main / static_cast<double>(e.blocks);
  const double per_block_l2 = e.l2_bytes / static_cast<double>(e.blocks);
  const double per_block_flops = e.mma_flops / static_cast<double>(e.blocks);
  const double per_block_alu = e.alu_ops / static_cast<double>(e.blocks);
  // Bytes a block keeps in flight from DRAM: stages - 1 weight tiles (and their scales) while it computes
  // on one.
  const double in_flight =
      static_cast<double>(c.stages - 1) * (static_cast<double>(c.block_k * c.block_n * p.wtype.bits()) / 8 +
                                           static_cast<double>(c.block_n) * elem);

  // The issue limit (calibrated: QMatmulCalibration): a warp dequantizes and
  // multiplies its piece_n columns over the block's K range at a fixed rate, a warp with more rows doing
  // a little more per weight; warps along M each redo the same weights.
  const double piece_m = static_cast<double>(c.block_m / c.warps_m);
  // With warps along K each warp takes 1 / warps_k of the block's K range.
  // Stream-K's blocks take `per` k-tiles each, across tiles.
  const double k_per_block =
      stream ? static_cast<double>(sk.per * c.block_k) : padded_k / static_cast<double>(c.split_k);
  const double k_per_warp = k_per_block / static_cast<double>(c.warps_k);
  const double warps = static_cast<double>(c.warps_m * c.warps_n * c.warps_k);
  // A thread's weights per slice (an mma B fragment is 4 of every 16 x 8), and the slice's fixed work.
  const double slice_weights = static_cast<double>(c.slice_k * (c.block_n / c.warps_n)) / 32;
  const double step_overhead = c.register_a         ? calibration.rs_step_overhead_weights
                               : c.warp_specialized ? calibration.ws_step_overhead_weights
                               : c.wgmma            ? calibration.wgmma_step_overhead_weights
                                                    : calibration.slice_overhead_weights;
  const double slice_factor = 1 + step_overhead / slice_weights;
  // A warp with more rows does a little more per weight (mma, scaling). The swapped form (8 rows as mma's n8,
  // QMatmulConfig::swapped) issues about 0.9 of the 16-row form's instructions per weight: the u4 loop's
  // SASS has about 290 against 324 per 128 weights and thread (docs/performance.md, "swapped mma operands
  // for M <= 8").
  // The wgmma form's rows cost the threads nothing: the tensor cores multiply them (the mma bound).
  const double rows_factor = c.register_a  ? calibration.rs_weight_cost
                             : c.wgmma     ? calibration.wgmma_weight_cost
                             : c.swapped() ? 0.9
                                           : 1 + calibration.rows_weight_slope * (piece_m / 16 - 1);
  const double warp_work = slice_factor * k_per_warp * static_cast<double>(c.block_n / c.warps_n) *
                           rows_factor * dequant_ops_per_weight(p);
  const double block_work = warp_work * warps;
  const double warp_rate =
      (c.wgmma ? calibration.wgmma_warp_weights_per_ns : calibration.warp_weights_per_ns) * 1e9;
  const double sm_rate =
      (c.wgmma ? calibration.wgmma_sm_weights_per_ns : calibration.sm_weights_per_ns) * 1e9;

  // Stream-K's blocks read k-tiles scattered over K, where a split's all read one k-tile of every column
  // (more so past 128 rows: stream_k_wide_step_cost); fewer stages of cp.async leave more of each step's
  // copy exposed (three_stage_cost, two_stage_cost; the wgmma forms' on their issue limit alone).
  const double wide = std::clamp(static_cast<double>(c.block_m - 128) / 128, 0.0, 1.0);
  const double stream_cost = calibration.stream_k_step_cost +
                             wide * (calibration.stream_k_wide_step_cost - calibration.stream_k_step_cost);
  const double depth_cost = c.wgmma || c.stages >= 4 ? 1.0
                            : c.stages == 3          ? calibration.three_stage_cost
                                                     : calibration.two_stage_cost;
  const double step_cost = (stream ? stream_cost : 1.0) * depth_cost;
  const double narrow = std::clamp(static_cast<double>(64 - c.block_m) / 32, 0.0, 1.0);
  // (The floor past 64 rows was measured on the register-A form; the others fall to 1 as before.)
  const double wide_floor = c.register_a ? calibration.wgmma_wide_three_stage_issue_cost : 1.0;
  const double issue_depth_cost =
      c.wgmma && c.stages == 3 ? wide_floor + (calibration.wgmma_three_stage_issue_cost - wide_floor) * narrow
                               : 1.0;
  struct Sums {
    double dram = 0, dram_latency = 0, l2 = 0, mma = 0, alu = 0, issue = 0, fill = 0, total = 0;
  } sums;
  auto add_wave = [&](int64_t b, int64_t count) {
    if (b <= 0 || count <= 0) return;
    const double blocks = static_cast<double>(b);
    const double active_sms = std::min<double>(sms, blocks);
    const double busiest = std::ceil(blocks / sms);  // blocks sharing the busiest SM
    const double warp_use = std::min(1.0, busiest * warps / 4);
    const double bw = std::min({dram_bw, blocks * in_flight / latency, active_sms * sm_dram_bw});
    const double t_dram = blocks * per_block_dram / bw;
    const double t_l2 = blocks * per_block_l2 / (l2_bw * active_sms / sms);
    const double t_mma = busiest * per_block_flops / (mma_per_sm * warp_use);
    const double t_alu = busiest * per_block_alu / (alu_per_sm * warp_use);
    // Register A: a step's last product runs after its work, not beside it.
    const double exposed_mma = c.register_a ? calibration.rs_exposed_mma * t_mma *
                                                  static_cast<double>(qmatmul_rs_group_k(c, p.wtype.bits())) /
                                                  static_cast<double>(c.block_k)
                                            : 0;
    const double t_issue =
        issue_depth_cost * std::max(warp_work / warp_rate, busiest * block_work / sm_rate) + exposed_mma;
    const double n = static_cast<double>(count);
    (bw < dram_bw ? sums.dram_latency : sums.dram) += n * t_dram;
    sums.l2 += n * t_l2;
    sums.mma += n * t_mma;
    sums.alu += n * t_alu;
    sums.issue += n * t_issue;
    sums.fill += n * latency;  // the pipeline's first loads, and the epilogue's stores
    sums.total += n * (std::max({t_dram, t_l2, t_mma, t_alu, t_issue}) * step_cost + latency);
  };
  add_wave(concurrent, e.blocks / concurrent);
  add_wave(e.blocks % concurrent, 1);

  const double launch = r.launch_us * 1e-6;
  // The split-K tail: the last block of a tile reads the split_k partial tiles back from L2 on one SM, after
  // the others have stored theirs; the last tile's sum runs alone after the waves (measured on the H200: a
  // [16, 256] tile with split 8, 128 KB, costs about 3 us where a [8, 128] one with split 8 costs under 1).
  // Stream-K's is the same with its slots: the block that ends a shared tile's run sums it after its own.
  const int64_t summed = stream ? (partial_tiles > 0 ? sk.slots : 0) : c.split_k > 1 ? c.split_k : 0;
  const double tile_bytes = static_cast<double>(c.block_m * c.block_n * 4);
  double tail = static_cast<double>(summed) * tile_bytes / (l2_bw / sms);
  // With one block an SM nothing hides a block's epilogue: every wave waits for its partial stores and its
  // last blocks' sums before the next wave's blocks start (the H200 at 4096 x 28672, M = 128: split 4 over
  // seven waves took 101.5 us against 68.1 unsplit, where the waves alone made them 63 and 64).
  if (e.blocks_per_sm == 1 && c.split_k > 1)
    tail += static_cast<double>(e.waves - 1) * static_cast<double>(summed + 1) * tile_bytes / (l2_bw / sms);
  // A stream-K block stops its run where it leaves a shared tile (about twice): the consumers store the
  // partial sums and take a ticket, two round trips, while the producer waits on a full pipeline.
  if (stream)
    tail += static_cast<double>(partial_tiles) / static_cast<double>(sk.blocks) *
            (2 * latency + tile_bytes / (l2_bw / sms));
  // Where A does not fit in half of L2, each wave of the wgmma forms (one block an SM, all of a wave's blocks
  // on the same k-step) reads A again from DRAM, and that read does not hide behind the tensor cores: on the
  // H200 bm256 _wsr took 103 us a wave at M = 4096 on 8192 x 8192 (8 waves, 824.7 us) against 88 at M = 512,
  // the 15 us that A's 64 MB take at 4.3 TB/s (docs/performance.md, twentieth session).
  if (c.wgmma && a_reads > 1) tail += a * a_reads / dram_bw;
  const double seconds = launch + sums.total + tail;
  e.seconds = seconds;

  const std::pair<double, const char*> bounds[] = {{sums.dram, "dram"},
                                                   {sums.dram_latency, "dram-latency"},
                                                   {sums.l2, "l2"},
                                                   {sums.mma, "mma"},
                                                   {sums.alu, "alu"},
                                                   {sums.issue, "issue"},
                                                   {launch + sums.fill, "launch"}};
  e.bound = std::max_element(std::begin(bounds), std::end(bounds), [](const auto& x, const auto& y) {
              return x.first < y.first;
            })->second;
  return e;
}

}  // namespace tilevm::ops
