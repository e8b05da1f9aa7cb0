// Weight quantization (ops/quantize.h): for every weight type of 8 bits or fewer and f16/bf16, seeded random
// weights survive quantize + dequantize within a bound computed here from the type's formula (half a
// quantization step at the value's magnitude, plus how far the value lies outside the representable range);
// the packed codes equal an independent re-encoding; hand-made exact cases, the tie to even, the zero-point
// path, the scale guards and every error message.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "tilevm/ops/quantize.h"
#include "tilevm/support/error.h"
#include "tilevm/type/convert.h"
#include "tilevm/type/packing.h"

namespace tilevm::ops {
namespace {

constexpr int64_t kK = 256;
constexpr int64_t kN = 8;

// Every type quantize accepts: the integers and floats of 8 bits or fewer, then f16 and bf16.
std::vector<DataType> weight_types() {
  std::vector<DataType> types;
  for (DataType t : all_data_types()) {
    if (t.bits() <= 8 && (t.is_integer() || t.is_float())) types.push_back(t);
  }
  types.push_back(DataType::f16());
  types.push_back(DataType::bf16());
  return types;
}

bool passthrough(DataType t) {
  return t == DataType::f16() || t == DataType::bf16();
}

// Normal weights with a per-column spread (so groups get different scales) and a few outliers.
std::vector<float> random_weights(uint32_t seed, int64_t k = kK, int64_t n = kN) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(k * n));
  for (int64_t r = 0; r < k; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      float v = normal(rng) * std::ldexp(1.0f, static_cast<int>(c) - 4);
      if (rng() % 50 == 0) v *= 8;
      w[static_cast<size_t>(r * n + c)] = v;
    }
  }
  return w;
}

// The code range of a weight type as values, from the formula of docs/language.md section 2 (not DataType).
double type_max(DataType t) {
  if (t.kind() == TypeKind::SignedInt) return std::ldexp(1.0, t.bits() - 1) - 1;
  if (t.kind() == TypeKind::UnsignedInt) return std::ldexp(1.0, t.bits()) - 1;
  const int e = t.exponent_bits(), m = t.mantissa_bits();
  const int bias = (1 << (e - 1)) - 1;
  int top_exponent = (1 << e) - 1 - bias;  // finite-only: the all-ones binade is ordinary
  double top_fraction = 2 - std::ldexp(1.0, -m);
  if (e >= 5 || t.bits() > 8) top_exponent -= 1;                    // IEEE: all-ones is inf/NaN
  if (e == 4 && m == 3) top_fraction = 2 - std::ldexp(1.0, 1 - m);  // E4M3FN: S.1111.111 is NaN
  return top_fraction * std::ldexp(1.0, top_exponent);
}
double type_min(DataType t) {
  if (t.kind() == TypeKind::SignedInt) return -std::ldexp(1.0, t.bits() - 1);
  if (t.kind() == TypeKind::UnsignedInt) return 0;
  return -type_max(t);
}

// Half the spacing of the type's values around x = w / s (in units of s).
double half_step(DataType t, double x) {
  if (t.is_integer()) return 0.5;
  const int bias = (1 << (t.exponent_bits() - 1)) - 1;
  const double mag = std::min(std::fabs(x), type_max(t));
  int e = 1 - bias;  // subnormals share the spacing of the lowest normal binade
  if (mag > 0) e = std::max(e, static_cast<int>(std::floor(std::log2(mag))));
  return std::ldexp(1.0, e - t.mantissa_bits()) / 2;
}

// |w - dequantized| may be at most s * half step, plus the distance of w outside [(min - z) s, (max - z) s].
// That distance is only allowed in full where the scheme cannot represent w's sign at all (negatives of an
// unsigned type without zero point, positives of i1); elsewhere it may only come from rounding the scale
// (half an ulp of bf16, 2^-8 relative) or, with a zero point, from rounding the zero point (half a step), so
// a scale that is too small fails here.
double error_bound(DataType t, double w, double s, double z, bool zero_point) {
  const double hi = (type_max(t) - z) * s, lo = (type_min(t) - z) * s;
  const double outside = std::max({0.0, w - hi, lo - w});
  const bool unrepresentable_sign =
      (t.kind() == TypeKind::UnsignedInt && !zero_point && w < 0) || (t == DataType::int_(1) && w > 0);
  const double rounding_slack = std::ldexp(std::fabs(w), -8) + (zero_point ? s / 2 : 0);
  const double allowed = unrepresentable_sign ? outside : std::min(outside, rounding_slack);
  return s * half_step(t, w / s) + allowed + 1e-12 * (std::fabs(w) + s);
}

// Checks every element of dequantize(q) against w, reporting the first few that break the bound.
void expect_within_bound(const std::vector<float>& w, const QuantizedWeight& q) {
  const std::vector<double> back = dequantize(q);
  ASSERT_EQ(back.size(), w.size());
  int failures = 0;
  for (int64_t r = 0; r < q.k; ++r) {
    for (int64_t c = 0; c < q.n; ++c) {
      const size_t i = static_cast<size_t>(r * q.n + c),
                   gi = static_cast<size_t>((r / q.spec.group) * q.n + c);
      const double s = decode(q.spec.scale_type, q.scales[gi]);
      const double z = q.spec.zero_point ? decode(q.spec.scale_type, q.zeros[gi]) : 0.0;
      const double bound = error_bound(q.spec.wtype, w[i], s, z, q.spec.zero_point);
      if (std::fabs(back[i] - w[i]) > bound && failures++ < 3) {
        ADD_FAILURE() << "(" << r << ", " << c << "): w=" << w[i] << " back=" << back[i] << " scale=" << s
                      << " zero=" << z << " bound=" << bound;
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST(QuantQuantize, RandomWeightsRoundTripWithinBound) {
  for (DataType t : weight_types()) {
    for (int64_t g : {int64_t{32}, int64_t{64}, int64_t{128}, kK}) {
      for (DataType st : {DataType::f16(), DataType::bf16()}) {
        SCOPED_TRACE(t.name() + " G=" + std::to_string(g) + " scales " + st.name());
        const std::vector<float> w = random_weights(static_cast<uint32_t>(1000 + g + t.bits()));
        const QuantizedWeight q = quantize(w, kK, kN, {t, g, st});
        ASSERT_EQ(q.scales.size(), static_cast<size_t>(kK / g * kN));
        EXPECT_TRUE(q.zeros.empty());
        expect_within_bound(w, q);
      }
    }
  }
}

TEST(QuantQuantize, ZeroPointRandomWeightsWithinBound) {
  for (int bits = 1; bits <= 8; ++bits) {
    for (int64_t g : {int64_t{32}, kK}) {
      SCOPED_TRACE("u" + std::to_string(bits) + " G=" + std::to_string(g));
      const std::vector<float> w = random_weights(static_cast<uint32_t>(77 + bits));
      const QuantizedWeight q = quantize(w, kK, kN, {DataType::uint(bits), g, DataType::bf16(), true});
      ASSERT_EQ(q.zeros.size(), q.scales.size());
      expect_within_bound(w, q);
    }
  }
}

// The scale is max|w| / Q rounded to nearest even in the scale type, and every code is encode(w / scale):
// both recomputed here, the codes read back by unpacking the stream.
TEST(QuantQuantize, ScalesAndPackedCodesMatchIndependentEncoding) {
  for (DataType t : weight_types()) {
    SCOPED_TRACE(t.name());
    const int64_t g = 64;
    const std::vector<float> w = random_weights(4242);
    const QuantizedWeight q = quantize(w, kK, kN, {t, g});
    ASSERT_EQ(static_cast<int64_t>(q.codes.size()), packed_bytes(t, kK * kN));
    const std::vector<uint64_t> codes = unpack(t, q.codes, kK * kN);
    EXPECT_EQ(pack(t, codes), q.codes);
    for (int64_t gr = 0; gr < kK / g; ++gr) {
      for (int64_t c = 0; c < kN; ++c) {
        double top = 0;
        for (int64_t r = gr * g; r < (gr + 1) * g; ++r) {
          const double v = w[static_cast<size_t>(r * kN + c)];
          top = std::max(top, t.kind() == TypeKind::UnsignedInt ? v : std::fabs(v));
        }
        const double q_range = passthrough(t) ? 0 : (t == DataType::int_(1) ? 1 : type_max(t));
        uint64_t want_scale = encode(DataType::f16(), passthrough(t) ? 1.0 : top / q_range);
        // Wide-range floats (f8e6m1: max ~3.2e9) push the scale below f16's range; the guard keeps it
        // positive.
        if (want_scale == 0) want_scale = 1;
        ASSERT_EQ(q.scales[static_cast<size_t>(gr * kN + c)], want_scale)
            << "group " << gr << " column " << c;
        const double s = decode(DataType::f16(), want_scale);
        for (int64_t r = gr * g; r < (gr + 1) * g; ++r) {
          const size_t i = static_cast<size_t>(r * kN + c);
          ASSERT_EQ(codes[i], encode(t, w[i] / s)) << "row " << r << " column " << c;
        }
      }
    }
  }
}

// A column whose values are multiples of 0.25 up to 7 * 0.25: the scale is exactly 0.25 and i4 and u4 codes
// reproduce every value; f4e2m1 (values 0, 0.5, 1, 1.5, 2, 3, 4, 6) likewise with scale 0.5.
TEST(QuantQuantize, ExactlyRepresentableGroupsRoundTripExactly) {
  const int64_t k = 32, n = 1;
  std::vector<float> ints(k), fp4(k);
  const float fp4_values[] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (int64_t i = 0; i < k; ++i) {
    ints[static_cast<size_t>(i)] = static_cast<float>(i % 15 - 7) * 0.25f;
    fp4[static_cast<size_t>(i)] = (i % 2 ? -0.5f : 0.5f) * fp4_values[i % 8];
  }
  ints[3] = 1.75f;
  fp4[7] = 3.0f;  // max |w| = 6 * 0.5
  for (const auto& [t, w, scale] :
       {std::tuple{DataType::int_(4), ints, 0.25}, std::tuple{DataType::float_(2, 1), fp4, 0.5}}) {
    SCOPED_TRACE(t.name());
    const QuantizedWeight q = quantize(w, k, n, {t, k});
    EXPECT_EQ(decode(DataType::f16(), q.scales[0]), scale);
    const std::vector<double> back = dequantize(q);
    for (int64_t i = 0; i < k; ++i) EXPECT_EQ(back[static_cast<size_t>(i)], w[static_cast<size_t>(i)]) << i;
  }
  std::vector<float> positive(k);
  for (int64_t i = 0; i < k; ++i)
    positive[static_cast<size_t>(i)] = static_cast<float>(i % 16) * 0.25f;  // 0..3.75
  const std::vector<double> back = dequantize(quantize(positive, k, n, {DataType::uint(4), k}));
  for (int64_t i = 0; i < k; ++i)
    EXPECT_EQ(back[static_cast<size_t>(i)], positive[static_cast<size_t>(i)]) << i;
}

// With scale 0.25 (max 1.75 over i4's 7), w = 0.625 is w/scale = 2.5 exactly: it rounds to 2, not 3.
TEST(QuantQuantize, TiesRoundToEven) {
  const std::vector<float> w = {1.75f, 0.625f, 0.875f, -0.625f, -0.875f, 0.375f, 0, 0};
  const QuantizedWeight q = quantize(w, 8, 1, {DataType::int_(4), 8});
  const std::vector<uint64_t> codes = unpack(DataType::int_(4), q.codes, 8);
  EXPECT_EQ(sign_extend(codes[1], 4), 2);   // 2.5 -> 2
  EXPECT_EQ(sign_extend(codes[2], 4), 4);   // 3.5 -> 4
  EXPECT_EQ(sign_extend(codes[3], 4), -2);  // -2.5 -> -2
  EXPECT_EQ(sign_extend(codes[4], 4), -4);  // -3.5 -> -4
  EXPECT_EQ(sign_extend(codes[5], 4), 2);   // 1.5 -> 2
  EXPECT_EQ(dequantize(q)[1], 0.5);
}

// The zero-point path rounds ties to even too: over [-0.625, 3.125] u4 gets scale 3.75 / 15 = 0.25, zero
// point rne(2.5) = 2, and w = 0.625 (w / scale = 2.5) gets code rne(2.5) + 2 = 4, i.e. 0.5.
TEST(QuantQuantize, ZeroPointTiesRoundToEven) {
  const std::vector<float> w = {-0.625f, 3.125f, 0.625f, 0.375f};
  const QuantizedWeight q = quantize(w, 4, 1, {DataType::uint(4), 4, DataType::f16(), true});
  EXPECT_EQ(decode(DataType::f16(), q.scales[0]), 0.25);
  EXPECT_EQ(decode(DataType::f16(), q.zeros[0]), 2.0);
  EXPECT_EQ(unpack(DataType::uint(4), q.codes, 4),
            (std::vector<uint64_t>{0, 14, 4, 4}));  // -2.5, 12.5, 2.5, 1.5 -> even, + 2
  EXPECT_EQ(dequantize(q), (std::vector<double>{-0.5, 3.0, 0.5, 0.5}));
}

// u4 with a zero point over [-3, 5]: scale 8/15 in f16, zero point rne(3 / scale) = 6.
TEST(QuantQuantize, ZeroPointShiftedRange) {
  const int64_t k = 128, n = 4;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-3.0f, 5.0f);
  std::vector<float> w(static_cast<size_t>(k * n));
  for (float& v : w) v = uniform(rng);
  for (int64_t c = 0; c < n; ++c) {  // pin both ends of every group of 32
    for (int64_t gr = 0; gr < k / 32; ++gr) {
      w[static_cast<size_t>((gr * 32) * n + c)] = -3.0f;
      w[static_cast<size_t>((gr * 32 + 1) * n + c)] = 5.0f;
    }
  }
  const QuantizedWeight q = quantize(w, k, n, {DataType::uint(4), 32, DataType::f16(), true});
  const uint64_t want_scale = encode(DataType::f16(), 8.0 / 15.0);
  for (size_t i = 0; i < q.scales.size(); ++i) {
    EXPECT_EQ(q.scales[i], want_scale);
    EXPECT_EQ(decode(DataType::f16(), q.zeros[i]), 6.0);
  }
  expect_within_bound(w, q);
  // The symmetric-less unsigned path would lose every negative weight; the zero point keeps them.
  const std::vector<double> back = dequantize(q);
  EXPECT_NEAR(back[0], -3.0, decode(DataType::f16(), want_scale) / 2);
}

TEST(QuantQuantize, UnsignedWithoutZeroPointClampsNegativesToZero) {
  const std::vector<float> w = {-1.0f, 3.0f, 1.5f, -0.1f};
  const QuantizedWeight q = quantize(w, 4, 1, {DataType::uint(2), 4});
  EXPECT_EQ(decode(DataType::f16(), q.scales[0]), 1.0);         // max 3 over u2's 3
  EXPECT_EQ(dequantize(q), (std::vector<double>{0, 3, 2, 0}));  // 1.5 ties to 2
}

TEST(QuantQuantize, ScaleGuards) {
  std::vector<float> w(64, 0.0f);
  QuantizedWeight q = quantize(w, 32, 2, {DataType::int_(4), 32});
  EXPECT_EQ(decode(DataType::f16(), q.scales[0]), 1.0);  // all-zero group
  EXPECT_EQ(dequantize(q), std::vector<double>(64, 0.0));

  std::fill(w.begin(), w.end(), 1e-12f);  // 1e-12 / 7 underflows f16
  q = quantize(w, 32, 2, {DataType::int_(4), 32});
  EXPECT_EQ(decode(DataType::f16(), q.scales[0]), DataType::f16().smallest_subnormal());

  std::fill(w.begin(), w.end(), 1e9f);  // 1e9 / 7 overflows f16: largest finite, weights saturate
  q = quantize(w, 32, 2, {DataType::int_(4), 32});
  EXPECT_EQ(decode(DataType::f16(), q.scales[0]), 65504.0);
  EXPECT_EQ(dequantize(q)[0], 7 * 65504.0);
  q = quantize(w, 32, 2, {DataType::int_(4), 32, DataType::bf16()});  // bf16 has the range for it
  EXPECT_NEAR(dequantize(q)[0], 1e9, 1e9 / 256);
}

TEST(QuantQuantize, HalfTypesPassThroughWithUnitScales) {
  const std::vector<float> w = random_weights(9, 32, 2);
  for (DataType t : {DataType::f16(), DataType::bf16()}) {
    const QuantizedWeight q = quantize(w, 32, 2, {t, 32, DataType::bf16()});
    for (uint16_t s : q.scales) EXPECT_EQ(decode(DataType::bf16(), s), 1.0);
    const std::vector<double> back = dequantize(q);
    for (size_t i = 0; i < w.size(); ++i)
      EXPECT_EQ(back[i], decode(t, encode(t, w[i]))) << t.name() << " " << i;
  }
}

void expect_error(const std::vector<float>& w, int64_t k, int64_t n, const QuantSpec& spec,
                  const std::string& msg) {
  try {
    quantize(w, k, n, spec);
    ADD_FAILURE() << "no error, expected: " << msg;
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), msg);
  }
}

TEST(QuantQuantize, ErrorsNameTheConcreteValues) {
  const std::vector<float> w100(100 * 2, 1.0f), w256(256 * 2, 1.0f);
  expect_error(w100, 100, 2, {DataType::int_(4), 64}, "K=100 is not a multiple of the group size 64");
  expect_error(w256, 256, 2, {DataType::int_(4), 48}, "group size 48 is not 32, 64, 128 or K=256");
  expect_error(
      w256, 256, 2, {DataType::int_(16), 64},
      "cannot quantize weights to i16: the weight type must be an integer or float of at most 8 bits, or "
      "f16 or bf16");
  expect_error(
      w256, 256, 2, {DataType::f32(), 64},
      "cannot quantize weights to f32: the weight type must be an integer or float of at most 8 bits, or "
      "f16 or bf16");
  expect_error(
      w256, 256, 2, {DataType::boolean(), 64},
      "cannot quantize weights to bool: the weight type must be an integer or float of at most 8 bits, or "
      "f16 or bf16");
  expect_error(w256, 256, 2, {DataType::int_(4), 64, DataType::f16(), true},
               "zero points need an unsigned integer weight type, got i4");
  expect_error(w256, 256, 2, {DataType::f8e4m3(), 64, DataType::f16(), true},
               "zero points need an unsigned integer weight type, got f8e4m3");
  expect_error(w256, 256, 2, {DataType::int_(4), 64, DataType::f32()},
               "the scale type must be f16 or bf16, got f32");
  expect_error(w256, 256, 3, {DataType::int_(4), 64},
               "the weights hold 512 values, expected K*N = 256*3 = 768");
  expect_error({}, 0, 2, {DataType::int_(4), 64}, "K and N must be positive, got K=0 N=2");
  std::vector<float> bad = w256;
  bad[5] = std::nanf("");
  expect_error(bad, 256, 2, {DataType::int_(4), 64}, "weight (2, 1) is not finite: nan");
}

}  // namespace
}  // namespace tilevm::ops
