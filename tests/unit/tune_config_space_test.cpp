// ops::qmatmul_config_space (include/tilevm/ops/qmatmul/config_space.h): the declared space, its rules and
// sizes.
#include <gtest/gtest.h>

#include "qmatmul_test_util.h"

#include <set>
#include <string>

#include "expect_error.h"
#include "tilevm/ops/qmatmul/config_space.h"
#include "tilevm/support/error.h"

namespace tilevm::ops {
namespace {

ops::QMatmulProblem problem(int64_t m, int64_t n, int64_t k, DataType w = DataType::uint(4),
                            int64_t group = 128) {
  return ops::make_problem(m, n, k, w, group);
}

// Every member passes check_config, and names are unique (the tuning cache and reports key on them).
void expect_valid_and_unique(const ops::QMatmulProblem& p, const std::vector<ops::QMatmulConfig>& space) {
  std::set<std::string> names;
  for (const ops::QMatmulConfig& c : space) {
    EXPECT_NO_THROW(ops::check_config(p, c)) << c.name();
    EXPECT_TRUE(names.insert(c.name()).second) << "duplicate " << c.name();
  }
}

TEST(TuneConfigSpace, DecodeShapesHaveAFewHundred) {
  for (int64_t m : {1, 16}) {
    for (auto [n, k] :
         {std::pair<int64_t, int64_t>{8192, 8192}, {10240, 8192}, {8192, 28672}, {4096, 4096}}) {
      const ops::QMatmulProblem p = problem(m, n, k);
      const auto space = qmatmul_config_space(p, {.dequant_gemm = false});
      SCOPED_TRACE(p.key());
      EXPECT_GE(space.size(), 100u);
      EXPECT_LE(space.size(), 480u);
      expect_valid_and_unique(p, space);
      // Decode never uses a block taller than 16 rows (8 with swapped operands, M <= 8), and split-K is in
      // the space.
      for (const auto& c : space) EXPECT_TRUE(c.block_m == 16 || (m <= 8 && c.block_m == 8)) << c.name();
      EXPECT_TRUE(std::any_of(space.begin(), space.end(), [](const auto& c) { return c.split_k > 1; }));
    }
  }
}

TEST(TuneConfigSpace, LargerDecodeBatchAndWideLayer) {
  for (const ops::QMatmulProblem& p :
       {problem(64, 8192, 8192), problem(16, 57344, 8192), problem(33, 8192, 28672)}) {
    SCOPED_TRACE(p.key());
    const auto space = qmatmul_config_space(p);
    EXPECT_GE(space.size(), 40u);
    EXPECT_LE(space.size(), 500u);  // the wgmma form twice: with and without warp specialization
    expect_valid_and_unique(p, space);
  }
}

TEST(TuneConfigSpace, DequantGemmComesLastUnlessExcluded) {
  for (const ops::QMatmulProblem& p :
       {problem(1, 8192, 8192), problem(4096, 8192, 8192), problem(3, 20, 64, DataType::int_(3), 32)}) {
    const auto with = qmatmul_config_space(p);
    const auto without = qmatmul_config_space(p, {.dequant_gemm = false});
    ASSERT_EQ(with.size(), without.size() + 1);
    EXPECT_TRUE(with.back().dequant_gemm);
    EXPECT_EQ(with.back().name(), "dequant_gemm");
    for (const auto& c : without) EXPECT_FALSE(c.dequant_gemm);
  }
}

TEST(TuneConfigSpace, PrefillUsesLargeBlocksAndNoSplit) {
  const ops::QMatmulProblem p = problem(4096, 8192, 8192);
  const auto space = qmatmul_config_space(p, {.dequant_gemm = false});
  EXPECT_GE(space.size(), 50u);
  expect_valid_and_unique(p, space);
  for (const auto& c : space) {
    EXPECT_GE(c.block_m, 64) << c.name();
    EXPECT_EQ(c.split_k, 1) << c.name();  // 2048+ tiles already fill the machine
    if (c.wgmma) continue;                // its warps' pieces are the wgmma's: 64 columns per warpgroup
    EXPECT_GE(c.block_m / c.warps_m, 32) << c.name();
    EXPECT_GE(c.block_n / c.warps_n, 32) << c.name();
  }
}

TEST(TuneConfigSpace, RulesHoldOnEveryMember) {
  for (const ops::QMatmulProblem& p :
       {problem(1, 8192, 8192, DataType::int_(3), 32), problem(7, 300, 512),
        problem(200, 1000, 1024, DataType::uint(8), 1024), problem(1, 256, 128)}) {
    SCOPED_TRACE(p.key());
    const auto space = qmatmul_config_space(p, {.dequant_gemm = false});
    ASSERT_FALSE(space.empty());
    for (const auto& c : space) {
      SCOPED_TRACE(c.name());
      EXPECT_TRUE(p.group == p.k || p.group % c.slice_k == 0);  // no slice straddles a group
      EXPECT_GE(c.threads(), c.block_n == 32 ? 32 : 64);
      EXPECT_LE(c.threads(), 256);
      EXPECT_GE(c.stages, 2);
      EXPECT_LE(c.stages, 5);
      EXPECT_LE(c.split_k, 16);
      // A split keeps at least two k-tiles, and so does warps along K's single block (a longer stage than K
      // would only pad); a plain split-1 block may have one (a stage longer than K pads it with zeros).
      if (c.split_k > 1 || c.warps_k > 1) {
        EXPECT_GE((p.k + c.block_k - 1) / c.block_k, 2 * c.split_k);
      }
    }
  }
}

TEST(TuneConfigSpace, DecodeIncludesWarpsAlongK) {
  auto count = [](const ops::QMatmulProblem& p) {
    const auto space = qmatmul_config_space(p, {.dequant_gemm = false});
    return std::count_if(space.begin(), space.end(), [&](const ops::QMatmulConfig& c) {
      if (c.warps_k > 1) {
        EXPECT_EQ(c.slice_k, p.group == p.k ? 128 : p.group) << c.name();
        EXPECT_LE(c.threads(), 256) << c.name();
      }
      return c.warps_k > 1;
    });
  };
  EXPECT_GT(count(problem(1, 8192, 8192)), 10);
  EXPECT_GT(count(problem(16, 8192, 8192, DataType::uint(2), 32)), 10);
  EXPECT_EQ(count(problem(16, 8192, 8192, DataType::float_(6, 1), 128)),
            0);                                    // the f32 path: no warps along K
  EXPECT_EQ(count(problem(4096, 8192, 8192)), 0);  // prefill
}

// M <= 8 adds configurations with the mma's operands swapped (block_m 8); not with zero points, not on the
// f32 path, not for M > 8.
TEST(TuneConfigSpace, SmallDecodeIncludesSwappedOperands) {
  auto swapped = [](const ops::QMatmulProblem& p) {
    const auto space = qmatmul_config_space(p, {.dequant_gemm = false});
    return std::count_if(space.begin(), space.end(), [](const ops::QMatmulConfig& c) { return c.swapped(); });
  };
  EXPECT_GE(swapped(problem(1, 8192, 8192)), 10);
  EXPECT_GE(swapped(problem(8, 57344, 8192, DataType::uint(1), 128)), 5);
  EXPECT_EQ(swapped(problem(9, 8192, 8192)), 0);
  EXPECT_EQ(swapped(problem(1, 8192, 8192, DataType::float_(6, 1), 128)), 0);
  ops::QMatmulProblem z = problem(1, 8192, 8192);
  z.zero_point = true;
  EXPECT_EQ(swapped(z), swapped(problem(1, 8192, 8192)));  // zero points take the swapped form too
}

// Blocks of one warp only where they are few: 8192 x 57344 has none (they measured 1.4-1.7 x slower there on
// the H100), 8192 x 8192 keeps them, and every weight type still has a space on the wide layer.
TEST(TuneConfigSpace, OneWarpBlocksOnlyWhereFew) {
  auto one_warp = [](const ops::QMatmulProblem& p) {
    const auto space = qmatmul_config_space(p, {.dequant_gemm = false});
    return std::count_if(space.begin(), space.end(),
                         [](const ops::QMatmulConfig& c) { return c.threads() == 32; });
  };
  for (int64_t m : {1, 16}) {
    EXPECT_EQ(one_warp(problem(m, 57344, 8192)), 0);
    EXPECT_GT(one_warp(problem(m, 8192, 8192)), 0);
  }
  for (DataType w : all_data_types()) {
    if (w.is_bool() || w.bits() > 8 || !(w.is_integer() || w.is_float())) continue;
    for (int64_t group : {32, 128}) {
      const ops::QMatmulProblem p = problem(1, 57344, 8192, w, group);
      SCOPED_TRACE(p.key());
      EXPECT_FALSE(qmatmul_config_space(p, {.dequant_gemm = false}).empty());
    }
  }
}

TEST(TuneConfigSpace, TinyShapesStillHaveConfigurations) {
  // Every weight type: odd widths at G = 32 need 32-column warps to fill whole code words.
  for (DataType w : all_data_types()) {
    if (w.is_bool() || w.bits() > 8 || !(w.is_integer() || w.is_float())) continue;
    const ops::QMatmulProblem p = problem(3, 20, 64, w, 32);
    SCOPED_TRACE(p.key());
    const auto space = qmatmul_config_space(p, {.dequant_gemm = false});
    ASSERT_FALSE(space.empty());
    for (const auto& c : space) {
      EXPECT_EQ(c.block_n, 32);  // the smallest power of two >= 20, but at least 32
      if (c.swapped()) {         // one slice of G per stage
        EXPECT_EQ(c.block_k, 32) << c.name();
        continue;
      }
      EXPECT_EQ(c.block_m, 16);
      EXPECT_EQ(c.block_k, 64);
    }
  }
}

TEST(TuneConfigSpace, InvalidProblemThrows) {
  const auto k100 = problem(1, 64, 100, DataType::uint(4), 32);
  expect_error([&] { qmatmul_config_space(k100); }, "k (100) must be a multiple of the group size (32)");
  expect_error([&] { qmatmul_config_space(problem(0, 64, 64)); }, "must be positive, got m=0 n=64 k=64");
}

}  // namespace
}  // namespace tilevm::ops
