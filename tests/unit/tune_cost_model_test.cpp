// ops::estimate_qmatmul (include/tilevm/ops/qmatmul/cost_model.h) and tune::prune (tune/cost_model.h): the
// roofline model's obvious properties, not its absolute numbers.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "qmatmul_test_util.h"

#include "expect_error.h"
#include "source_dir.h"
#include "tilevm/exec/device_target.h"
#include "tilevm/ops/qmatmul/config_space.h"
#include "tilevm/ops/qmatmul/cost_model.h"
#include "tilevm/ops/qmatmul/qmatmul_template.h"
#include "tilevm/support/error.h"
#include "tilevm/tune/cost_model.h"

namespace tilevm::ops {
namespace {

using tune::CostEstimate;

// A target with the template's calibration: the tests vary both.
struct Model : target::Target {
  QMatmulCalibration calibration;
};

CostEstimate estimate_qmatmul(const QMatmulProblem& p, const QMatmulConfig& c, const Model& m) {
  return ops::estimate_qmatmul(p, c, m, m.calibration);
}

// tune::prune takes any kernel with estimate() and config_name(): here the model with its calibration.
struct ModelKernel {
  using Problem = QMatmulProblem;
  using Config = QMatmulConfig;
  const Model& model;
  CostEstimate estimate(const Problem& p, const Config& c, const target::Target&) const {
    return ops::estimate_qmatmul(p, c, model, model.calibration);
  }
  std::string config_name(const Config& c) const { return c.name(); }
};

std::vector<QMatmulConfig> prune(const QMatmulProblem& p, const std::vector<QMatmulConfig>& space,
                                 const Model& m, int keep) {
  return tune::prune(ModelKernel{m}, p, space, m, keep);
}

ops::QMatmulProblem problem(int64_t m, int64_t n, int64_t k, DataType w = DataType::uint(4)) {
  return ops::make_problem(m, n, k, w);
}

// The cost model's first pick over the whole space (less dequant_gemm) on `target`.
std::string model_pick(const ops::QMatmulProblem& p, const target::Target& target) {
  double best = 1e30;
  std::string pick;
  for (const QMatmulConfig& c : ops::qmatmul_config_space(p, {.dequant_gemm = false, .target = &target})) {
    const double s = ops::estimate_qmatmul(p, c, target).seconds;
    if (s < best) {
      best = s;
      pick = c.name();
    }
  }
  return pick;
}

ops::QMatmulConfig config(int64_t bm, int64_t bn, int64_t wm, int64_t wn, int64_t split, int64_t bk = 128,
                          int64_t stages = 3) {
  ops::QMatmulConfig c;
  c.block_m = bm;
  c.block_n = bn;
  c.warps_m = wm;
  c.warps_n = wn;
  c.block_k = bk;
  c.slice_k = 64;
  c.stages = stages;
  c.split_k = split;
  return c;
}

const Model h100{target::Target::h100_like(), {}};

// The H100 with a template whose inner loop is never the limit: the physical properties (bytes, waves,
// bytes in flight, tensor cores) show without the calibrated issue limit.
Model ideal_h100() {
  Model r = h100;
  r.calibration.warp_weights_per_ns = 1e9;
  r.calibration.sm_weights_per_ns = 1e9;
  r.calibration.wgmma_warp_weights_per_ns = 1e9;
  r.calibration.wgmma_sm_weights_per_ns = 1e9;
  return r;
}
const Model ideal = ideal_h100();

TEST(TuneCostModel, SplitKHelpsADecodeShapeWithTooFewBlocks) {
  // 4096 / 256 = 16 blocks on 132 SMs: most SMs idle; split-K 8 gives 128 blocks.
  const auto p = problem(1, 4096, 8192);
  const CostEstimate one = estimate_qmatmul(p, config(16, 256, 1, 4, 1), ideal);
  const CostEstimate eight = estimate_qmatmul(p, config(16, 256, 1, 4, 8), ideal);
  EXPECT_EQ(one.blocks, 16);
  EXPECT_EQ(eight.blocks, 128);
  EXPECT_LT(eight.seconds, one.seconds * 0.5);
  EXPECT_EQ(one.bound, "dram-latency");
  EXPECT_GT(eight.dram_bytes, one.dram_bytes);  // the partial sums are extra traffic
}

TEST(TuneCostModel, SplitKDoesNotHelpAFullMachine) {
  // N = 57344 with 128-wide blocks is 448 blocks already; splitting only adds partial sums and a launch.
  const auto p = problem(1, 57344, 8192);
  EXPECT_LT(estimate_qmatmul(p, config(16, 128, 1, 4, 1), ideal).seconds,
            estimate_qmatmul(p, config(16, 128, 1, 4, 4), ideal).seconds);
}

TEST(TuneCostModel, MoreBytesCostMore) {
  const auto c = config(16, 128, 1, 4, 1);
  double previous = 0;
  for (int bits : {1, 2, 4, 6, 8}) {
    const CostEstimate e = estimate_qmatmul(problem(16, 57344, 8192, DataType::uint(bits)), c, ideal);
    EXPECT_GT(e.seconds, previous) << bits << " bits";
    previous = e.seconds;
  }
  // Twice the layer, (nearly) twice the time once DRAM-bound.
  const double small = estimate_qmatmul(problem(1, 28672, 8192), c, ideal).seconds;
  const double large = estimate_qmatmul(problem(1, 57344, 8192), c, ideal).seconds;
  EXPECT_GT(large, 1.6 * small);
}

TEST(TuneCostModel, LargeDecodeIsNearTheDramFloor) {
  const auto p = problem(1, 57344, 8192);
  const auto space = qmatmul_config_space(p);
  const ops::QMatmulConfig best = prune(p, space, ideal, 1).front();
  const CostEstimate e = estimate_qmatmul(p, best, ideal);
  const double floor = (8192.0 * 57344 / 2) / (ideal.dram_gbps * 1e9);
  EXPECT_GT(e.seconds, floor);
  EXPECT_LT(e.seconds, 1.5 * floor) << best.name();
  EXPECT_EQ(e.bound, "dram") << best.name();
}

TEST(TuneCostModel, PrefillIsComputeBound) {
  const auto p = problem(4096, 8192, 8192);
  const CostEstimate e = estimate_qmatmul(p, config(128, 128, 2, 4, 1, 64, 4), ideal);
  EXPECT_EQ(e.bound, "mma");
  EXPECT_DOUBLE_EQ(e.mma_flops, 2.0 * 4096 * 8192 * 8192);
  // Padding counts: M = 4000 computes as 4096 rows.
  EXPECT_DOUBLE_EQ(
      estimate_qmatmul(problem(4000, 8192, 8192), config(128, 128, 2, 4, 1, 64, 4), ideal).mma_flops,
      e.mma_flops);
}

TEST(TuneCostModel, TailWaveCosts) {
  // The same per-block work, one block more than the machine holds at once, costs a second wave.
  const auto c = config(16, 64, 1, 2, 1);
  const auto p = problem(1, 64, 8192);
  const CostEstimate e = estimate_qmatmul(p, c, ideal);
  const int64_t capacity = e.blocks_per_sm * ideal.sm_count;
  const CostEstimate full = estimate_qmatmul(problem(1, 64 * capacity, 8192), c, ideal);
  const CostEstimate spill = estimate_qmatmul(problem(1, 64 * (capacity + 1), 8192), c, ideal);
  EXPECT_EQ(full.waves, 1);
  EXPECT_EQ(spill.waves, 2);
  EXPECT_GT(spill.seconds, full.seconds);
}

TEST(TuneCostModel, DequantGemmWinsOnlyWhereComputeDominates) {
  const ops::QMatmulConfig dg{.dequant_gemm = true};
  const auto prefill = problem(4096, 8192, 8192), decode = problem(16, 8192, 8192);
  const auto fused = config(128, 128, 2, 4, 1, 64, 4);
  EXPECT_LT(estimate_qmatmul(prefill, dg, ideal).seconds, estimate_qmatmul(prefill, fused, ideal).seconds);
  EXPECT_EQ(estimate_qmatmul(prefill, dg, ideal).bound, "mma");
  // At decode it writes and re-reads a 16-bit weight: several times the fused kernel's 4-bit read.
  EXPECT_GT(estimate_qmatmul(decode, dg, ideal).seconds,
            3 * estimate_qmatmul(decode, config(16, 128, 1, 4, 2), ideal).seconds);
}

TEST(TuneCostModel, IssueLimitFavorsMoreWarpsAndSplitK) {
  // The calibrated template: time ~ weights per warp, so the same blocks with more warps win, and a
  // decode shape splits K until an SM's issue rate is reached.
  const auto p = problem(16, 8192, 8192);
  const CostEstimate two = estimate_qmatmul(p, config(16, 128, 1, 2, 4), h100);
  const CostEstimate four = estimate_qmatmul(p, config(16, 128, 1, 4, 4), h100);
  EXPECT_EQ(two.bound, "issue");
  EXPECT_LT(four.seconds, two.seconds);
  const CostEstimate eight = estimate_qmatmul(p, config(16, 256, 1, 8, 8), h100);
  EXPECT_LT(eight.seconds, estimate_qmatmul(p, config(16, 256, 1, 8, 1), h100).seconds / 3);
  // The issue-bound estimate is never below the ideal one.
  EXPECT_GE(eight.seconds, estimate_qmatmul(p, config(16, 256, 1, 8, 8), ideal).seconds);
}

TEST(TuneCostModel, InvalidConfigThrows) {
  const auto n60 = config(16, 60, 1, 4, 1);
  expect_error([&] { estimate_qmatmul(problem(1, 64, 128), n60, h100); }, "block_n (60) must be");
}

TEST(TuneCostModel, PruneKeepsTheBestInOrder) {
  const auto p = problem(16, 8192, 8192);
  const auto space = qmatmul_config_space(p);
  const auto kept = prune(p, space, h100, 10);
  ASSERT_EQ(kept.size(), 10u);
  for (size_t i = 1; i < kept.size(); ++i)
    EXPECT_LE(estimate_qmatmul(p, kept[i - 1], h100).seconds, estimate_qmatmul(p, kept[i], h100).seconds);
  const double tenth = estimate_qmatmul(p, kept.back(), h100).seconds;
  int better = 0;
  for (const auto& c : space) better += estimate_qmatmul(p, c, h100).seconds < tenth;
  EXPECT_LE(better, 9);
  EXPECT_EQ(prune(p, space, h100, 10), kept);  // deterministic
  EXPECT_EQ(prune(p, space, h100, 100000).size(), space.size());
  EXPECT_TRUE(prune(p, space, h100, 0).empty());
  // The qmatmul template names families (its forms): with 10 kept, each family's best one is kept, then the
  // rest by estimate; still fastest first.
  const QMatmulTemplate t;
  // (12: six families at M = 16 on the H100, and below 2 * families nothing is reserved.)
  const auto families = tune::prune(t, p, space, h100, 12);
  ASSERT_EQ(families.size(), 12u);
  std::map<std::string, int> kept_per_family, in_space;
  for (const auto& c : families) ++kept_per_family[t.family(c)];
  for (const auto& c : space) ++in_space[t.family(c)];
  EXPECT_GE(in_space.size(), 3u);
  for (const auto& [family, n] : in_space) EXPECT_GE(kept_per_family[family], 1) << family;
  for (size_t i = 1; i < families.size(); ++i)
    EXPECT_LE(estimate_qmatmul(p, families[i - 1], h100).seconds,
              estimate_qmatmul(p, families[i], h100).seconds);
  EXPECT_EQ(tune::prune(t, p, space, h100, 100000).size(), space.size());
  EXPECT_TRUE(tune::prune(t, p, space, h100, 0).empty());
  // Where the warp-specialized form ranks first (M = 64 on the H200), the mma.sync forms are still timed:
  // 24 kept over the families of the space, keep / (2 * families) of each at least.
  const target::Target h200 = target::Target::h200();
  const auto mid = problem(64, 8192, 28672);
  const auto mid_space = ops::qmatmul_config_space(mid, {.target = &h200});
  std::map<std::string, int> mid_families, mid_kept;
  for (const auto& c : mid_space) ++mid_families[t.family(c)];
  for (const auto& c : tune::prune(t, mid, mid_space, h200, 24)) ++mid_kept[t.family(c)];
  ASSERT_GE(mid_families.size(), 4u);
  const int reserve = static_cast<int>(24 / (2 * mid_families.size()));
  for (const auto& [family, n] : mid_families) EXPECT_GE(mid_kept[family], std::min(n, reserve)) << family;
  EXPECT_GE(mid_kept["plain"], 2);
}

TEST(TuneCostModel, DeviceTargets) {
  runtime::DeviceInfo h200;
  h200.name = "NVIDIA H200";
  h200.arch = "sm_90a";
  h200.sm_count = 132;
  EXPECT_DOUBLE_EQ(exec::device_target(h200).dram_gbps, 4300);
  runtime::DeviceInfo h100;
  h100.name = "NVIDIA H100 80GB HBM3";
  h100.arch = "sm_90a";
  h100.sm_count = 132;
  const target::Target r = exec::device_target(h100);
  EXPECT_DOUBLE_EQ(r.dram_gbps, 3160);
  EXPECT_NEAR(r.mma_tflops, 474, 1e-9);
  runtime::DeviceInfo other;
  other.name = "Some GPU";
  other.arch = "sm_90";
  other.sm_count = 66;
  EXPECT_NEAR(exec::device_target(other).dram_gbps, 3160.0 / 2, 1e-9);
  EXPECT_NEAR(exec::device_target(other).mma_tflops, 474.0 / 2, 1e-9);
  // A slower device predicts a slower kernel.
  const auto p = problem(1, 8192, 8192);
  const auto c = config(16, 128, 1, 4, 2);
  EXPECT_GT(ops::estimate_qmatmul(p, c, exec::device_target(other)).seconds,
            ops::estimate_qmatmul(p, c, exec::device_target(h200)).seconds);
}

// The wgmma form (sm_90a), warp-specialized, where the model ranks it first: the mid batches, where it
// measured fastest on the H200 (docs/performance.md, "the wgmma form": 45 us against 95 us for the
// mma.sync forms at M = 64 of 8192 x 8192, 62 against 97 for dequant_gemm at M = 128; "warp
// specialization": the _ws form 0.67-0.83 of that), and at M = 256 with register A in two block rows of
// 128 (the H200's tuner: 61.7 us against 65.4 for the 256-row _ws tile; fourteenth session); not M = 1 (the
// swapped mma.sync form: 23.9 us against 27.1 for _wsr on the H100) nor prefill (M = 4096: dequantize, then
// cuBLAS).
// (NoWgmmaBeforeHopper: none on a target without wgmma.)
TEST(TuneCostModel, TheWgmmaFormRanksFirstForMidBatches) {
  for (const target::Target& t : {target::Target::h100_sxm(), target::Target::h200()}) {
    const Model model{t, {}};
    auto best = [&](int64_t m) {
      const QMatmulProblem p = problem(m, 8192, 8192);
      return prune(p, ops::qmatmul_config_space(p, {.target = &t}), model, 1).at(0);
    };
    SCOPED_TRACE(t.name);
    EXPECT_TRUE(best(1).swapped()) << best(1).name();
    EXPECT_TRUE(best(64).warp_specialized) << best(64).name();
    EXPECT_TRUE(best(128).warp_specialized) << best(128).name();
    EXPECT_TRUE(best(256).register_a && best(256).block_m == 128) << best(256).name();
    EXPECT_TRUE(best(4096).dequant_gemm) << best(4096).name();
  }
}

// Register A against the shared-memory form with the same tiles, as measured on the H200 (docs/
// performance.md, thirteenth session, 8192 x 8192): 0.75 of its time at M = 32, 0.84 at M = 64, 0.87 at M =
// 128 over two warpgroups (groups of 32 columns), 0.99 over one.
TEST(TuneCostModel, RegisterAAgainstSharedA) {
  const target::Target t = target::Target::h200();
  auto ratio = [&](int64_t m, const std::string& tiles) {
    const QMatmulProblem p = problem(m, 8192, 8192);
    return ops::estimate_qmatmul(p, QMatmulConfig::parse(tiles + "_wsr"), t).seconds /
           ops::estimate_qmatmul(p, QMatmulConfig::parse(tiles + "_ws"), t).seconds;
  };
  EXPECT_NEAR(ratio(32, "bm32_bn128_bk128_sk128_w1x8_s4_k2"), 0.75, 0.05);
  EXPECT_NEAR(ratio(64, "bm64_bn128_bk128_sk128_w1x8_s4_k2"), 0.84, 0.05);
  // At M = 128 the model puts both forms on its tensor-core bound (a ratio of 1.0, where 0.87 to 0.99 was
  // measured): it cannot see register A's gain there, only that it costs nothing.
  EXPECT_LE(ratio(128, "bm128_bn128_bk128_sk128_w1x8_s4_k2"), 1.0);
  EXPECT_LE(ratio(128, "bm128_bn64_bk128_sk128_w1x4_s4_k1"), 1.0);
  // One group a step runs its product alone: the form gains less than with two.
  EXPECT_GT(ratio(128, "bm128_bn64_bk64_sk64_w1x4_s4_k1"), ratio(128, "bm128_bn64_bk128_sk128_w1x4_s4_k1"));
  const QMatmulProblem p = problem(64, 8192, 8192);
  for (const QMatmulConfig& c : ops::qmatmul_config_space(p, {.target = &t}))
    if (c.register_a) return;
  ADD_FAILURE() << "no configuration with register A in the H200's space";
}

// Stream-K against split-K with the same tiles, as measured on the H200 (docs/performance.md, fifteenth
// session): it wins where the tiles leave a partial last wave that no split fills (8192 x 57344 at M = 128:
// 448 tiles, 213.0 us against 228.5 unsplit), and loses its steady state's 10% where two splits fill the SMs
// (8192 x 8192 at M = 64: 31.4 against 28.7 for split 2).
TEST(TuneCostModel, StreamKWhereTheTilesFillTheSmsBadly) {
  const target::Target t = target::Target::h200();
  auto best = [&](const QMatmulProblem& p, bool stream) {
    double seconds = 1e9;
    for (const QMatmulConfig& c : ops::qmatmul_config_space(p, {.target = &t}))
      if (c.register_a && c.block_n == 128 && c.block_k == 128 && (c.stream_k > 0) == stream)
        seconds = std::min(seconds, ops::estimate_qmatmul(p, c, t).seconds);
    return seconds;
  };
  EXPECT_LT(best(problem(128, 57344, 8192), true), best(problem(128, 57344, 8192), false));
  EXPECT_GT(best(problem(64, 8192, 8192), true), best(problem(64, 8192, 8192), false));
  EXPECT_LT(best(problem(64, 8192, 8192), true), 1e9);  // the space offers stream-K there
  // One block per SM, and only from M = 32 (as split 3).
  const QMatmulProblem p = problem(64, 4096, 14336);
  int stream = 0;
  for (const QMatmulConfig& c : ops::qmatmul_config_space(p, {.target = &t}))
    if (c.stream_k > 0) {
      ++stream;
      EXPECT_EQ(c.stream_k, t.sm_count) << c.name();
    }
  EXPECT_GT(stream, 0);
  // Neither at decode nor past 8 waves of tiles (prefill: its workspace grows with M).
  for (const QMatmulProblem& none : {problem(16, 4096, 14336), problem(4096, 57344, 8192)})
    for (const QMatmulConfig& c : ops::qmatmul_config_space(none, {.target = &t}))
      EXPECT_EQ(c.stream_k, 0) << c.name();
}

// Past M = 128 the model's first pick on the H200 at the blocks of rows measured fastest there (docs/
// performance.md, twentieth session; _wsr over two warpgroups, us): 8192 x 10240 at M = 512 in blocks of 176
// rows, which fill two waves (123.3 against 138.1 for 256 rows as stream-K and 151.6 for 128 unsplit); 8192
// x 8192 at M = 384 in 192 (67.7 against 100.3 for 128), but 8192 x 10240 at M = 384 in 128 (103.0 against
// 130.8 for 192: 160 tiles of 192 rows are two waves); 8192 x 8192 at M = 256 in 128 unsplit, not 256 split
// in two (53.3 against 77.9: the space has no split of register A over more than 128 rows); M = 1024 on 8192
// x 8192 in 256 rows (194.6 against cuBLAS's 179.3), and M = 4096 dequantize-then-cuBLAS (764.0 against 824.7
// for 256 rows, whose waves each read A from DRAM again).
TEST(TuneCostModel, BlockRowsPastOneTwentyEight) {
  const target::Target t = target::Target::h200();
  const Model model{t, {}};
  auto best = [&](int64_t m, int64_t n) {
    const QMatmulProblem p = problem(m, n, 8192);
    return prune(p, ops::qmatmul_config_space(p, {.target = &t}), model, 1).at(0);
  };
  auto rows = [&](int64_t m, int64_t n) {
    const QMatmulConfig c = best(m, n);
    EXPECT_TRUE(c.register_a && c.split_k == 1) << c.name();
    return c.block_m;
  };
  EXPECT_EQ(rows(512, 10240), 176);
  EXPECT_EQ(rows(384, 8192), 192);
  EXPECT_EQ(rows(384, 10240), 128);
  EXPECT_EQ(rows(256, 8192), 128);
  EXPECT_EQ(best(256, 8192).stream_k, 0);
  EXPECT_EQ(rows(1024, 8192), 256);
  EXPECT_TRUE(best(4096, 8192).dequant_gemm) << best(4096, 8192).name();
}

// Two stages of cp.async leave each step's copy exposed: on the H100 at 8192 x 57344 the two-warp blocks
// took 1.14 x (M = 8) and 1.25 x (M = 16) of their time with three, where the model had them equal and
// picked two stages at M = 16.
TEST(TuneCostModel, TwoStagesOfCpAsyncCostMoreThanThree) {
  const target::Target t = target::Target::h100_like();
  const QMatmulProblem p = problem(16, 57344, 8192);
  const QMatmulConfig s2 = QMatmulConfig::parse("bm16_bn64_bk128_sk128_w1x2_s2_k1");
  const QMatmulConfig s3 = QMatmulConfig::parse("bm16_bn64_bk128_sk128_w1x2_s3_k1");
  EXPECT_GT(ops::estimate_qmatmul(p, s2, t).seconds, 1.1 * ops::estimate_qmatmul(p, s3, t).seconds);
  for (const QMatmulProblem& q : {p, problem(16, 10240, 8192)})
    EXPECT_GE(ops::heuristic_qmatmul_config(q, t, false).stages, 3) << q.key();
  // The wgmma forms are not charged (the space offers them with 3 stages or more; this one has 2).
  const QMatmulConfig ws = QMatmulConfig::parse("bm64_bn128_bk128_sk128_w1x8_s2_k1_wg");
  ops::QMatmulCalibration none;
  none.two_stage_cost = 1;
  EXPECT_EQ(ops::estimate_qmatmul(problem(64, 8192, 8192), ws, t).seconds,
            ops::estimate_qmatmul(problem(64, 8192, 8192), ws, t, none).seconds);
}

// One block an SM hides no block's epilogue: split 4 over seven waves of 4096 x 28672 at M = 128 measured
// 101.5 us on the H200 against 68.1 unsplit (the model without the per-wave epilogue said 63 and 64).
TEST(TuneCostModel, SplitsOverManyWavesPayEachWavesEpilogue) {
  const target::Target t = target::Target::h200();
  const QMatmulProblem p = problem(128, 28672, 4096);
  const double split4 =
      ops::estimate_qmatmul(p, QMatmulConfig::parse("bm128_bn128_bk128_sk128_w1x8_s3_k4_wsr"), t).seconds;
  const double whole =
      ops::estimate_qmatmul(p, QMatmulConfig::parse("bm128_bn128_bk128_sk128_w1x8_s3_k1_wsr"), t).seconds;
  EXPECT_GT(split4, 1.2 * whole);
}

TEST(TuneCostModel, NoWgmmaBeforeHopper) {
  const target::Target a100 = target::Target::for_arch("sm_80");
  const QMatmulProblem p = problem(64, 8192, 8192);
  for (const QMatmulConfig& c : ops::qmatmul_config_space(p, {.target = &a100}))
    EXPECT_FALSE(c.wgmma) << c.name();
}

// Issue 16's "a configuration within 10% of the tuned one from the cost model alone", against the recorded
// H200 sweeps (tests/data/qmatmul_space_h200.txt: every configuration of the space timed at M = 1 to 32 on
// seven layers, and at M = 2 to 16 on three layers the fit did not see; the file keeps those within 1.25 x
// each problem's fastest). For each problem the model's
// first pick over the whole space must be one of the recorded configurations and measured within 1.10 x the
// fastest. The constants before the 2026-11-29 refit fail it (1.56 x at M = 16 on 8192 x 57344, 1.25 x on
// 28672 x 8192).
TEST(TuneCostModel, PicksWithinTenPercentOfTheFastestMeasured) {
  const auto path = tilevm::testing::source_dir() / "tests" / "data" / "qmatmul_space_h200.txt";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::map<std::string, double>> measured;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    int64_t m = 0, k = 0, n = 0;
    std::string name;
    double us = 0;
    ASSERT_TRUE(fields >> m >> k >> n >> name >> us) << line;
    measured[{m, k, n}][name] = us;
  }
  ASSERT_EQ(measured.size(), 31u);
  const target::Target h200 = target::Target::h200();
  for (const auto& [key, times] : measured) {
    const auto [m, k, n] = key;
    const QMatmulProblem p = problem(m, n, k);
    const std::string pick = model_pick(p, h200);
    double fastest = 1e30;
    for (const auto& [name, us] : times) fastest = std::min(fastest, us);
    const auto it = times.find(pick);
    SCOPED_TRACE(p.key() + ": the model picks " + pick);
    ASSERT_NE(it, times.end()) << "measured more than 1.25 x the fastest (" << fastest << " us)";
    EXPECT_LE(it->second, 1.10 * fastest) << it->second << " us against the fastest " << fastest;
  }
}

// At M = 32 a first refit (rows_weight_slope 0.37, fitted where only one layer had M = 32) ranked these
// mma.sync tiles of 32 rows a warp above the register-A wgmma tile, and on the H200 they measured 1.10
// to 1.39 x slower (us, one run; docs/performance.md, twenty-seventh session). The model must order each pair
// as measured.
TEST(TuneCostModel, ThirtyTwoRowsPreferRegisterAWhereItMeasuredFaster) {
  const target::Target h200 = target::Target::h200();
  struct Pair {
    int64_t k, n;
    const char* faster;
    double faster_us;
    const char* slower;
    double slower_us;
  };
  const Pair pairs[] = {
      {8192, 8192, "bm32_bn128_bk128_sk128_w1x8_s3_k2_wsr", 24.5, "bm32_bn128_bk128_sk128_w1x2_s3_k8", 33.3},
      {28672, 8192, "bm32_bn128_bk128_sk128_w1x8_s3_k2_wsr", 61.4, "bm32_bn256_bk128_sk128_w1x4_s4_k8", 67.4},
      {4096, 14336, "bm32_bn128_bk128_sk128_w1x8_s3_k1_wsr", 22.6, "bm32_bn128_bk128_sk128_w1x2_s3_k4", 30.5},
      {14336, 4096, "bm32_bn128_bk128_sk128_w1x8_s3_k4_wsr", 23.4, "bm32_bn64_bk512_sk128_w1x2x4_s4_k2",
       26.6},
      {5120, 13824, "bm32_bn128_bk128_sk128_w1x8_s3_k1_wsr", 26.9, "bm32_bn128_bk128_sk128_w1x2_s3_k4", 33.8},
  };
  for (const Pair& pair : pairs) {
    const QMatmulProblem p = problem(32, pair.n, pair.k);
    SCOPED_TRACE(p.key());
    EXPECT_LT(ops::estimate_qmatmul(p, QMatmulConfig::parse(pair.faster), h200).seconds,
              ops::estimate_qmatmul(p, QMatmulConfig::parse(pair.slower), h200).seconds)
        << pair.faster << " measured " << pair.faster_us << " us, " << pair.slower << " " << pair.slower_us;
  }
}

// Past 64 rows the register-A tiles with four stages measured faster than with three (us, one run on the
// H200; docs/performance.md, twenty-eighth session), where the model had rated the two equal and taken
// three: its three-stage cost stays 1.02 there. (At 256 rows on 28672 x 8192 they measured equal, 159.7
// and 160.0.)
TEST(TuneCostModel, WideRegisterATilesTakeFourStages) {
  const target::Target h200 = target::Target::h200();
  struct Pair {
    int64_t m, k, n;
    const char* faster;
    double faster_us;
    const char* slower;
    double slower_us;
  };
  const Pair pairs[] = {
      {64, 8192, 10240, "bm64_bn128_bk128_sk128_w1x8_s4_k3_wsr", 36.1,
       "bm64_bn128_bk128_sk128_w1x8_s3_k3_wsr", 37.8},
      {96, 8192, 10240, "bm96_bn128_bk128_sk128_w1x8_s4_k3_wsr", 40.4,
       "bm96_bn128_bk128_sk128_w1x8_s3_k3_wsr", 41.5},
      {128, 8192, 8192, "bm128_bn128_bk128_sk128_w1x8_s4_k2_wsr", 33.7,
       "bm128_bn128_bk128_sk128_w1x8_s3_k2_wsr", 34.6},
  };
  for (const Pair& pair : pairs) {
    const QMatmulProblem p = problem(pair.m, pair.n, pair.k);
    SCOPED_TRACE(p.key());
    EXPECT_LT(ops::estimate_qmatmul(p, QMatmulConfig::parse(pair.faster), h200).seconds,
              ops::estimate_qmatmul(p, QMatmulConfig::parse(pair.slower), h200).seconds)
        << pair.faster << " measured " << pair.faster_us << " us, " << pair.slower << " " << pair.slower_us;
    // And the model's first pick over the space is the four-stage tile.
    EXPECT_EQ(model_pick(p, h200), pair.faster);
  }
}

}  // namespace
}  // namespace tilevm::ops
