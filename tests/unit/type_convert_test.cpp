// Conversion of the wide types: f16 and bf16 over all 65,536 codes against independent formulas, f32/f64 and
// wide-integer spot checks, exact cast_code between integers and into narrow floats, value formatting.
#include "tilevm/type/convert.h"

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include <gtest/gtest.h>

namespace tilevm {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// IEEE binary16 from its fields, written with ldexp on the 11-bit significand.
double reference_f16(uint32_t code) {
  const int e = (code >> 10) & 0x1f;
  const int m = code & 0x3ff;
  const double sign = (code & 0x8000) ? -1.0 : 1.0;
  if (e == 0x1f) return m ? kNan : sign * kInf;
  if (e == 0) return sign * std::ldexp(m, -24);
  return sign * std::ldexp(1024 + m, e - 25);
}

// bfloat16 is the top half of a binary32.
double reference_bf16(uint32_t code) {
  return std::bit_cast<float>(code << 16);
}

// The usual bit trick for f32 -> bf16 round to nearest even (non-NaN input whose result is finite).
uint32_t reference_to_bf16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  return (bits + 0x7fff + ((bits >> 16) & 1)) >> 16;
}

void check_sixteen_bit_type(DataType t, double (*reference)(uint32_t)) {
  int nans = 0;
  for (uint32_t c = 0; c < 65536; ++c) {
    const double expected = reference(c);
    const double value = decode(t, c);
    if (std::isnan(expected)) {
      ++nans;
      ASSERT_TRUE(std::isnan(value)) << t.name() << " " << c;
      ASSERT_TRUE(is_nan_code(t, c));
      ASSERT_EQ(encode(t, value), t.nan_code());
      continue;
    }
    ASSERT_EQ(value, expected) << t.name() << " " << c;
    ASSERT_EQ(std::signbit(value), std::signbit(expected));
    ASSERT_EQ(encode(t, value), c) << t.name() << " " << c;
    ASSERT_EQ(is_inf_code(t, c), std::isinf(expected));
    // Midpoints between neighbouring finite magnitudes round to the even code.
    if ((c & 0x8000) == 0 && c < t.max_code()) {
      const double mid = (value + reference(c + 1)) / 2;
      const uint32_t even = (c % 2 == 0) ? c : c + 1;
      ASSERT_EQ(encode(t, mid), even) << t.name() << " " << c;
      ASSERT_EQ(encode(t, -mid), 0x8000 | even) << t.name() << " " << c;
      ASSERT_EQ(encode(t, std::nextafter(mid, kInf)), c + 1) << t.name() << " " << c;
      ASSERT_EQ(encode(t, std::nextafter(mid, -kInf)), c) << t.name() << " " << c;
    }
  }
  EXPECT_EQ(nans, 2 * ((1 << t.mantissa_bits()) - 1));
}

TEST(ConvertSixteenBit, F16AllCodes) {
  check_sixteen_bit_type(DataType::f16(), reference_f16);
}

TEST(ConvertSixteenBit, Bf16AllCodes) {
  check_sixteen_bit_type(DataType::bf16(), reference_bf16);
}

TEST(ConvertSixteenBit, Bf16MatchesBitTrickOnRandomF32) {
  std::mt19937 random(12345);
  for (int i = 0; i < 1000000; ++i) {
    const float value = std::bit_cast<float>(static_cast<uint32_t>(random()));
    if (std::isnan(value) || std::fabs(value) > DataType::bf16().max_value()) continue;
    const uint32_t expected = reference_to_bf16(value);
    if ((expected & 0x7fff) == 0x7f80) continue;  // rounds past max: the trick gives inf, Cast saturates
    ASSERT_EQ(encode(DataType::bf16(), value), expected) << value;
  }
}

TEST(ConvertSixteenBit, Saturation) {
  EXPECT_EQ(encode(DataType::f16(), 65520), 0x7bffu);  // IEEE rounds this to inf
  EXPECT_EQ(encode(DataType::f16(), 1e6), 0x7bffu);
  EXPECT_EQ(encode(DataType::f16(), -1e6), 0xfbffu);
  EXPECT_EQ(encode(DataType::f16(), kInf), 0x7c00u);
  EXPECT_EQ(encode(DataType::f16(), -kInf), 0xfc00u);
  EXPECT_EQ(encode(DataType::f16(), kNan), 0x7e00u);
  EXPECT_EQ(encode(DataType::bf16(), 1e39), 0x7f7fu);
  EXPECT_EQ(encode(DataType::bf16(), 1e-45), 0x0000u);
}

TEST(ConvertWide, F32AndF64) {
  const DataType f32 = DataType::f32();
  EXPECT_EQ(encode(f32, 1.0), 0x3f800000u);
  EXPECT_EQ(encode(f32, 0.1), std::bit_cast<uint32_t>(0.1f));
  EXPECT_EQ(encode(f32, 1e300), std::bit_cast<uint32_t>(FLT_MAX));
  EXPECT_EQ(encode(f32, -1e300), std::bit_cast<uint32_t>(-FLT_MAX));
  EXPECT_EQ(encode(f32, kInf), 0x7f800000u);
  EXPECT_EQ(encode(f32, kNan), 0x7fc00000u);
  EXPECT_EQ(encode(f32, 1e-46), 0u);
  EXPECT_EQ(encode(f32, -1e-46), 0x80000000u);
  EXPECT_EQ(encode(f32, std::ldexp(1.0, -149)), 1u);
  EXPECT_EQ(encode(f32, 1 + std::ldexp(1.0, -24)), 0x3f800000u);  // tie to even
  EXPECT_EQ(encode(f32, 1 + 3 * std::ldexp(1.0, -24)), 0x3f800002u);
  EXPECT_EQ(decode(f32, 0x40490fdb), static_cast<double>(3.14159274101257324f));
  EXPECT_TRUE(std::isnan(decode(f32, 0x7fc00001)));
  EXPECT_TRUE(is_nan_code(f32, 0xffc00000));
  EXPECT_TRUE(is_inf_code(f32, 0xff800000));
  const DataType f64 = DataType::f64();
  EXPECT_EQ(decode(f64, encode(f64, 0.1)), 0.1);
  EXPECT_EQ(encode(f64, kNan), 0x7ff8000000000000u);
  EXPECT_EQ(encode(f64, -0.0), 0x8000000000000000u);
}

TEST(ConvertWide, WideIntegers) {
  EXPECT_EQ(encode(DataType::i64(), 0x1p63), uint64_t{INT64_MAX});
  EXPECT_EQ(encode(DataType::i64(), -0x1p63), 0x8000000000000000u);
  EXPECT_EQ(encode(DataType::i64(), -1e30), 0x8000000000000000u);
  EXPECT_EQ(encode(DataType::i64(), -3.5), static_cast<uint64_t>(int64_t{-4}));
  EXPECT_EQ(encode(DataType::i64(), -2.5), static_cast<uint64_t>(int64_t{-2}));
  EXPECT_EQ(encode(DataType::u64(), 0x1p64), UINT64_MAX);
  EXPECT_EQ(encode(DataType::u64(), 0x1.fffffffffffffp63), 0xfffffffffffff800u);
  EXPECT_EQ(encode(DataType::u64(), -0.7), 0u);
  EXPECT_EQ(encode(DataType::i32(), 2147483647.6), 0x7fffffffu);
  EXPECT_EQ(encode(DataType::i32(), -2147483648.4), 0x80000000u);
  EXPECT_EQ(encode(DataType::i32(), kNan), 0u);
  EXPECT_EQ(decode(DataType::i32(), 0xffffffff), -1);
  EXPECT_EQ(decode(DataType::i16(), 0x8000), -32768);
  EXPECT_EQ(sign_extend(0xf, 4), -1);
  EXPECT_EQ(sign_extend(0x7, 4), 7);
  EXPECT_EQ(sign_extend(0x8000000000000000u, 64), INT64_MIN);
}

TEST(CastCode, IntegersClampExactly) {
  const DataType i4 = DataType::int_(4), i2 = DataType::int_(2), i64 = DataType::i64(), u64 = DataType::u64();
  EXPECT_EQ(cast_code(i64, DataType::i32(), uint64_t{INT64_MAX}), 0x7fffffffu);
  EXPECT_EQ(cast_code(i64, DataType::i32(), static_cast<uint64_t>(int64_t{-5})), 0xfffffffbu);
  EXPECT_EQ(cast_code(u64, i64, UINT64_MAX), uint64_t{INT64_MAX});
  EXPECT_EQ(cast_code(i64, u64, (uint64_t{1} << 62) + 1),
            (uint64_t{1} << 62) + 1);  // beyond double precision
  EXPECT_EQ(cast_code(i64, u64, static_cast<uint64_t>(INT64_MIN)), 0u);
  EXPECT_EQ(cast_code(DataType::i8(), DataType::u8(), 0xff), 0u);
  EXPECT_EQ(cast_code(DataType::u8(), DataType::i8(), 200), 127u);
  EXPECT_EQ(cast_code(i4, i2, 0x8), 0x2u);  // -8 clamps to -2
  EXPECT_EQ(cast_code(i4, i2, 0x1), 0x1u);
  EXPECT_EQ(cast_code(i4, DataType::boolean(), 0x8), 1u);
  EXPECT_EQ(cast_code(DataType::boolean(), DataType::i32(), 1), 1u);
  EXPECT_EQ(cast_code(DataType::boolean(), DataType::f16(), 1), 0x3c00u);
  EXPECT_EQ(cast_code(i64, DataType::i16(), static_cast<uint64_t>(INT64_MIN)), 0x8000u);
}

TEST(CastCode, WideIntegersToFloatsRoundOnce) {
  // 2^54 + 2^30 + 1 to f32: through double it would first become the tie 2^54 + 2^30 and then 2^54.
  const uint64_t tricky = (uint64_t{1} << 54) + (uint64_t{1} << 30) + 1;
  EXPECT_EQ(cast_code(DataType::u64(), DataType::f32(), tricky), std::bit_cast<uint32_t>(0x1p54f + 0x1p31f));
  std::mt19937_64 random(99);
  for (int i = 0; i < 200000; ++i) {
    const uint64_t bits = random() >> (random() % 64);
    const auto value = static_cast<int64_t>(random() % 2 ? bits : ~bits);
    ASSERT_EQ(cast_code(DataType::i64(), DataType::f32(), static_cast<uint64_t>(value)),
              std::bit_cast<uint32_t>(static_cast<float>(value)))
        << value;
    ASSERT_EQ(cast_code(DataType::u64(), DataType::f32(), bits),
              std::bit_cast<uint32_t>(static_cast<float>(bits)))
        << bits;
    ASSERT_EQ(cast_code(DataType::i64(), DataType::f64(), static_cast<uint64_t>(value)),
              std::bit_cast<uint64_t>(static_cast<double>(value)));
  }
}

TEST(CastCode, FloatsAndSpecials) {
  const DataType f16 = DataType::f16(), e4m3 = DataType::f8e4m3(), e2m1 = DataType::parse("f4e2m1");
  EXPECT_EQ(cast_code(e4m3, f16, 0x7f), 0x7e00u);                  // NaN to NaN
  EXPECT_EQ(cast_code(e4m3, e2m1, 0xff), 0x7u);                    // NaN to a type without NaN: +max
  EXPECT_EQ(cast_code(DataType::f32(), e4m3, 0x7f800000), 0x7eu);  // inf saturates
  EXPECT_EQ(cast_code(DataType::f32(), e4m3, 0xff800000), 0xfeu);
  EXPECT_EQ(cast_code(DataType::f8e5m2(), f16, 0xfc), 0xfc00u);  // -inf stays -inf
  EXPECT_EQ(cast_code(f16, DataType::i8(), 0x4100), 2u);         // 2.5 -> 2
  EXPECT_EQ(cast_code(f16, DataType::i8(), 0x4300), 4u);         // 3.5 -> 4
  EXPECT_EQ(cast_code(f16, DataType::i8(), 0xc100), 0xfeu);      // -2.5 -> -2
  EXPECT_EQ(cast_code(f16, DataType::i8(), 0x7e00), 0u);         // NaN -> 0
  EXPECT_EQ(cast_code(f16, DataType::boolean(), 0x7e00), 1u);    // NaN != 0
  EXPECT_EQ(cast_code(f16, DataType::boolean(), 0x8000), 0u);    // -0 == 0
  EXPECT_EQ(cast_code(DataType::f32(), DataType::i32(), std::bit_cast<uint32_t>(1e10f)), 0x7fffffffu);
  EXPECT_EQ(cast_code(DataType::f32(), DataType::u8(), std::bit_cast<uint32_t>(-3.7f)), 0u);
  EXPECT_EQ(cast_code(DataType::bf16(), f16, 0x3f80), 0x3c00u);  // 1.0
}

TEST(FormatValue, ShortestRoundTrip) {
  EXPECT_EQ(format_value(1.0), "1");
  EXPECT_EQ(format_value(-3.0), "-3");
  EXPECT_EQ(format_value(448.0), "448");
  EXPECT_EQ(format_value(57344.0), "57344");
  EXPECT_EQ(format_value(0.5), "0.5");
  EXPECT_EQ(format_value(0.001953125), "0.001953125");
  EXPECT_EQ(format_value(0.1), "0.1");
  EXPECT_EQ(format_value(0.0), "0");
  EXPECT_EQ(format_value(-0.0), "-0");
  EXPECT_EQ(format_value(kInf), "inf");
  EXPECT_EQ(format_value(-kInf), "-inf");
  EXPECT_EQ(format_value(kNan), "nan");
  EXPECT_EQ(format_value(-kNan), "nan");
  for (double v : {1e20, 3.3895313892515355e38, 5.960464477539063e-08, DBL_MAX, DBL_MIN, 123456789.0}) {
    EXPECT_EQ(std::stod(format_value(v)), v) << format_value(v);
  }
}

}  // namespace
}  // namespace tilevm
