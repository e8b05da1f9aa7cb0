// The roofline model over tile programs and the tile recommendation (tune/tile_roofline.h,
// tune/tile_recommend.h): exact counts on the example GEMM, the limiting resource where it is clear (large
// tiles on a large problem: tensor cores; a copy that reuses nothing: DRAM; one stage in flight: latency),
// L2 reuse from the rasterization, wave quantization, and the candidates the recommendation must drop.
#include <gtest/gtest.h>

#include <algorithm>

#include "example_util.h"
#include "expect_error.h"
#include "tilevm/support/error.h"
#include "tilevm/tune/tile_recommend.h"
#include "tilevm/tune/tile_roofline.h"

namespace tilevm::tune {
namespace {

using target::Target;

const tune::ScalarArgs kSquare4k = {{"M", 4096}, {"N", 4096}, {"K", 4096}};

std::string gemm_source() {
  return example_test::read_text(example_test::example_path("tile/gemm_f16.tile"));
}

ir::Program lower_text(const std::string& source, const std::map<std::string, std::string>& defines,
                       const Target& target) {
  Diagnostics diags;
  ir::ParseOptions options;
  options.defines = defines;
  std::optional<ir::Program> p = ir::parse_program(source, diags, options);
  // The passes' own tests verify after every pass; here that would cost a second per 128 x 256 tile.
  if (p) p = transform::lower(*std::move(p), diags, {.target = target, .verify_each_pass = false});
  if (!p) throw Error(diags.render("program.tile", source));
  return *p;
}

TileRoofline gemm(const std::map<std::string, std::string>& defines, const ScalarArgs& args,
                  const Target& target = Target::h100_sxm()) {
  return estimate_tile_program(lower_text(gemm_source(), defines, target), args, target);
}

const std::map<std::string, std::string> kBig = {{"BM", "128"}, {"BN", "256"}, {"BK", "64"}, {"STAGES", "4"}};

TEST(TileRoofline, CountsTheGemmExactly) {
  // Every count of block 0: A and B tiles over all of K, one f16 output tile, 2 BM BN K flops. On the H100
  // 128 x 256 tiles; on the A100 128 x 128 (mma.sync's fragments of 128 x 256 spill: see the registers test).
  for (const auto& [target, bn] :
       {std::pair{Target::h100_sxm(), 256}, std::pair{Target::generic_sm80(), 128}}) {
    const TileRoofline r =
        gemm({{"BM", "128"}, {"BN", std::to_string(bn)}, {"BK", "64"}, {"STAGES", "2"}}, kSquare4k, target);
    SCOPED_TRACE(target.name);
    ASSERT_EQ(r.exceeds, "");
    EXPECT_DOUBLE_EQ(r.block.load_bytes.at("a_ptr"), 128.0 * 4096 * 2);
    EXPECT_DOUBLE_EQ(r.block.load_bytes.at("b_ptr"), bn * 4096.0 * 2);
    EXPECT_DOUBLE_EQ(r.block.store_bytes, 128.0 * bn * 2);
    EXPECT_DOUBLE_EQ(r.block.mma_flops, 2.0 * 128 * bn * 4096);
    EXPECT_DOUBLE_EQ(r.cost.mma_flops, 2.0 * 4096 * 4096 * 4096);
    EXPECT_EQ(r.cost.blocks, 32 * (4096 / bn));
    EXPECT_EQ(r.cost.threads, 256);
    EXPECT_EQ(r.shared_bytes, 2 * (128 + bn) * 64 * 2 + (target.features.hopper ? 16 : 0));  // + barriers
    EXPECT_EQ(r.block.wgmma, target.features.wgmma);  // wgmma reads its operands from shared memory
  }
}

TEST(TileRoofline, RegistersAsPtxasNeedsThem) {
  // ptxas (CUDA 13.0) on these programs: sm_90a 128 x 256 x 64 uses 254 registers without spilling and
  // 128 x 128 x 64 uses 128; sm_80 128 x 128 x 64 uses 254 without spilling, 128 x 256 x 64 spills 544
  // bytes, 256 x 256 x 32 spills on both. The estimate keeps what fits and drops what spills badly.
  auto registers = [](int bm, int bn, int bk, const Target& target) {
    return gemm(
        {{"BM", std::to_string(bm)}, {"BN", std::to_string(bn)}, {"BK", std::to_string(bk)}, {"STAGES", "2"}},
        kSquare4k, target);
  };
  const Target h100 = Target::h100_sxm(), a100 = Target::generic_sm80();
  // wgmma: the 128 f32 accumulators of 128 x 256 over 256 threads, and their f16 copy for the store.
  EXPECT_EQ(registers(128, 256, 64, h100).registers, 24 + 128 + 64);
  EXPECT_EQ(registers(128, 128, 64, h100).registers, 24 + 64 + 32);
  EXPECT_EQ(registers(128, 256, 64, h100).exceeds, "");
  EXPECT_NE(registers(256, 256, 32, h100).exceeds, "");
  // mma.sync: every K slice's fragments of the unrolled loop are live, so BK counts.
  EXPECT_EQ(registers(128, 128, 64, a100).exceeds, "");
  EXPECT_GT(registers(128, 128, 64, a100).registers, registers(128, 128, 32, a100).registers);
  EXPECT_NE(registers(128, 256, 64, a100).exceeds.find("registers per thread"), std::string::npos);
}

TEST(TileRoofline, LargeTilesOnALargeProblemAreTensorBound) {
  const TileRoofline r = gemm(kBig, kSquare4k);
  EXPECT_EQ(r.cost.bound, "tensor");
  // At most the dense-GEMM rate, at least half of it.
  EXPECT_LE(r.tflops(), Target::h100_sxm().gemm_tflops);
  EXPECT_GT(r.tflops(), Target::h100_sxm().gemm_tflops / 2);
  // One block per SM (196 KB of shared memory), 512 blocks: three full waves and one of 116 blocks.
  EXPECT_EQ(r.cost.blocks_per_sm, 1);
  EXPECT_EQ(r.cost.waves, 4);
  EXPECT_NEAR(r.wave_fraction, 512.0 / 132, 1e-12);
}

TEST(TileRoofline, WaveQuantization) {
  // 12 x 11 = 132 tiles fill one wave; one more row of tiles needs a second, nearly empty one.
  const TileRoofline full = gemm(kBig, {{"M", 128 * 11}, {"N", 256 * 12}, {"K", 4096}});
  const TileRoofline spill = gemm(kBig, {{"M", 128 * 12}, {"N", 256 * 12}, {"K", 4096}});
  EXPECT_EQ(full.cost.waves, 1);
  EXPECT_EQ(spill.cost.waves, 2);
  // 9% more work, nearly twice the time.
  EXPECT_GT(spill.cost.seconds, 1.7 * full.cost.seconds);
}

TEST(TileRoofline, SmallTilesMoveMoreAndRankBelowLargeOnes) {
  const std::map<std::string, std::string> small = {
      {"BM", "64"}, {"BN", "64"}, {"BK", "64"}, {"STAGES", "4"}};
  const TileRoofline s = gemm(small, kSquare4k), b = gemm(kBig, kSquare4k);
  EXPECT_GT(s.cost.l2_bytes, 2 * b.cost.l2_bytes);  // each output tile reads K x (BM + BN)
  EXPECT_GT(s.cost.seconds, b.cost.seconds);
}

TEST(TileRoofline, ShallowPipelinesAreLatencyBound) {
  // BK = 16 with two stages keeps 24 KB in flight per block (the TMA pipeline fills both stages; cp.async
  // one): far from covering the DRAM latency.
  const TileRoofline r = gemm({{"BM", "128"}, {"BN", "256"}, {"BK", "16"}, {"STAGES", "2"}}, kSquare4k);
  EXPECT_EQ(r.cost.bound, "latency");
  EXPECT_DOUBLE_EQ(r.in_flight_bytes, 2 * (128 + 256) * 16 * 2);
  EXPECT_GT(r.cost.seconds, gemm(kBig, kSquare4k).cost.seconds);
}

TEST(TileRoofline, RasterizationSharesTilesInL2) {
  // GROUP = 8 runs 8 rows of tiles at a time, so a wave reads few distinct A and B tiles; GROUP = 1 runs
  // whole rows and re-reads every B tile of the row once per row.
  const ScalarArgs big = {{"M", 16384}, {"N", 16384}, {"K", 4096}};
  std::map<std::string, std::string> grouped = kBig, rows = kBig;
  rows["GROUP"] = "1";
  const TileRoofline g = gemm(grouped, big), r = gemm(rows, big);
  EXPECT_DOUBLE_EQ(g.cost.l2_bytes, r.cost.l2_bytes);
  EXPECT_LT(g.cost.dram_bytes, r.cost.dram_bytes);
  // Never less than reading A and B once and writing C.
  EXPECT_GE(g.cost.dram_bytes, 2.0 * 16384 * 4096 * 2 + 16384.0 * 16384 * 2);
}

// A copy of [M, 256] f16 rows in blocks of 16, its body after the views.
std::string copy_program(const std::string& body) {
  return R"(BM = 16
def copy<ceil_div(M, BM)>[threads=128](f16* x_ptr, f16* y_ptr, i32 M):
    bi = BlockIndices()
    x = ViewGlobal(x_ptr, dtype=f16, shape=[M, 256])
    y = ViewGlobal(y_ptr, dtype=f16, shape=[M, 256])
)" + body;
}

TEST(TileRoofline, ACopyThatReusesNothingIsDramBound) {
  const std::string copy = copy_program(R"(    t = AllocateFragment(f16, shape=[BM, 256])
    Copy(x[bi * BM:, 0:], t)
    Copy(t, y[bi * BM:, 0:])
)");
  const Target h100 = Target::h100_sxm();
  const TileRoofline r = estimate_tile_program(lower_text(copy, {}, h100), {{"M", 1 << 18}}, h100);
  EXPECT_EQ(r.cost.bound, "dram");
  EXPECT_DOUBLE_EQ(r.cost.dram_bytes, 2.0 * (1 << 18) * 256 * 2);  // read once, written once
  EXPECT_DOUBLE_EQ(r.cost.mma_flops, 0);
}

// The same copy with the result stored by the TMA from shared memory: the store counts as global writes
// (and as shared traffic), so the copy is still DRAM-bound with the same bytes.
TEST(TileRoofline, TmaStoresCountAsWrites) {
  const std::string copy = copy_program(R"(    s = AllocateShared(f16, shape=[BM, 256])
    t = LoadGlobal(x, layout=spatial(16, 8).local(1, 32), offset=[bi * BM, 0])
    StoreShared(t, s)
    Synchronize()
    StoreTma(s, y[bi * BM:, 0:])
    StoreTmaWait(0)
)");
  const Target h100 = Target::h100_sxm();
  const TileRoofline r = estimate_tile_program(lower_text(copy, {}, h100), {{"M", 1 << 18}}, h100);
  EXPECT_DOUBLE_EQ(r.block.store_bytes, 16.0 * 256 * 2);
  EXPECT_EQ(r.cost.bound, "dram");
  EXPECT_DOUBLE_EQ(r.cost.dram_bytes, 2.0 * (1 << 18) * 256 * 2);  // read once, written once
}

TEST(TileRoofline, MissingArgumentIsAnError) {
  const Target h100 = Target::h100_sxm();
  const ir::Program p = lower_text(gemm_source(), kBig, h100);
  ASSERT_EQ(missing_scalar_args(p, {{"M", 1}}).size(), 2u);
  expect_error(
      [&] {
        estimate_tile_program(p, {{"M", 1}, {"N", 1}}, h100);
      },
      "the scalar parameter 'K' has no value");
}

TEST(TileRecommend, DefaultAxesAreTheTileConstants) {
  Diagnostics diags;
  const std::optional<ir::Program> p = ir::parse_program(gemm_source(), diags);
  ASSERT_TRUE(p);
  const std::vector<TileAxis> axes = default_tile_axes(*p);
  ASSERT_EQ(axes.size(), 4u);  // GROUP keeps its value
  EXPECT_EQ(axes[0].name, "BM");
  EXPECT_EQ(axes[0].values, (std::vector<int64_t>{16, 32, 64, 128, 256}));
  EXPECT_EQ(axes[2].name, "BK");
  EXPECT_EQ(axes[2].values, (std::vector<int64_t>{16, 32, 64, 128}));
  EXPECT_EQ(axes[3].name, "STAGES");
  EXPECT_EQ(axes[3].values, (std::vector<int64_t>{2, 3, 4, 5}));
  const std::vector<TileAxis> more = with_overrides(*p, axes, {{"GROUP", {1, 8}}, {"BM", {128}}});
  ASSERT_EQ(more.size(), 5u);
  EXPECT_EQ(more[0].values, (std::vector<int64_t>{128}));
  EXPECT_EQ(more[4].name, "GROUP");
  expect_error([&] { with_overrides(*p, axes, {{"BX", {1}}}); }, "no integer top-level constant 'BX'");
}

TEST(TileRecommend, SearchesTheWarpPartitionWhereTheProgramNamesIt) {
  // The example with its thread count as a constant: 4 or 8 warps split the tile (tile/tile_layouts.h).
  std::string source = gemm_source();
  const size_t header = source.find("[threads=256]");
  ASSERT_NE(header, std::string::npos);
  source.replace(header, 13, "[threads=THREADS]");
  source.insert(source.find("GROUP = 8"), "THREADS = 256\n");
  Diagnostics diags;
  const std::optional<ir::Program> p = ir::parse_program(source, diags);
  ASSERT_TRUE(p) << diags.render("gemm.tile", source);
  const std::vector<TileAxis> axes = default_tile_axes(*p);
  ASSERT_EQ(axes.size(), 5u);
  EXPECT_EQ(axes[4].name, "THREADS");
  EXPECT_EQ(axes[4].values, (std::vector<int64_t>{128, 256}));
  const TileRecommendation rec = recommend_tiles(
      source, kSquare4k,
      {{"BM", {128}}, {"BN", {128, 256}}, {"BK", {64}}, {"STAGES", {3}}, {"THREADS", {128, 256}}},
      Target::generic_sm80());
  ASSERT_EQ(rec.space_size(), 4u);
  ASSERT_FALSE(rec.ranked.empty());
  for (const TileCandidate& c : rec.ranked)
    EXPECT_EQ(c.estimate->cost.threads, c.values[4].second) << c.name();
}

TEST(TileRecommend, DropsWhatCannotRunAndRanksTheRest) {
  const std::vector<TileAxis> axes = {
      {"BM", {64, 128, 256}}, {"BN", {128, 256}}, {"BK", {64, 128}}, {"STAGES", {2, 4, 5}}};
  const TileRecommendation rec = recommend_tiles(gemm_source(), kSquare4k, axes, Target::h100_sxm());
  EXPECT_EQ(rec.space_size(), 36u);
  auto dropped = [&](const std::string& name) -> const TileCandidate* {
    for (const TileCandidate& c : rec.dropped)
      if (c.name() == name) return &c;
    return nullptr;
  };
  // Five stages of 128 x 256 x 128 tiles: 480 KB of shared memory, refused by the tile layer.
  const TileCandidate* overflow = dropped("BM=128 BN=256 BK=128 STAGES=5");
  ASSERT_TRUE(overflow);
  EXPECT_TRUE(overflow->dropped_by_lowering);
  EXPECT_NE(overflow->dropped.find("shared memory"), std::string::npos) << overflow->dropped;
  // A 256 x 256 f32 accumulator over 256 threads needs 256 registers each: over the limit.
  const TileCandidate* registers = dropped("BM=256 BN=256 BK=64 STAGES=2");
  ASSERT_TRUE(registers);
  EXPECT_FALSE(registers->dropped_by_lowering);
  EXPECT_NE(registers->dropped.find("registers per thread"), std::string::npos) << registers->dropped;
  ASSERT_FALSE(rec.ranked.empty());
  for (size_t i = 1; i < rec.ranked.size(); ++i)
    EXPECT_LE(rec.ranked[i - 1].estimate->cost.seconds, rec.ranked[i].estimate->cost.seconds);
  EXPECT_EQ(rec.ranked[0].estimate->cost.bound, "tensor");
  EXPECT_GE(rec.ranked[0].values[0].second * rec.ranked[0].values[1].second, 128 * 128);
}

TEST(TileRecommend, L40sTakesSmallerPipelinesWithoutWgmma) {
  const std::vector<TileAxis> axes = {
      {"BM", {128}}, {"BN", {128, 256}}, {"BK", {32, 64}}, {"STAGES", {2, 3, 4}}};
  const TileRecommendation rec = recommend_tiles(gemm_source(), kSquare4k, axes, Target::l40s());
  ASSERT_FALSE(rec.ranked.empty());
  for (const TileCandidate& c : rec.ranked) {
    EXPECT_LE(c.estimate->shared_bytes, 99 * 1024) << c.name();
    EXPECT_FALSE(c.estimate->block.wgmma) << c.name();
  }
  // 128 x 256 x 64 with 4 stages needs 196 KB: more than the L40S's 99 KB.
  EXPECT_TRUE(std::any_of(rec.dropped.begin(), rec.dropped.end(),
                          [](const TileCandidate& c) { return c.name() == "BM=128 BN=256 BK=64 STAGES=4"; }));
}

TEST(TileRecommend, CheckRankingAgainstMeasuredTimes) {
  // Ranked 0..4; candidate 2 failed; the fastest measured is candidate 3.
  const std::vector<std::optional<double>> us = {105.0, 110.0, std::nullopt, 100.0, 120.0};
  const RankingCheck c = check_ranking(us, 100);  // a space of 100: its top 5% is the first 5 ranked
  EXPECT_EQ(c.measured_rank, (std::vector<size_t>{2, 3, 0, 1, 4}));
  ASSERT_TRUE(c.best);
  EXPECT_EQ(*c.best, 3u);
  ASSERT_TRUE(c.first_choice_gap);
  EXPECT_NEAR(*c.first_choice_gap, 0.05, 1e-12);
  EXPECT_EQ(c.top_count, 5u);
  ASSERT_TRUE(c.top_fraction);
  EXPECT_DOUBLE_EQ(*c.top_fraction, 1.0);  // the best is in the top 5%
  // A space of 20: the top 5% is the first choice alone.
  const RankingCheck small = check_ranking(us, 20);
  EXPECT_EQ(small.top_count, 1u);
  EXPECT_NEAR(*small.top_fraction, 100.0 / 105, 1e-12);
  // Nothing measured: no best, no gap.
  const RankingCheck none = check_ranking({std::nullopt, std::nullopt}, 2);
  EXPECT_FALSE(none.best);
  EXPECT_FALSE(none.first_choice_gap);
  EXPECT_FALSE(none.top_fraction);
}

TEST(TileRecommend, MissingArgumentIsAnError) {
  expect_error(
      [] {
        recommend_tiles(gemm_source(), {{"M", 64}}, {{"BM", {64}}}, Target::h100_sxm());
      },
      "the scalar parameter 'N' has no value");
}

}  // namespace
}  // namespace tilevm::tune
