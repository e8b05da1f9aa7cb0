// ops::run_qmatmul_interp (include/tilevm/ops/qmatmul/qmatmul_interp.h): the transform, matmul and reduce
// programs on the interpreter, for every weight type, against the double reference (qmatmul_reference.h).
// Shapes are small and odd (M and N not multiples of the tile) because the interpreter simulates every
// thread.
#include <gtest/gtest.h>

#include "qmatmul_test_util.h"

#include <random>
#include <string>
#include <vector>

#include "expect_error.h"
#include "tilevm/ops/qmatmul/qmatmul_interp.h"
#include "tilevm/ops/qmatmul/qmatmul_reference.h"
#include "tilevm/ops/qmatmul/qmatmul_template.h"
#include "tilevm/support/error.h"
#include "tilevm/type/convert.h"

namespace tilevm::ops {
namespace {

// i1..i8, u1..u8 and every float of 3 to 8 bits.
std::vector<DataType> low_bit_types() {
  std::vector<DataType> types;
  for (DataType t : all_data_types())
    if (!t.is_bool() && t.bits() <= 8 && (t.is_integer() || t.is_float())) types.push_back(t);
  return types;
}

QMatmulProblem problem(int64_t m, int64_t n, int64_t k, DataType w, int64_t group,
                       DataType atype = DataType::f16(), bool zero_point = false) {
  return make_problem(m, n, k, w, group, atype, zero_point);
}

// Quantizes a seeded random weight, runs the three programs and compares with the reference; returns the
// check (or fails the test when the run fails).
QMatmulCheck run_case(const QMatmulProblem& p, const std::string& config_name, uint64_t seed = 7) {
  SCOPED_TRACE(p.key() + " " + config_name);
  const auto [a, weight] = make_case(p, seed);
  std::vector<uint16_t> c;
  Diagnostics diags;
  const bool ok = run_qmatmul_interp(p, QMatmulConfig::parse(config_name), a, weight, c, diags);
  EXPECT_TRUE(ok) << diags.render("qmatmul", "");
  if (!ok) return {};
  const QMatmulCheck check = check_qmatmul(p, c, qmatmul_reference(p, a, weight),
                                           qmatmul_weights_rounded(p, QMatmulConfig::parse(config_name)));
  EXPECT_TRUE(check.passed()) << check.summary();
  EXPECT_EQ(check.outputs, p.m * p.n);
  return check;
}

// One warp, one 32-column tile: every width fills whole code words at slice_k 32.
const char* kSmall = "bm16_bn32_bk32_sk32_w1x1_s2_k1";

class QMatmulInterpType : public ::testing::TestWithParam<DataType> {};

TEST_P(QMatmulInterpType, OddShapeGroup32) {
  run_case(problem(3, 20, 64, GetParam(), 32), kSmall);
}

TEST_P(QMatmulInterpType, Bf16Activations) {
  run_case(problem(3, 20, 64, GetParam(), 32, DataType::bf16()), kSmall, 11);
}

INSTANTIATE_TEST_SUITE_P(EveryWeightType, QMatmulInterpType, ::testing::ValuesIn(low_bit_types()),
                         [](const auto& info) { return info.param.name(); });

class QMatmulInterpUnsigned : public ::testing::TestWithParam<int> {};

TEST_P(QMatmulInterpUnsigned, ZeroPoints) {
  run_case(problem(3, 20, 64, DataType::uint(GetParam()), 32, DataType::f16(), true), kSmall, 13);
}

INSTANTIATE_TEST_SUITE_P(U1ToU8, QMatmulInterpUnsigned, ::testing::Range(1, 9),
                         [](const auto& info) { return "u" + std::to_string(info.param); });

// Swapped operands (block_m 8: the weights as the mma's A operand): every width that fits f16 at odd shapes,
// bf16, two row tiles with split-K, and per-channel scales.
class QMatmulInterpSwapped : public ::testing::TestWithParam<DataType> {};

TEST_P(QMatmulInterpSwapped, OddShapes) {
  run_case(problem(3, 40, 128, GetParam(), 32), "bm8_bn32_bk64_sk32_w1x1_s2_k1", 37);
  run_case(problem(9, 20, 256, GetParam(), 128, DataType::bf16()), "bm8_bn32_bk128_sk128_w1x1_s3_k2", 41);
  run_case(problem(2, 64, 128, GetParam(), 128), "bm8_bn64_bk64_sk64_w1x2_s2_k1", 43);
}

INSTANTIATE_TEST_SUITE_P(EveryWidth, QMatmulInterpSwapped,
                         ::testing::Values(DataType::uint(1), DataType::int_(2), DataType::uint(3),
                                           DataType::uint(4), DataType::int_(4), DataType::float_(2, 1),
                                           DataType::uint(6), DataType::f8e4m3(), DataType::uint(8)),
                         [](const auto& info) { return info.param.name(); });

// Zero points in the swapped form: every unsigned width (the 1-, 2- and 4-bit ones through the pair
// layouts), per group with two groups a stage and split-K, per channel (one row loaded once), and bf16.
TEST_P(QMatmulInterpUnsigned, SwappedZeroPoints) {
  const DataType w = DataType::uint(GetParam());
  run_case(problem(3, 40, 128, w, 32, DataType::f16(), true), "bm8_bn32_bk64_sk32_w1x1_s2_k1", 47);
  run_case(problem(9, 64, 256, w, 64, DataType::bf16(), true), "bm8_bn64_bk128_sk64_w1x2_s3_k2", 53);
  run_case(problem(2, 32, 192, w, 192, DataType::f16(), true), "bm8_bn32_bk64_sk64_w1x1_s2_k1", 59);
}

TEST(QMatmulInterp, SplitKWithTwoRowTiles) {
  // M = 17: two 16-row tiles per warp; split-K 2 over 2 k-tiles, f32 partials summed by the reduce program.
  for (DataType w : {DataType::uint(4), DataType::int_(3), DataType::float_(2, 1), DataType::f8e4m3()}) {
    run_case(problem(17, 20, 128, w, 64), "bm32_bn32_bk64_sk64_w1x1_s2_k2", 17);
  }
}

TEST(QMatmulInterp, SplitKWithZeroPointsAndBf16) {
  run_case(problem(5, 36, 128, DataType::uint(5), 32, DataType::bf16(), true),
           "bm16_bn32_bk32_sk32_w1x1_s3_k4", 19);
}

TEST(QMatmulInterp, PerChannelScales) {
  for (DataType w : {DataType::uint(4), DataType::int_(8), DataType::float_(3, 2)}) {
    run_case(problem(3, 20, 96, w, 96), "bm16_bn32_bk32_sk32_w1x1_s2_k1", 23);
  }
  run_case(problem(3, 20, 96, DataType::uint(4), 96, DataType::bf16()), "bm16_bn32_bk32_sk32_w1x1_s2_k1", 29);
}

// Per-channel scales with zero points: the single row of zeros is loaded once and subtracted every slice
// (this combination once lost its zero term).
TEST(QMatmulInterp, PerChannelZeroPoints) {
  for (DataType atype : {DataType::f16(), DataType::bf16()}) {
    run_case(problem(3, 20, 96, DataType::uint(2), 96, atype, true), "bm16_bn32_bk32_sk32_w1x1_s2_k1", 29);
    run_case(problem(3, 20, 96, DataType::uint(8), 96, atype, true), "bm16_bn32_bk32_sk32_w1x1_s2_k1", 31);
  }
}

TEST(QMatmulInterp, UnquantizedF16AndBf16) {
  run_case(problem(3, 20, 64, DataType::f16(), 64), kSmall, 31);
  run_case(problem(3, 20, 64, DataType::bf16(), 64, DataType::bf16()), kSmall, 37);
}

TEST(QMatmulInterp, TwoWarpsAndTwoColumnTiles) {
  // N = 40 over 32-wide blocks of 2 warps (16 columns each): even widths at slice_k 64.
  for (DataType w : {DataType::uint(4), DataType::int_(2), DataType::f8e5m2()}) {
    run_case(problem(2, 40, 128, w, 64), "bm16_bn32_bk64_sk64_w1x2_s3_k1", 41);
  }
}

TEST(QMatmulInterp, HeuristicConfigurations) {
  // What `tilevm qmatmul --interp` runs without --config.
  for (const QMatmulProblem& p :
       {problem(3, 20, 64, DataType::uint(4), 32), problem(17, 40, 256, DataType::int_(5), 128),
        problem(1, 72, 128, DataType::f8e4m3(), 64, DataType::bf16())}) {
    run_case(p, heuristic_qmatmul_config(p, qmatmul_default_target(), /*allow_dequant_gemm=*/false).name(),
             43);
  }
}

TEST(QMatmulInterp, Errors) {
  const QMatmulProblem p = problem(3, 20, 64, DataType::uint(4), 32);
  std::vector<uint16_t> a(3 * 64), c;
  std::vector<float> w(64 * 20, 0.5f);
  const QuantizedWeight weight = quantize(w, 64, 20, QuantSpec{p.wtype, 32, p.atype, false});
  Diagnostics diags;
  const QMatmulConfig small = QMatmulConfig::parse(kSmall), dequant_gemm{.dequant_gemm = true};
  expect_error([&] { run_qmatmul_interp(p, dequant_gemm, a, weight, c, diags); }, "only the fused template");
  const QMatmulConfig n20 = QMatmulConfig::parse("bm16_bn20_bk32_sk32_w1x1_s2_k1");
  expect_error([&] { run_qmatmul_interp(p, n20, a, weight, c, diags); }, "block_n (20) must be");
  std::vector<uint16_t> short_a(10);
  expect_error([&] { run_qmatmul_interp(p, small, short_a, weight, c, diags); }, "A has 10 elements");
  QMatmulProblem other = p;
  other.wtype = DataType::uint(3);
  expect_error([&] { run_qmatmul_interp(other, small, a, weight, c, diags); }, "does not match the problem");
}

}  // namespace
}  // namespace tilevm::ops
