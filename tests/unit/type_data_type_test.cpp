// DataType: names (parse/print for every legal type, exact error messages), properties and ranges.
#include "tilevm/type/data_type.h"

#include <cfloat>
#include <cmath>
#include <set>
#include <string>
#include <unordered_set>

#include <gtest/gtest.h>

#include "expect_error.h"
#include "tilevm/support/error.h"

namespace tilevm {
namespace {

// The message of the tilevm::Error that parse throws, or "" when it accepts the name.
std::string parse_error(std::string_view name) {
  try {
    DataType::parse(name);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(DataTypeName, EveryLegalTypeRoundTripsAndNamesAreDistinct) {
  const std::vector<DataType> types = all_data_types();
  // bool, 11 widths of i and of u, 1+2+...+6 low-bit float splits, 4 IEEE floats.
  EXPECT_EQ(types.size(), 1u + 11 + 11 + 21 + 4);
  std::set<std::string> names;
  std::unordered_set<DataType> hashed(types.begin(), types.end());
  EXPECT_EQ(hashed.size(), types.size());
  for (DataType t : types) {
    EXPECT_EQ(DataType::parse(t.name()), t) << t.name();
    EXPECT_TRUE(names.insert(t.name()).second) << t.name();
  }
}

TEST(DataTypeName, EveryLowBitFloatSplitIsAccepted) {
  // Written independently of all_data_types: every string f<b>e<E>m<M> with small numbers, legal or not.
  int legal = 0;
  for (int b = 0; b <= 10; ++b) {
    for (int e = 0; e <= 10; ++e) {
      for (int m = 0; m <= 10; ++m) {
        const std::string name = "f" + std::to_string(b) + "e" + std::to_string(e) + "m" + std::to_string(m);
        const bool ok = b >= 3 && b <= 8 && e >= 1 && m >= 1 && b == 1 + e + m;
        EXPECT_EQ(parse_error(name).empty(), ok) << name;
        if (!ok) continue;
        ++legal;
        const DataType t = DataType::parse(name);
        EXPECT_EQ(t.name(), name);
        EXPECT_EQ(t.bits(), b);
        EXPECT_EQ(t.exponent_bits(), e);
        EXPECT_EQ(t.mantissa_bits(), m);
        EXPECT_EQ(t.bias(), (1 << (e - 1)) - 1);
        EXPECT_EQ(t, DataType::float_(e, m));
      }
    }
  }
  EXPECT_EQ(legal, 21);
}

TEST(DataTypeName, IntegerWidths) {
  for (int b = 0; b <= 70; ++b) {
    const bool ok = (b >= 1 && b <= 8) || b == 16 || b == 32 || b == 64;
    for (char head : {'i', 'u'}) {
      const std::string name = head + std::to_string(b);
      ASSERT_EQ(parse_error(name).empty(), ok) << name;
      if (!ok) continue;
      const DataType t = DataType::parse(name);
      EXPECT_EQ(t.bits(), b);
      EXPECT_EQ(t.kind(), head == 'i' ? TypeKind::SignedInt : TypeKind::UnsignedInt);
      EXPECT_EQ(t.name(), name);
    }
  }
}

TEST(DataTypeName, IeeeAndBoolNames) {
  EXPECT_EQ(DataType::parse("f16"), DataType::float_(5, 10));
  EXPECT_EQ(DataType::parse("bf16"), DataType::float_(8, 7));
  EXPECT_EQ(DataType::parse("f32"), DataType::float_(8, 23));
  EXPECT_EQ(DataType::parse("f64"), DataType::float_(11, 52));
  EXPECT_EQ(DataType::parse("bool"), DataType::boolean());
  EXPECT_EQ(DataType::float_(8, 7).name(), "bf16");
  EXPECT_EQ(DataType::f16().name(), "f16");
}

TEST(DataTypeName, ErrorsNamePositionAndExpectation) {
  EXPECT_EQ(parse_error("f9e4m3"),
            "invalid data type 'f9e4m3': at position 1: a low-bit float has 3 to 8 bits, got 9");
  EXPECT_EQ(
      parse_error(""),
      "invalid data type '': at position 0: expected a type name such as i8, u4, f8e4m3, f16, bf16 or bool");
  EXPECT_EQ(parse_error("x8"),
            "invalid data type 'x8': at position 0: expected 'i', 'u', 'f', 'bf16' or 'bool', got 'x'");
  EXPECT_EQ(parse_error("i9"),
            "invalid data type 'i9': at position 1: an integer has 1 to 8, 16, 32 or 64 bits, got 9");
  EXPECT_EQ(parse_error("u"),
            "invalid data type 'u': at position 1: expected a bit width after 'u', got the end of the name");
  EXPECT_EQ(parse_error("i8 "), "invalid data type 'i8 ': at position 2: unexpected ' ' after the type name");
  EXPECT_EQ(parse_error("i08"),
            "invalid data type 'i08': at position 1: expected a number without leading zeros");
  EXPECT_EQ(parse_error("f8e4m2"),
            "invalid data type 'f8e4m2': at position 1: the width must be 1 + E + M = 7, got 8");
  EXPECT_EQ(parse_error("f8e0m7"),
            "invalid data type 'f8e0m7': at position 3: a float has at least 1 exponent bit, got 0");
  EXPECT_EQ(parse_error("f8e7m0"),
            "invalid data type 'f8e7m0': at position 5: a low-bit float has at least 1 mantissa bit, got 0");
  EXPECT_EQ(parse_error("f8e4"),
            "invalid data type 'f8e4': at position 4: expected 'm' and the mantissa bits (a low-bit float is "
            "f<b>e<E>m<M>), got the end of the name");
  EXPECT_EQ(parse_error("f8"),
            "invalid data type 'f8': at position 2: expected 'e' and the exponent bits (a low-bit float is "
            "f<b>e<E>m<M>)");
  EXPECT_EQ(
      parse_error("f12"),
      "invalid data type 'f12': at position 1: a float has 3 to 8 bits (f<b>e<E>m<M>) or is f16, f32 or f64, "
      "got 12");
  EXPECT_EQ(parse_error("f16e5m10"),
            "invalid data type 'f16e5m10': at position 3: f16 is IEEE binary16 and takes no "
            "exponent/mantissa split; "
            "write 'f16'");
  EXPECT_EQ(parse_error("f32x"), "invalid data type 'f32x': at position 3: unexpected 'x' after 'f32'");
  EXPECT_EQ(parse_error("bf8"), "invalid data type 'bf8': at position 0: expected 'bool' or 'bf16'");
  EXPECT_EQ(parse_error("i\n8"),
            "invalid data type 'i\\x0a8': at position 1: expected a bit width after 'i', got byte 0x0a");
  EXPECT_EQ(parse_error("i99999999999999999999"),
            "invalid data type 'i99999999999999999999': at position 1: an integer has 1 to 8, 16, 32 or 64 "
            "bits, got "
            "99999999999999999999");
  // Every error is one line.
  for (const char* bad : {"F16", "f", "fe4m3", "f8e4m3m", "i-1", "I8", "bool8", "f8e4m3 ", " f16", "i\n8"}) {
    const std::string message = parse_error(bad);
    EXPECT_FALSE(message.empty()) << bad;
    EXPECT_EQ(message.find('\n'), std::string::npos) << bad;
  }
}

TEST(DataTypeFactory, RejectsIllegalWidthsAndSplits) {
  expect_error([&] { DataType::int_(9); }, "an integer has 1 to 8, 16, 32 or 64 bits, got 9");
  expect_error([&] { DataType::uint(0); }, "an integer has 1 to 8, 16, 32 or 64 bits, got 0");
  expect_error([&] { DataType::float_(4, 4); }, "no float has 4 exponent and 4 mantissa bits");
  expect_error([&] { DataType::float_(0, 2); }, "no float has 0 exponent and 2 mantissa bits");
  expect_error([&] { DataType::float_(5, 11); }, "no float has 5 exponent and 11 mantissa bits");
  EXPECT_EQ(DataType::int_(32), DataType::i32());
  EXPECT_EQ(DataType::uint(8), DataType::u8());
}

TEST(DataTypeProperties, FloatSpecialsFollowSection2) {
  for (DataType t : all_data_types()) {
    if (!t.is_float()) {
      EXPECT_FALSE(t.has_nan());
      continue;
    }
    FloatSpecials expected = FloatSpecials::None;
    if (t.bits() > 8 || t.exponent_bits() >= 5) expected = FloatSpecials::InfNan;
    if (t.name() == "f8e4m3") expected = FloatSpecials::NanOnly;
    EXPECT_EQ(t.float_specials(), expected) << t.name();
  }
  EXPECT_TRUE(DataType::parse("f7e5m1").has_inf());
  EXPECT_FALSE(DataType::parse("f7e4m2").has_nan());
}

TEST(DataTypeProperties, Ranges) {
  EXPECT_EQ(DataType::f8e4m3().max_value(), 448);
  EXPECT_EQ(DataType::f8e4m3().max_code(), 0x7eu);
  EXPECT_EQ(DataType::f8e4m3().nan_code(), 0x7fu);
  EXPECT_EQ(DataType::f8e5m2().max_value(), 57344);
  EXPECT_EQ(DataType::f8e5m2().inf_code(true), 0xfcu);
  EXPECT_EQ(DataType::f8e5m2().nan_code(), 0x7eu);
  EXPECT_EQ(DataType::parse("f4e2m1").max_value(), 6);
  EXPECT_EQ(DataType::parse("f4e2m1").smallest_subnormal(), 0.5);
  EXPECT_EQ(DataType::parse("f6e3m2").max_value(), 28);
  EXPECT_EQ(DataType::parse("f6e2m3").max_value(), 7.5);
  EXPECT_EQ(DataType::parse("f3e1m1").max_value(), 3);
  EXPECT_EQ(DataType::parse("f3e1m1").smallest_subnormal(), 1);
  EXPECT_EQ(DataType::parse("f7e5m1").max_value(), 49152);
  EXPECT_EQ(DataType::f16().max_value(), 65504);
  EXPECT_EQ(DataType::f16().smallest_subnormal(), std::ldexp(1.0, -24));
  EXPECT_EQ(DataType::f16().nan_code(), 0x7e00u);
  EXPECT_EQ(DataType::bf16().max_value(), 3.3895313892515355e38);
  EXPECT_EQ(DataType::bf16().nan_code(), 0x7fc0u);
  EXPECT_EQ(DataType::f32().max_value(), FLT_MAX);
  EXPECT_EQ(DataType::f32().smallest_subnormal(), std::ldexp(1.0, -149));
  EXPECT_EQ(DataType::f64().max_value(), DBL_MAX);
  EXPECT_EQ(DataType::f64().smallest_normal(), DBL_MIN);
  EXPECT_EQ(DataType::f8e4m3().min_value(), -448);
  EXPECT_EQ(DataType::parse("i4").min_value(), -8);
  EXPECT_EQ(DataType::parse("i4").max_value(), 7);
  EXPECT_EQ(DataType::parse("u3").max_value(), 7);
  EXPECT_EQ(DataType::i64().int_min(), INT64_MIN);
  EXPECT_EQ(DataType::i64().int_max(), uint64_t{INT64_MAX});
  EXPECT_EQ(DataType::u64().int_max(), UINT64_MAX);
  EXPECT_EQ(DataType::boolean().int_max(), 1u);
  EXPECT_EQ(DataType::boolean().bits(), 8);
  EXPECT_EQ(DataType::boolean().storage_bytes(), 1);
  EXPECT_EQ(DataType::bf16().storage_bytes(), 2);
  EXPECT_TRUE(DataType::parse("u4").is_sub_byte());
  EXPECT_TRUE(DataType::i8().is_signed());
  EXPECT_FALSE(DataType::u8().is_signed());
  EXPECT_TRUE(DataType::u8().is_integer());
  EXPECT_FALSE(DataType::boolean().is_integer());
  EXPECT_EQ(to_string(DataType::f16().kind()), "float");
}

}  // namespace
}  // namespace tilevm
