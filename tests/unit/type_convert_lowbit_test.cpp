// Exhaustive conversion tests over every code of every type of 8 bits or fewer: decoding against a reference
// written from the formula of docs/language.md section 2, encode(decode(c)) == c, every midpoint between
// neighbouring values rounding to the even code, saturation and NaN.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "tilevm/type/convert.h"
#include "tilevm/type/data_type.h"

namespace tilevm {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

std::vector<DataType> small_types() {
  std::vector<DataType> types;
  for (DataType t : all_data_types()) {
    if (t.bits() <= 8) types.push_back(t);
  }
  return types;
}

std::vector<DataType> small_floats() {
  std::vector<DataType> types;
  for (DataType t : small_types()) {
    if (t.is_float()) types.push_back(t);
  }
  return types;
}

// The value of a low-bit float code computed straight from section 2 with pow; NaN for NaN codes.
double reference_float(int exponent_bits, int mantissa_bits, uint64_t code) {
  const int bits = 1 + exponent_bits + mantissa_bits;
  const bool negative = (code >> (bits - 1)) & 1;
  const int e = static_cast<int>((code >> mantissa_bits) % (1u << exponent_bits));
  const int m = static_cast<int>(code % (1u << mantissa_bits));
  const int all_ones = (1 << exponent_bits) - 1;
  const bool ieee_like = exponent_bits >= 5;
  const bool e4m3fn = exponent_bits == 4 && mantissa_bits == 3;
  if (ieee_like && e == all_ones) return m == 0 ? (negative ? -kInf : kInf) : kNan;
  if (e4m3fn && e == all_ones && m == (1 << mantissa_bits) - 1) return kNan;
  const double bias = std::pow(2.0, exponent_bits - 1) - 1;
  const double fraction = m / std::pow(2.0, mantissa_bits);
  const double magnitude =
      e == 0 ? std::pow(2.0, 1 - bias) * fraction : std::pow(2.0, e - bias) * (1 + fraction);
  return negative ? -magnitude : magnitude;
}

// The value of an integer code: two's complement read as "top bit weighs -2^(b-1)".
double reference_integer(DataType t, uint64_t code) {
  if (t.is_bool()) return code != 0;
  double value = 0;
  for (int i = 0; i < t.bits(); ++i) {
    const double weight = std::pow(2.0, i);
    if ((code >> i) & 1) value += (t.is_signed() && i == t.bits() - 1) ? -weight : weight;
  }
  return value;
}

uint64_t code_count(DataType t) {
  return t.is_bool() ? 2 : uint64_t{1} << t.bits();
}

TEST(ConvertLowBit, DecodeMatchesReferenceForEveryCode) {
  int checked = 0;
  for (DataType t : small_types()) {
    for (uint64_t c = 0; c < code_count(t); ++c, ++checked) {
      const double value = decode(t, c);
      const double expected =
          t.is_float() ? reference_float(t.exponent_bits(), t.mantissa_bits(), c) : reference_integer(t, c);
      if (std::isnan(expected)) {
        EXPECT_TRUE(std::isnan(value) && is_nan_code(t, c)) << t.name() << " code " << c;
        continue;
      }
      EXPECT_EQ(value, expected) << t.name() << " code " << c;
      EXPECT_EQ(std::signbit(value), std::signbit(expected)) << t.name() << " code " << c;  // -0 is -0
      EXPECT_FALSE(is_nan_code(t, c));
      EXPECT_EQ(is_inf_code(t, c), std::isinf(expected));
    }
  }
  EXPECT_EQ(checked, 2 + 2 * (2 + 4 + 8 + 16 + 32 + 64 + 128 + 256) + 8 + 2 * 16 + 3 * 32 + 4 * 64 + 5 * 128 +
                         6 * 256);
}

TEST(ConvertLowBit, EncodeOfDecodeIsIdentity) {
  for (DataType t : small_types()) {
    for (uint64_t c = 0; c < code_count(t); ++c) {
      const uint64_t expected = is_nan_code(t, c) ? t.nan_code() : c;
      EXPECT_EQ(encode(t, decode(t, c)), expected) << t.name() << " code " << c;
      EXPECT_EQ(cast_code(t, t, c), c);
    }
  }
}

// Magnitude codes of a float increase with the value, so neighbours are c and c + 1 for c < max_code.
TEST(ConvertLowBit, MidpointsRoundToEvenCodeAndNeighboursToNearest) {
  for (DataType t : small_floats()) {
    const uint64_t sign = uint64_t{1} << (t.bits() - 1);
    for (uint64_t c = 0; c < t.max_code(); ++c) {
      const double lo = decode(t, c);
      const double hi = decode(t, c + 1);
      ASSERT_LT(lo, hi) << t.name();
      const double mid = (lo + hi) / 2;  // exact: a few bits of precision
      const uint64_t even = (c % 2 == 0) ? c : c + 1;
      EXPECT_EQ(encode(t, mid), even) << t.name() << " between codes " << c << " and " << c + 1;
      EXPECT_EQ(encode(t, -mid), sign | even) << t.name();
      EXPECT_EQ(encode(t, std::nextafter(mid, kInf)), c + 1) << t.name();
      EXPECT_EQ(encode(t, std::nextafter(mid, -kInf)), c) << t.name();
      EXPECT_EQ(encode(t, -std::nextafter(mid, kInf)), sign | (c + 1)) << t.name();
      EXPECT_EQ(encode(t, lo + (hi - lo) / 4), c) << t.name();
      EXPECT_EQ(encode(t, hi - (hi - lo) / 4), c + 1) << t.name();
    }
  }
}

TEST(ConvertLowBit, SaturationInfinityAndNan) {
  for (DataType t : small_floats()) {
    const uint64_t sign = uint64_t{1} << (t.bits() - 1);
    const double max = t.max_value();
    const double gap = max - decode(t, t.max_code() - 1);
    for (double beyond : {std::nextafter(max, kInf), max + gap / 2, max + gap, 2 * max, 1e300,
                          std::numeric_limits<double>::max()}) {
      EXPECT_EQ(encode(t, beyond), t.max_code()) << t.name() << " " << beyond;
      EXPECT_EQ(encode(t, -beyond), sign | t.max_code()) << t.name() << " " << -beyond;
    }
    const uint64_t inf = t.has_inf() ? t.inf_code(false) : t.max_code();
    EXPECT_EQ(encode(t, kInf), inf) << t.name();
    EXPECT_EQ(encode(t, -kInf), sign | inf) << t.name();
    EXPECT_EQ(encode(t, kNan), t.has_nan() ? t.nan_code() : t.max_code()) << t.name();
    EXPECT_EQ(encode(t, -kNan), t.has_nan() ? t.nan_code() : t.max_code()) << t.name();
    // Underflow: half the smallest subnormal is a tie with 0 (even); zero keeps its sign.
    const double tiny = t.smallest_subnormal();
    EXPECT_EQ(encode(t, tiny / 2), 0u) << t.name();
    EXPECT_EQ(encode(t, std::nextafter(tiny / 2, kInf)), 1u) << t.name();
    EXPECT_EQ(encode(t, -tiny / 4), sign) << t.name();
    EXPECT_EQ(encode(t, -0.0), sign) << t.name();
    EXPECT_EQ(encode(t, std::numeric_limits<double>::denorm_min()), 0u) << t.name();
  }
}

TEST(ConvertLowBit, KnownValues) {
  const DataType e2m1 = DataType::parse("f4e2m1");
  const double expected[] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  for (uint64_t c = 0; c < 8; ++c) {
    EXPECT_EQ(decode(e2m1, c), expected[c]);
    EXPECT_EQ(decode(e2m1, c | 8), -expected[c]);
  }
  EXPECT_EQ(encode(e2m1, 5.0), 6u);  // 5 is the midpoint of 4 (code 6) and 6 (code 7): even wins
  EXPECT_EQ(encode(e2m1, 2.5), 4u);  // midpoint of 2 (code 4) and 3 (code 5)
  EXPECT_EQ(encode(e2m1, 0.25), 0u);
  EXPECT_EQ(decode(DataType::f8e4m3(), 0x7e), 448);
  EXPECT_EQ(decode(DataType::f8e4m3(), 0x01), std::ldexp(1.0, -9));
  EXPECT_EQ(encode(DataType::f8e4m3(), 464), 0x7eu);  // the midpoint to the NaN code saturates to 448
  EXPECT_EQ(decode(DataType::f8e5m2(), 0x7b), 57344);
  EXPECT_TRUE(std::isinf(decode(DataType::f8e5m2(), 0x7c)));
  EXPECT_EQ(encode(DataType::f8e5m2(), 61440), 0x7bu);  // IEEE would give inf; Cast saturates
  const DataType e1m1 = DataType::parse("f3e1m1");
  EXPECT_EQ(decode(e1m1, 1), 1);
  EXPECT_EQ(decode(e1m1, 3), 3);
  EXPECT_EQ(decode(e1m1, 7), -3);
}

TEST(ConvertLowBit, IntegersRoundHalfEvenAndClamp) {
  for (DataType t : small_types()) {
    if (t.is_float()) continue;
    const double lo = t.is_bool() ? 0 : t.min_value();
    const double hi = t.is_bool() ? 1 : t.max_value();
    if (!t.is_bool()) {
      for (double v = lo; v < hi; ++v) {
        const double even = std::fmod(v, 2) == 0 ? v : v + 1;
        EXPECT_EQ(decode(t, encode(t, v + 0.5)), even) << t.name() << " " << v + 0.5;
        EXPECT_EQ(decode(t, encode(t, v + 0.25)), v) << t.name();
        EXPECT_EQ(decode(t, encode(t, v + 0.75)), v + 1) << t.name();
      }
      EXPECT_EQ(decode(t, encode(t, hi + 0.5)), hi) << t.name();
      EXPECT_EQ(decode(t, encode(t, hi + 1000)), hi) << t.name();
      EXPECT_EQ(decode(t, encode(t, lo - 0.5)), lo) << t.name();
      EXPECT_EQ(decode(t, encode(t, lo - 1000)), lo) << t.name();
      EXPECT_EQ(decode(t, encode(t, kInf)), hi) << t.name();
      EXPECT_EQ(decode(t, encode(t, -kInf)), lo) << t.name();
      EXPECT_EQ(encode(t, kNan), 0u) << t.name();
    } else {
      EXPECT_EQ(encode(t, 0.0), 0u);
      EXPECT_EQ(encode(t, -0.0), 0u);
      EXPECT_EQ(encode(t, 0.25), 1u);
      EXPECT_EQ(encode(t, -3), 1u);
      EXPECT_EQ(encode(t, kNan), 1u);
      EXPECT_EQ(decode(t, 2), 1);  // a stray nonzero byte reads as true
    }
  }
}

}  // namespace
}  // namespace tilevm
