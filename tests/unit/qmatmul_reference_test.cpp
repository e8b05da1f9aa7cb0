// ops::qmatmul_reference and ops::check_qmatmul (include/tilevm/ops/qmatmul/qmatmul_reference.h): the
// reference is exact where the answer is known, the comparison accepts correctly rounded outputs and catches
// wrong ones.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "expect_error.h"
#include "qmatmul_test_util.h"
#include "tilevm/ops/qmatmul/qmatmul_reference.h"
#include "tilevm/support/error.h"
#include "tilevm/type/convert.h"

namespace tilevm::ops {
namespace {

struct Case {
  QMatmulProblem problem;
  std::vector<uint16_t> a;
  QuantizedWeight weight;
};

// The shared seeded inputs (qmatmul_test_util.h) with their problem.
Case make_case(int64_t m, int64_t n, int64_t k, DataType w, int64_t group, DataType atype = DataType::f16(),
               bool zero_point = false, uint64_t seed = 1) {
  const QMatmulProblem p = make_problem(m, n, k, w, group, atype, zero_point);
  QMatmulCase data = ops::make_case(p, seed);
  return {p, std::move(data.a), std::move(data.weight)};
}

// C rounded to ATYPE from the reference: what a perfect kernel outputs.
std::vector<uint16_t> rounded(const Case& c, const QMatmulReference& ref) {
  std::vector<uint16_t> out;
  for (double v : ref.c) out.push_back(static_cast<uint16_t>(encode(c.problem.atype, v)));
  return out;
}

TEST(QMatmulReference, IdentityWeightGivesA) {
  // f16 weights are not quantized (every scale is 1): W = I makes C = A exactly.
  const int64_t k = 32;
  std::vector<float> eye(static_cast<size_t>(k * k), 0.0f);
  for (int64_t i = 0; i < k; ++i) eye[static_cast<size_t>(i * k + i)] = 1.0f;
  const QMatmulProblem p = make_problem(3, k, k, DataType::f16(), k);
  const QuantizedWeight w = quantize(eye, k, k, QuantSpec{p.wtype, k, p.atype, false});
  std::vector<uint16_t> a;
  for (int64_t i = 0; i < p.m * k; ++i)
    a.push_back(static_cast<uint16_t>(encode(p.atype, 0.01 * static_cast<double>(i) - 0.3)));
  const QMatmulReference ref = qmatmul_reference(p, a, w);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(ref.c[i], decode(p.atype, a[i])) << i;
  const QMatmulCheck check = check_qmatmul(p, a, ref);
  EXPECT_TRUE(check.passed()) << check.summary();
  EXPECT_EQ(check.worst_error, 0);
}

TEST(QMatmulReference, MatchesADirectSum) {
  const Case c = make_case(2, 5, 64, DataType::int_(4), 32);
  const QMatmulReference ref = qmatmul_reference(c.problem, c.a, c.weight);
  const std::vector<double> w = dequantize(c.weight);
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 5; ++j) {
      double sum = 0, mag = 0;
      for (int64_t kk = 0; kk < 64; ++kk) {
        const double term = decode(DataType::f16(), c.a[static_cast<size_t>(i * 64 + kk)]) *
                            w[static_cast<size_t>(kk * 5 + j)];
        sum += term;
        mag += std::abs(term);
      }
      EXPECT_DOUBLE_EQ(ref.c[static_cast<size_t>(i * 5 + j)], sum);
      EXPECT_DOUBLE_EQ(ref.magnitude[static_cast<size_t>(i * 5 + j)], mag);
    }
  }
}

TEST(QMatmulReference, PerfectOutputPassesAndWrongOutputsFail) {
  for (DataType atype : {DataType::f16(), DataType::bf16()}) {
    const Case c = make_case(4, 24, 256, DataType::uint(4), 64, atype, /*zero_point=*/true);
    SCOPED_TRACE(c.problem.key());
    const QMatmulReference ref = qmatmul_reference(c.problem, c.a, c.weight);
    std::vector<uint16_t> out = rounded(c, ref);
    EXPECT_TRUE(check_qmatmul(c.problem, out, ref).passed());

    // One element one ulp off is within tolerance (the accumulation order may differ); one moved by 5%
    // is not, and the report names it.
    out[7] = static_cast<uint16_t>(out[7] + 1);
    EXPECT_TRUE(check_qmatmul(c.problem, out, ref).passed());
    out[30] = static_cast<uint16_t>(encode(atype, ref.c[30] * 1.05 + 0.05));
    const QMatmulCheck bad = check_qmatmul(c.problem, out, ref);
    EXPECT_EQ(bad.mismatches, 1);
    EXPECT_EQ(bad.worst_row, 1);
    EXPECT_EQ(bad.worst_col, 6);
    EXPECT_NE(bad.summary().find("1 of 96 outputs mismatch; worst C[1, 6]"), std::string::npos)
        << bad.summary();

    // An unwritten (NaN-poisoned) output always fails.
    out = rounded(c, ref);
    out[95] = 0xffff;
    const QMatmulCheck nan = check_qmatmul(c.problem, out, ref);
    EXPECT_EQ(nan.mismatches, 1);
    EXPECT_EQ(nan.worst_row, 3);
    EXPECT_EQ(nan.worst_col, 23);
    EXPECT_TRUE(std::isnan(nan.worst_value));
  }
}

TEST(QMatmulReference, AWrongGroupScaleFails) {
  // A kernel that used the next group's scales: nearly every output is off by far more than the tolerance.
  const Case c = make_case(3, 16, 256, DataType::int_(4), 32);
  const QMatmulReference ref = qmatmul_reference(c.problem, c.a, c.weight);
  QuantizedWeight shifted = c.weight;
  const int64_t groups = 256 / 32;
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t j = 0; j < 16; ++j)
      shifted.scales[static_cast<size_t>(g * 16 + j)] =
          c.weight.scales[static_cast<size_t>(((g + 1) % groups) * 16 + j)];
  const std::vector<uint16_t> wrong = rounded(c, qmatmul_reference(c.problem, c.a, shifted));
  EXPECT_GT(check_qmatmul(c.problem, wrong, ref).mismatches, 40);
}

TEST(QMatmulReference, ToleranceGrowsOnTheF32Path) {
  QMatmulProblem fast;
  fast.m = 1;
  fast.n = 8;
  fast.k = 4096;
  fast.wtype = DataType::int_(4);
  QMatmulProblem slow = fast;
  slow.wtype = DataType::float_(6, 1);  // a wider exponent range than f16: rounded to f16 before the mma
  ASSERT_TRUE(qmatmul_weight_fits(fast.wtype, fast.atype));
  ASSERT_FALSE(qmatmul_weight_fits(slow.wtype, slow.atype));
  EXPECT_GT(qmatmul_tolerance(slow, 1.0, 100.0), qmatmul_tolerance(fast, 1.0, 100.0));
  // dequant_gemm rounds every dequantized weight to ATYPE too: the same term as the f32 path.
  EXPECT_EQ(qmatmul_tolerance(fast, 1.0, 100.0, /*weights_rounded=*/true),
            qmatmul_tolerance(slow, 1.0, 100.0));
  EXPECT_GT(qmatmul_tolerance(fast, 1.0, 200.0), qmatmul_tolerance(fast, 1.0, 100.0));
  EXPECT_GT(qmatmul_tolerance(fast, 2.0, 100.0), qmatmul_tolerance(fast, 1.0, 100.0));
  // Yet far below the effect of one dropped group of 128 products of magnitude ~0.25.
  EXPECT_LT(qmatmul_tolerance(fast, 30.0, 4096 * 0.25), 0.1 * std::sqrt(128.0) * 0.25);
}

TEST(QMatmulReference, MismatchedInputsThrow) {
  const Case c = make_case(2, 8, 64, DataType::uint(4), 32);
  QMatmulProblem other = c.problem;
  other.k = 128;
  expect_error([&] { qmatmul_reference(other, c.a, c.weight); }, "A has 128 elements");
  other = c.problem;
  other.wtype = DataType::uint(3);
  expect_error([&] { qmatmul_reference(other, c.a, c.weight); }, "the weight is u4 with group 32");
  const QMatmulReference ref = qmatmul_reference(c.problem, c.a, c.weight);
  const std::vector<uint16_t> short_c(15);
  expect_error([&] { check_qmatmul(c.problem, short_c, ref); }, "C has 15 elements, the reference is [2, 8]");
}

}  // namespace
}  // namespace tilevm::ops
